package scenarios

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim"
)

var flagMutantsJSON = flag.String("scenarios.mutants.json", "", "TestPropertyMutants: write its rows (internal/mutants, runner \"property\") to this file (make mutants)")

// TestPropertyMutants asks, for every planted bug the property path runs
// (sim.Mutations but the driver's), whether go test ./scenarios/... would
// catch it: TestProperty's property, then, if that misses it,
// TestPropertySwarm's, each with its rapid seed and number of checks,
// against the engine with the bug planted. It records
// the verdict and the first failing check (make mutants; shrinking is
// beside the point here, so make mutants gives it a second) and leaves no
// fail file behind.
func TestPropertyMutants(t *testing.T) {
	if *flagMutantsJSON == "" {
		t.Skip("set -scenarios.mutants.json (make mutants)")
	}
	planted.SkipUnlessEnabled(t)
	var names []string
	for m := range sim.Mutations {
		if !strings.HasPrefix(m, sim.EngineMutationPrefix+"driver-") && !mutants.TestOnly(m) {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	var mu sync.Mutex
	var rows []mutants.Row
	t.Run("bugs", func(t *testing.T) {
		for _, m := range names {
			t.Run(m, func(t *testing.T) {
				t.Parallel()
				name := "mutant-" + m
				dir := failDir(name)
				cleanup := func() { _ = os.RemoveAll(dir) }
				cleanup()
				t.Cleanup(cleanup)
				var last failure
				prop := property("TestProperty", insideSize, m, &last)
				tb := &expectFailTB{t: t, name: name}
				calls, first := checkCounting(tb, prop, func() bool { return last.res != nil })
				row := mutants.Row{Name: m, Runner: "property", Property: "missed"}
				if tb.Failed() && last.res != nil {
					row.Property, row.PropertyTest, row.PropertyCheck = "caught", "TestProperty", first
					t.Logf("%s: TestProperty caught it at check %d: %s %s", m, first, last.violations[0].Invariant, last.violations[0].Detail)
				} else {
					t.Logf("%s: TestProperty did not catch it in %d checks", m, calls)
					// then TestPropertySwarm's seeds, with its rapid seed
					var lastSwarm swarmFailure
					swarmProp := swarmProperty(m, &lastSwarm)
					tb := &expectFailTB{t: t, name: name}
					calls, first := checkCounting(tb, swarmProp, func() bool { return lastSwarm.res != nil })
					if tb.Failed() && lastSwarm.res != nil {
						v := lastSwarm.res.Violations[0]
						row.Property, row.PropertyTest, row.PropertyCheck = "caught", "TestPropertySwarm", first
						t.Logf("%s: TestPropertySwarm caught it at check %d (%s): %s %s", m, first, sim.ReplayCommand(lastSwarm.o), v.Invariant, v.Detail)
					} else {
						t.Logf("%s: TestPropertySwarm did not catch it in %d checks", m, calls)
					}
				}
				mu.Lock()
				rows = append(rows, row)
				mu.Unlock()
			})
		}
	})
	_ = os.Remove(filepath.Join("testdata", "rapid")) // if empty
	if err := mutants.Write(*flagMutantsJSON, rows); err != nil {
		t.Fatal(err)
	}
}

// checkCounting runs rapid's check of prop on tb and returns how many
// checks ran and the first after which failed reported true (0: none).
func checkCounting(tb *expectFailTB, prop func(*rapid.T), failed func() bool) (calls, first int) {
	rapid.Check(tb, func(rt *rapid.T) {
		calls++
		defer func() {
			if first == 0 && failed() {
				first = calls
			}
		}()
		prop(rt)
	})
	return calls, first
}
