package mutants

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatsAndTable(t *testing.T) {
	rows := []Row{
		{Name: "b", Class: "x", Caught: true, Invariant: "S1", Seed: 3, Seconds: 2},
		{Name: "a", Class: "x", Caught: true, Invariant: "S4", Seed: 1, Seconds: 1},
		{Name: "c", Class: "w", Caught: true, Invariant: "W1", Seed: 9, Seconds: 7},
		{Name: "d", Class: "w", Caught: false, Tried: Seeds, Seconds: 30},
	}
	median, most, survivors := Stats(rows)
	if median != 2 || most != 7 || len(survivors) != 1 || survivors[0] != "d" {
		t.Fatalf("Stats = %v, %v, %v; want 2, 7, [d]", median, most, survivors)
	}
	tab := Table(rows)
	for _, want := range []string{"| `c` | w | W1 | 9 | 7.0 |  |", "| `d` | w | not caught | — | — |  |", "4 planted bugs, 3 caught within 64 seeds", "median 2.0 s, max 7.0 s", "not caught: d"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	if strings.Index(tab, "`c`") > strings.Index(tab, "`a`") {
		t.Errorf("rows not sorted by class, then name:\n%s", tab)
	}
}

func TestWriteReadUpdate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rows.json")
	rows := []Row{{Name: "a", Class: "x", Caught: true, Invariant: "S1", Seed: 2, Tried: 2, Seconds: 0.5, Runner: "sim"}}
	if err := Write(p, rows); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil || len(got) != 1 || got[0] != rows[0] {
		t.Fatalf("Read = %v, %v; want %v", got, err, rows)
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("top\n"+Begin+"\nold\n"+End+"\nbottom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateDoc(readme, "new\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readme)
	if want := "top\n" + Begin + "\nnew\n" + End + "\nbottom\n"; string(b) != want {
		t.Fatalf("README = %q, want %q", b, want)
	}
	if err := os.WriteFile(readme, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateDoc(readme, "new\n"); err == nil {
		t.Fatal("a README without the markers was accepted")
	}
}

// TestDocHoldsTheTable checks that the document make mutants rewrites (Doc)
// has the markers and, between them, the table of the rows checked in as
// reports/mutants.json: a table moved, edited by hand or left stale fails.
func TestDocHoldsTheTable(t *testing.T) {
	root := filepath.Join("..", "..")
	rows, err := Read(filepath.Join(root, "reports", "mutants.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, Doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Begin + "\n" + Table(rows) + End
	if !strings.Contains(string(b), want) {
		t.Fatalf("%s does not hold the table of reports/mutants.json between %q and %q; run make mutants (or go run ./internal/mutants/report -doc %s reports/mutants.json)", Doc, Begin, End, Doc)
	}
}
