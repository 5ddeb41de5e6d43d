// Package mutants records how often the simulators catch the planted bugs
// (make mutants): the tests of package sim (the default swarm) and
// sim/driversim (the driver simulation's default mix) each write one Row
// per planted bug, with the seeds of 1 to Seeds that catch it, and package
// scenarios the property suite's verdict; the report command
// (internal/mutants/report) merges them into reports/mutants.json and the
// table between the markers (Doc, or wherever FindDoc finds them).
package mutants

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shardlease/shardlease/sim/check"
)

// Seeds is how many seeds of its default mix each planted bug is run on
// (seeds 1 to Seeds): the catch rate is the fraction of them that break
// an invariant inside the assumptions.
const Seeds = 200

// Target is the catch rate every planted bug should reach on seeds 1 to
// Seeds; the table names those below it.
const Target = 0.10

// Row is one planted bug: how many seeds of its default mix caught it,
// the first, and whether the property suite does.
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
	// Catches counts the seeds (of Tried) that caught it; Invariants
	// counts, per invariant, the seeds that broke it.
	Catches    int            `json:"catches"`
	Invariants map[string]int `json:"invariants,omitempty"`
	// Seconds is the time to the first catch: the wall times of the
	// seeds up to the first catching one, added up as if they ran one at
	// a time (0 when none caught it).
	Seconds float64 `json:"seconds"`
	// Runner is what ran it: "sim" (simrun's default swarm), "driversim"
	// (the production driver in virtual time) or "test" (a named test,
	// Invariant, with the bug planted: package engine's
	// TestTestsCatchPlantedBugs).
	Runner string `json:"runner"`
	// Property is the property suite's verdict (go test ./scenarios/...'s
	// TestProperty, then TestPropertySwarm, with the bug planted):
	// "caught", "missed", or "" when the property path does not run the
	// bug (the driver's); PropertyTest is the test that caught it and
	// PropertyCheck its rapid check that first failed.
	Property      string `json:"property,omitempty"`
	PropertyTest  string `json:"property_test,omitempty"`
	PropertyCheck int    `json:"property_check,omitempty"`
}

// TestOnly reports whether the planted bug name is one that only a named
// test sees (its class starts with "test:"): no run reaches what it
// breaks, so the simulators do not run it; TestTestsCatchPlantedBugs in
// package engine does.
func TestOnly(name string) bool { return strings.HasPrefix(Classes[name], "test:") }

// Rate is the fraction of the seeds tried that caught the bug.
func (r Row) Rate() float64 {
	if r.Tried == 0 {
		return 0
	}
	return float64(r.Catches) / float64(r.Tried)
}

// Sweep runs seeds 1 to seeds of the planted bug name (make mutants gives
// it Seeds), parallel seeds at a time, and returns its Row. run runs one seed and returns the
// violations it found inside the assumptions; logf, if set, is told of
// the first catch.
func Sweep(name, runner string, seeds uint64, parallel int, run func(seed uint64) []check.Violation, logf func(format string, args ...any)) Row {
	type result struct {
		vs   []check.Violation
		secs float64
	}
	res := make([]result, seeds+1)
	todo := make(chan uint64)
	var wg sync.WaitGroup
	for range max(1, parallel) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range todo {
				start := time.Now()
				vs := run(seed)
				res[seed] = result{vs, time.Since(start).Seconds()}
			}
		}()
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		todo <- seed
	}
	close(todo)
	wg.Wait()
	row := Row{Name: name, Class: Classes[name], Runner: runner, Tried: seeds}
	elapsed := 0.0
	for seed := uint64(1); seed <= seeds; seed++ {
		r := res[seed]
		if !row.Caught {
			elapsed += r.secs
		}
		if len(r.vs) == 0 {
			continue
		}
		var inv []string
		for _, v := range r.vs {
			inv = append(inv, v.Invariant)
		}
		slices.Sort(inv)
		inv = slices.Compact(inv)
		if row.Invariants == nil {
			row.Invariants = map[string]int{}
		}
		for _, i := range inv {
			row.Invariants[i]++
		}
		row.Catches++
		if !row.Caught {
			row.Caught, row.Seed, row.Invariant, row.Seconds = true, seed, strings.Join(inv, " "), elapsed
			if logf != nil {
				logf("%s: first caught at seed %d after %.1fs: %s", name, seed, elapsed, r.vs[0].String())
			}
		}
	}
	if logf != nil {
		logf("%s: caught by %d of %d seeds", name, row.Catches, row.Tried)
	}
	return row
}

// Merge merges rows by name: a later row of a bug from the same runner
// replaces the earlier one (a file merged with the runs that redid some
// of its bugs), and a row of the property suite (Runner "property") adds
// its verdict to the simulator's row of the same bug.
func Merge(rows []Row) []Row {
	var out []Row
	at := map[string]int{}
	var props []Row
	for _, r := range rows {
		if r.Runner == "property" {
			props = append(props, r)
			continue
		}
		if i, ok := at[r.Name]; ok && out[i].Runner == r.Runner {
			out[i] = r // a later run of the same bug replaces the earlier
			continue
		}
		at[r.Name] = len(out)
		out = append(out, r)
	}
	for _, p := range props {
		i, ok := at[p.Name]
		if !ok {
			continue
		}
		out[i].Property, out[i].PropertyTest, out[i].PropertyCheck = p.Property, p.PropertyTest, p.PropertyCheck
	}
	return out
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
	// issue 17: a planted bug for every claim
	"engine:resume-waits":                            "7 latency: failover",
	"engine:assigner-scans-slowly":                   "7 latency: failover",
	"engine:expiry-at-scans-only":                    "7 latency: failover",
	"engine:poll-every-lease-duration":               "7 latency: failover",
	"engine:handoff-request-resets-age":              "7 latency: failover",
	"engine:previous-assigner-leases-wait":           "7 latency: failover",
	"engine:untaken-waits-lease":                     "7 latency: failover",
	"engine:observation-reset-on-reread":             "7 latency: failover",
	"engine:deputies-read-slowly":                    "7 latency: assigner takeover",
	"engine:receiver-waits-out-holder":               "7 latency: planned move",
	"engine:handoff-release-to-assigner":             "7 latency: planned move",
	"engine:balance-spread-one":                      "8 balance churn",
	"engine:handoff-counted-for-source":              "8 balance churn",
	"engine:steal-from-equal":                        "8 balance churn",
	"engine:handoff-refuses-checkpoints":             "6 graceful handoff",
	"engine:release-without-shutdown-notice":         "6 graceful handoff",
	"engine:child-at-latest":                         "resharding",
	"engine:descendant-check-dropped":                "resharding",
	"engine:delete-before-children-started":          "resharding",
	"engine:sync-never-abandons":                     "resharding",
	"engine:failed-batch-advances":                   "resume position",
	"engine:expired-iterator-restarts-at-checkpoint": "resume position",
	"engine:adopt-renews-validity":                   "assignment",
	"engine:assigner-leases-unbound":                 "assignment",
	"engine:deposed-take-acted":                      "assignment",
	"engine:previous-assigner-any-writer":            "assignment",
	"engine:condition-failed-is-lost":                "5 bounds: unknown outcomes",
	"engine:ghost-ignored":                           "5 bounds: unknown outcomes",
	"engine:take-ignores-handoff-from":               "lease timing",
	"engine:handoff-timeout-ignored":                 "7 latency: planned move",
	"engine:write-while-resolving":                   "5 bounds: unknown outcomes",
	// issue 19: session renewal (engine/session.go)
	"engine:session-margin-ignored":                "session renewal",
	"engine:session-renew-unconditional":           "session renewal",
	"engine:taker-times-lease-row":                 "session renewal",
	"engine:restart-keeps-session":                 "session renewal",
	"engine:session-end-skipped":                   "session renewal",
	"engine:session-loss-keeps-leases":             "session renewal",
	"engine:orphan-take-once":                      "session renewal",
	"engine:assigner-still-itself":                 "test: session renewal",
	"engine:orphans-unread":                        "session renewal",
	"engine:session-poll-resets-sighting":          "session renewal",
	"engine:superseded-assigner-take-keeps-leases": "test: unknown outcomes",
	"engine:resolve-waits-backoff":                 "7 latency: planned move",
	"engine:session-check-waits-lease":             "7 latency: planned move",
	"engine:cap-ignores-handoffs":                  "test: latency",
	"engine:startup-scan-retry-slow":               "7 latency: planned move",
	"engine:handoff-release-waits-backoff":         "7 latency: planned move",
	"engine:auto-keeps-session":                    "test: session renewal",
	"engine:doomed-assign-counted":                 "8 balance churn",
	"engine:previous-session-revives":              "assignment",
	"engine:lost-assigner-take-reads-late":         "7 latency: failover",
	"engine:kcl-owners-members":                    "assignment",
	"engine:superseded-session-unfenced":           "assignment",
	"engine:expired-never-back-to-owner":           "assignment",
	"engine:first-sight-shows-life":                "assignment",
	"engine:final-checkpoint-waits-backoff":        "7 latency: planned move",
	"engine:owed-poll-skips-busy-rows":             "assignment",
	"engine:released-marks-successor-leaving":      "assignment",
	"engine:balance-beside-stale-member":           "8 balance churn",
	// caught by a named test, not by a run (TestTestsCatchPlantedBugs)
	"engine:config-margin-unchecked":        "test: configuration",
	"engine:malformed-reported-every-scan":  "test: malformed rows",
	"engine:unproven-row-ended":             "test: stream identity",
	"engine:every-worker-scans":             "test: table cost",
	"engine:goodbye-unsaid":                 "test: membership",
	"engine:leaving-assigner-listed":        "test: membership",
	"engine:expiry-drops-renewal-in-flight": "test: lease timing",
	"engine:session-start-unchecked":        "test: session renewal",
	"engine:session-still-ignored":          "test: session renewal",
	"engine:lost-session-take-acted":        "test: session renewal",
	"engine:assigner-ghost-ignored":         "test: unknown outcomes",
	"engine:session-still-ignores-renewals": "test: session renewal",
	"engine:stale-session-view-taken":       "test: session renewal",
	"engine:released-waits-index":           "test: session renewal",
	"engine:refused-waits-watch":            "test: session renewal",
	"engine:scan-taker-skips-session-end":   "test: session renewal",
	// issue 20: the etcd store (sim/etcd.go)
	"etcd-owner-only-compare":      "etcd store",
	"etcd-watch-resume-at-current": "etcd store",
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
// caught rows, the names of the rows not caught, and of those caught by
// fewer than Target of their seeds.
func Stats(rows []Row) (median, most float64, survivors, under []string) {
	var secs []float64
	for _, r := range rows {
		if !r.Caught {
			survivors = append(survivors, r.Name)
			continue
		}
		if r.Rate() < Target && r.Runner != "test" {
			under = append(under, r.Name)
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
	return median, most, survivors, under
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
	fmt.Fprintf(&b, "| planted bug | class | caught by | seeds 1-%d that catch it | first seed | seconds to it | property suite | run |\n|---|---|---|---:|---:|---:|---|---|\n", Seeds)
	props, propCaught := 0, 0
	for _, r := range rows {
		seed, secs, inv, rate := "—", "—", "not caught", "0"
		switch {
		case r.Caught && r.Runner == "test":
			inv, rate = "`"+r.Invariant+"`", "(a named test)"
		case r.Caught:
			seed, secs, inv = fmt.Sprint(r.Seed), fmt.Sprintf("%.1f", r.Seconds), invariantCounts(r)
			rate = fmt.Sprintf("%d (%.0f%%)", r.Catches, 100*r.Rate())
		}
		prop := r.Property
		switch prop {
		case "":
			prop = "—"
		case "caught":
			props++
			propCaught++
			prop = fmt.Sprintf("caught (check %d)", r.PropertyCheck)
			if r.PropertyTest != "" && r.PropertyTest != "TestProperty" {
				prop = fmt.Sprintf("caught (%s, check %d)", r.PropertyTest, r.PropertyCheck)
			}
		default:
			props++
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", r.Name, r.Class, inv, rate, seed, secs, prop, r.Runner)
	}
	median, most, survivors, under := Stats(rows)
	fmt.Fprintf(&b, "\n%d planted bugs: %d caught within seeds 1-%d, %d of them by at least %.0f%% of the seeds; %d of %d caught by the property suite; time to first catch: median %.1f s, max %.1f s",
		len(rows), len(rows)-len(survivors), Seeds, len(rows)-len(survivors)-len(under), 100*Target, propCaught, props, median, most)
	if len(survivors) > 0 {
		fmt.Fprintf(&b, "; not caught: %s", strings.Join(survivors, ", "))
	}
	if len(under) > 0 {
		fmt.Fprintf(&b, "; under %.0f%%: %s", 100*Target, strings.Join(under, ", "))
	}
	b.WriteString(".\n")
	return b.String()
}

// invariantCounts lists the invariants that caught r, each with the
// seeds that broke it, most first.
func invariantCounts(r Row) string {
	if len(r.Invariants) == 0 {
		return r.Invariant
	}
	names := make([]string, 0, len(r.Invariants))
	for n := range r.Invariants {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := r.Invariants[b] - r.Invariants[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, r.Invariants[n])
	}
	return strings.Join(parts, ", ")
}

// Doc is the document, relative to the repository's root, that holds the
// table between Begin and End (the README links to it); FindDoc finds it
// wherever the markers are.
const Doc = "docs/figures.md"

// FindDoc returns the document under root (README.md or docs/*.md) that
// holds the markers, relative to root: the table moves with them.
func FindDoc(root string) (string, error) {
	cands := []string{"README.md"}
	more, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err == nil {
			cands = append(cands, rel)
		}
	}
	for _, c := range cands {
		b, err := os.ReadFile(filepath.Join(root, c))
		if err == nil && bytes.Contains(b, []byte(Begin)) && bytes.Contains(b, []byte(End)) {
			return c, nil
		}
	}
	return "", fmt.Errorf("mutants: no document under %s holds the markers %q ... %q", root, Begin, End)
}

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

// WriteKeeping writes rows to path as Write does, keeping the rows already there
// whose names rows does not hold: tests that each measure one planted bug
// share one file.
func WriteKeeping(path string, rows []Row) error {
	old, err := Read(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var out []Row
	for _, o := range old {
		if !slices.ContainsFunc(rows, func(r Row) bool { return r.Name == o.Name }) {
			out = append(out, o)
		}
	}
	return Write(path, append(out, rows...))
}
