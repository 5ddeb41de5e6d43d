package mutants

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/sim/check"
)

func TestStatsAndTable(t *testing.T) {
	rows := []Row{
		{Name: "b", Class: "x", Caught: true, Invariant: "S1", Seed: 3, Seconds: 2, Tried: Seeds, Catches: 100, Invariants: map[string]int{"S1": 100, "L1": 7}, Property: "caught", PropertyCheck: 4},
		{Name: "a", Class: "x", Caught: true, Invariant: "S4", Seed: 1, Seconds: 1, Tried: Seeds, Catches: 19, Property: "missed"},
		{Name: "c", Class: "w", Caught: true, Invariant: "W1", Seed: 9, Seconds: 7, Tried: Seeds, Catches: 20},
		{Name: "d", Class: "w", Caught: false, Tried: Seeds, Seconds: 0},
	}
	median, most, survivors, under := Stats(rows)
	if median != 2 || most != 7 || len(survivors) != 1 || survivors[0] != "d" || len(under) != 1 || under[0] != "a" {
		t.Fatalf("Stats = %v, %v, %v, %v; want 2, 7, [d], [a]", median, most, survivors, under)
	}
	tab := Table(rows)
	for _, want := range []string{
		"| `c` | w | W1 | 20 (10%) | 9 | 7.0 | — |  |",
		"| `b` | x | S1 100, L1 7 | 100 (50%) | 3 | 2.0 | caught (check 4) |  |",
		"| `a` | x | S4 | 19 (10%) | 1 | 1.0 | missed |  |",
		"| `d` | w | not caught | 0 | — | — | — |  |",
		"4 planted bugs: 3 caught within seeds 1-200, 2 of them by at least 10% of the seeds; 1 of 2 caught by the property suite",
		"median 2.0 s, max 7.0 s", "not caught: d", "under 10%: a",
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	if strings.Index(tab, "`c`") > strings.Index(tab, "`a`") {
		t.Errorf("rows not sorted by class, then name:\n%s", tab)
	}
}

// TestSweep: every seed runs once, whatever the parallelism; the rate,
// the first catch and its time (the seeds before it, one at a time) come
// from the seeds' results in seed order.
func TestSweep(t *testing.T) {
	for _, par := range []int{1, 4} {
		row := Sweep("x", "sim", Seeds, par, func(seed uint64) []check.Violation {
			switch {
			case seed%50 == 7:
				return []check.Violation{{Invariant: "S1"}, {Invariant: "S1"}, {Invariant: "L1"}}
			case seed%50 == 30:
				return []check.Violation{{Invariant: "S4"}}
			}
			return nil
		}, nil)
		if row.Tried != Seeds || row.Catches != 8 || row.Seed != 7 || row.Invariant != "L1 S1" || !row.Caught ||
			row.Invariants["S1"] != 4 || row.Invariants["S4"] != 4 || row.Invariants["L1"] != 4 {
			t.Errorf("parallel %d: %+v", par, row)
		}
	}
	if row := Sweep("y", "sim", Seeds, 2, func(uint64) []check.Violation { return nil }, nil); row.Caught || row.Catches != 0 || row.Seconds != 0 {
		t.Errorf("never caught: %+v", row)
	}
}

// TestMerge: a property-suite row adds its verdict to the simulator's row
// of the same bug; one for a bug no simulator ran is dropped.
func TestMerge(t *testing.T) {
	got := Merge([]Row{{Name: "a", Runner: "sim", Catches: 3}, {Name: "a", Runner: "property", Property: "caught", PropertyCheck: 2}, {Name: "z", Runner: "property", Property: "missed"}})
	if len(got) != 1 || got[0].Catches != 3 || got[0].Property != "caught" || got[0].PropertyCheck != 2 || got[0].Runner != "sim" {
		t.Fatalf("Merge = %+v", got)
	}
	// a later run of a bug replaces the earlier row, once
	got = Merge([]Row{{Name: "t", Runner: "test", Caught: false}, {Name: "b", Runner: "sim"}, {Name: "t", Runner: "test", Caught: true}})
	if len(got) != 2 || got[0].Name != "t" || !got[0].Caught || got[1].Name != "b" {
		t.Fatalf("Merge of a re-run = %+v", got)
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
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], rows[0]) {
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
	doc, err := FindDoc(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Begin + "\n" + Table(rows) + End
	if !strings.Contains(string(b), want) {
		t.Fatalf("%s does not hold the table of reports/mutants.json between %q and %q; run make mutants (or go run ./internal/mutants/report reports/mutants.json)", doc, Begin, End)
	}
}
