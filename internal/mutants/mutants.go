// Package mutants records how the simulators catch the planted bugs (make
// mutants): the tests of package sim (the default swarm) and sim/driversim
// (the driver simulation's default mix) each write one Row per planted
// bug, and the report command (internal/mutants/report) merges them into
// reports/mutants.json and the table in docs/figures.md (Doc).
package mutants

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/sim/check"
)

// Seeds is how many seeds of its default mix each planted bug gets: the
// bar is a catch within them.
const Seeds = 64

// Row is one planted bug and its first catch.
type Row struct {
	Name   string `json:"name"`
	Class  string `json:"class"`
	Caught bool   `json:"caught"`
	// Invariant lists the invariants the first catching seed broke
	// (space-separated, sorted).
	Invariant string `json:"invariant"`
	// Seed is the first seed that caught it (0: none within Tried).
	Seed  uint64 `json:"seed"`
	Tried uint64 `json:"seeds_tried"`
	// Seconds is the wall time from the first seed to the end of the
	// catching one, seeds run one at a time.
	Seconds float64 `json:"seconds"`
	// Runner is what ran it: "sim" (simrun's default swarm) or
	// "driversim" (the production driver in virtual time).
	Runner string `json:"runner"`
	// Catches, for a row of Rate, counts the seeds of 1 to Tried that
	// caught it: its catch rate is Catches/Tried.
	Catches int `json:"catches,omitempty"`
}

// RateSeeds is how many seeds (1 to RateSeeds) Rate runs a planted bug
// on: the target is a catch by at least a tenth of them.
const RateSeeds = 200

// Rate runs seeds 1 to RateSeeds of the planted bug name one at a time,
// every one of them, and returns its Row: the first seed that broke an
// invariant (with the wall time from the first seed to the end of it, as
// Hunt), and how many did (Catches). run and logf are Hunt's.
func Rate(name, runner string, run func(seed uint64) []check.Violation, logf func(format string, args ...any)) Row {
	row := Row{Name: name, Class: Classes[name], Runner: runner, Tried: RateSeeds}
	start := time.Now()
	for seed := uint64(1); seed <= RateSeeds; seed++ {
		vs := run(seed)
		if len(vs) == 0 {
			continue
		}
		row.Catches++
		if row.Caught {
			continue
		}
		var inv []string
		for _, v := range vs {
			inv = append(inv, v.Invariant)
		}
		slices.Sort(inv)
		row.Caught, row.Seed, row.Invariant = true, seed, strings.Join(slices.Compact(inv), " ")
		row.Seconds = time.Since(start).Seconds()
		if logf != nil {
			logf("%s: caught at seed %d after %.1fs: %s", name, seed, row.Seconds, vs[0].String())
		}
	}
	if !row.Caught {
		row.Seconds = time.Since(start).Seconds()
	}
	if logf != nil {
		logf("%s: caught by %d of seeds 1-%d (%.0f%%)", name, row.Catches, RateSeeds, 100*float64(row.Catches)/RateSeeds)
	}
	return row
}

// Hunt runs seeds 1 to Seeds of the planted bug name one at a time until a
// seed breaks an invariant, and returns its Row (Caught false if none did;
// Seconds the wall time to the catch, or of all the seeds). run runs one
// seed and returns the violations it found; logf, if set, is told of the
// catch.
func Hunt(name, runner string, run func(seed uint64) []check.Violation, logf func(format string, args ...any)) Row {
	row := Row{Name: name, Class: Classes[name], Runner: runner}
	start := time.Now()
	for seed := uint64(1); seed <= Seeds && !row.Caught; seed++ {
		vs := run(seed)
		row.Tried = seed
		if len(vs) == 0 {
			continue
		}
		var inv []string
		for _, v := range vs {
			inv = append(inv, v.Invariant)
		}
		slices.Sort(inv)
		row.Caught, row.Seed, row.Invariant = true, seed, strings.Join(slices.Compact(inv), " ")
		if logf != nil {
			logf("%s: caught at seed %d after %.1fs: %s", name, seed, time.Since(start).Seconds(), vs[0].String())
		}
	}
	row.Seconds = time.Since(start).Seconds()
	return row
}

// Classes gives each planted bug (as simrun -list names it) the class of
// fault it belongs to; the numbered ones are the classes of issue 12.
var Classes = map[string]string{
	"unfenced-checkpoint":                    "fencing",
	"unfenced-take":                          "fencing",
	"unfenced-assign":                        "fencing",
	"orphan-children":                        "resharding",
	"ignore-second-parent":                   "resharding",
	"engine:parents-unchecked":               "resharding",
	"skip-on-resume":                         "resume position",
	"engine:resume-after-sequence":           "resume position",
	"engine:reread-not-dropped":              "resume position",
	"engine:compare-sequences-as-strings":    "1 sequence numbers",
	"engine:expiry-by-wall-clock":            "2 clock steps",
	"engine:sync-from-eventual-scan":         "3 eventual consistency",
	"engine:driver-handoff-unchecked":        "4 driver",
	"engine:driver-ack-on-stop":              "4 driver",
	"engine:validity-from-reply":             "5 bounds: lease timing",
	"engine:no-safety-margin":                "5 bounds: lease timing",
	"engine:wait-less-margin":                "5 bounds: lease timing",
	"engine:resolve-ignores-writer":          "5 bounds: unknown outcomes",
	"engine:release-before-final-checkpoint": "6 graceful handoff",
	"engine:steal-acts-at-once":              "lease timing",
	"engine:resubscribe-at-latest":           "fan-out",
	"engine:assigner-takes-over-at-once":     "assignment",
	"engine:handoff-before-release":          "assignment",
	"engine:assigner-early-expiry":           "assignment",
}

// Write writes rows to path as JSON.
func Write(path string, rows []Row) error {
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return fmt.Errorf("mutants: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("mutants: %w", err)
	}
	return nil
}

// Read reads the rows Write wrote to path.
func Read(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mutants: %w", err)
	}
	var rows []Row
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("mutants: %s: %w", path, err)
	}
	return rows, nil
}

// Stats returns the median and the largest time to first catch of the
// caught rows, and the names of the rows not caught.
func Stats(rows []Row) (median, most float64, survivors []string) {
	var secs []float64
	for _, r := range rows {
		if !r.Caught {
			survivors = append(survivors, r.Name)
			continue
		}
		secs = append(secs, r.Seconds)
		most = max(most, r.Seconds)
	}
	slices.Sort(secs)
	switch n := len(secs); {
	case n == 0:
	case n%2 == 1:
		median = secs[n/2]
	default:
		median = (secs[n/2-1] + secs[n/2]) / 2
	}
	return median, most, survivors
}

// Table renders rows as the markdown table of Doc, sorted by class and
// name, with a summary line.
func Table(rows []Row) string {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b Row) int {
		if c := strings.Compare(a.Class, b.Class); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var b strings.Builder
	b.WriteString("| planted bug | class | caught by | first seed | seconds | run |\n|---|---|---|---:|---:|---|\n")
	for _, r := range rows {
		seed, secs, inv := "—", "—", "not caught"
		if r.Caught {
			seed, secs, inv = fmt.Sprint(r.Seed), fmt.Sprintf("%.1f", r.Seconds), r.Invariant
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.Name, r.Class, inv, seed, secs, r.Runner)
	}
	median, most, survivors := Stats(rows)
	fmt.Fprintf(&b, "\n%d planted bugs, %d caught within %d seeds; time to first catch: median %.1f s, max %.1f s",
		len(rows), len(rows)-len(survivors), Seeds, median, most)
	if len(survivors) > 0 {
		fmt.Fprintf(&b, "; not caught: %s", strings.Join(survivors, ", "))
	}
	b.WriteString(".\n")
	return b.String()
}

// Doc is the document, relative to the repository's root, that holds the
// table between Begin and End (the README links to it).
const Doc = "docs/figures.md"

// Markers delimit the table in Doc.
const (
	Begin = "<!-- mutants: make mutants writes this table -->"
	End   = "<!-- /mutants -->"
)

// UpdateDoc replaces the text between Begin and End in the file at path
// with table.
func UpdateDoc(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("mutants: %w", err)
	}
	i, j := bytes.Index(b, []byte(Begin)), bytes.Index(b, []byte(End))
	if i < 0 || j < i {
		return fmt.Errorf("mutants: %s has no %q ... %q section", path, Begin, End)
	}
	out := slices.Concat(b[:i+len(Begin)], []byte("\n"+table), b[j:])
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("mutants: %w", err)
	}
	return nil
}
