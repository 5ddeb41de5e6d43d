// Command report merges the rows the mutant runs wrote (make mutants) into
// reports/mutants.json, rewrites the table of planted bugs and their catch
// rates between the markers of the document that holds them (README.md or
// docs/*.md: wherever the table lives) and prints it; it exits 1 if a
// planted bug survived every seed. The property suite's rows (runner
// "property") add its verdict to the simulators' rows.
//
//	go run ./internal/mutants/report -out reports/mutants.json ROWS.json...
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardlease/shardlease/internal/mutants"
)

func main() {
	out := flag.String("out", "reports/mutants.json", "the merged rows")
	doc := flag.String("doc", "", "the document whose table to rewrite, between the markers (default: the one under -root that holds them; - for none)")
	root := flag.String("root", ".", "the repository's root, where -doc is looked for")
	flag.Parse()
	var rows []mutants.Row
	for _, p := range flag.Args() {
		r, err := mutants.Read(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		rows = append(rows, r...)
	}
	rows = mutants.Merge(rows)
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "report: no rows (give the files the mutant runs wrote)")
		os.Exit(2)
	}
	if err := mutants.Write(*out, rows); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	table := mutants.Table(rows)
	if *doc == "" {
		d, err := mutants.FindDoc(*root)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		*doc = filepath.Join(*root, d)
	}
	if *doc != "-" {
		if err := mutants.UpdateDoc(*doc, table); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	fmt.Print(table)
	_, _, survivors, under := mutants.Stats(rows)
	if len(under) > 0 {
		fmt.Fprintf(os.Stderr, "report: %d planted bugs caught by fewer than %.0f%% of seeds 1-%d: %v\n", len(under), 100*mutants.Target, mutants.Seeds, under)
	}
	if len(survivors) > 0 {
		fmt.Fprintf(os.Stderr, "report: %d planted bugs survived: %v\n", len(survivors), survivors)
		os.Exit(1)
	}
}
