// Command report merges the rows the mutant runs wrote (make mutants) into
// reports/mutants.json, rewrites the table of planted bugs caught in docs/figures.md and prints it; it
// exits 1 if a planted bug survived.
//
//	go run ./internal/mutants/report -out reports/mutants.json -doc docs/figures.md ROWS.json...
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/shardlease/shardlease/internal/mutants"
)

func main() {
	out := flag.String("out", "reports/mutants.json", "the merged rows")
	doc := flag.String("doc", mutants.Doc, "the document whose table to rewrite, between the markers (empty: none)")
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
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "report: no rows (give the files the mutant runs wrote)")
		os.Exit(2)
	}
	if err := mutants.Write(*out, rows); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	table := mutants.Table(rows)
	if *doc != "" {
		if err := mutants.UpdateDoc(*doc, table); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	fmt.Print(table)
	if _, _, survivors := mutants.Stats(rows); len(survivors) > 0 {
		fmt.Fprintf(os.Stderr, "report: %d planted bugs survived: %v\n", len(survivors), survivors)
		os.Exit(1)
	}
}
