package sim

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/check"
)

var flagMutantsJSON = flag.String("sim.mutants.json", "", "TestMutantsSwarm: write its rows (internal/mutants) to this file (make mutants)")

// driverMutation reports a planted bug of the production driver: the
// simulator drives the core alone, so sim/driversim runs those.
func driverMutation(m string) bool { return strings.HasPrefix(m, EngineMutationPrefix+"driver-") }

// TestMutantsSwarm runs every planted bug simrun -list shows (but the
// driver's) on the default swarm, seeds 1 to mutants.Seeds one at a time,
// until one seed breaks an invariant inside the assumptions: the bar of
// make mutants, which gives no bug a fault mix or a scenario of its own.
// With -sim.mutants.json it writes a row per bug.
func TestMutantsSwarm(t *testing.T) {
	if *flagMutantsJSON == "" {
		t.Skip("set -sim.mutants.json (make mutants)")
	}
	planted.SkipUnlessEnabled(t)
	var names []string
	for m := range Mutations {
		if !driverMutation(m) {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	var rows []mutants.Row
	for _, m := range names {
		row := mutants.Hunt(m, "sim", func(seed uint64) []check.Violation {
			res, err := Run(Options{Seed: seed, Faults: "swarm", Mutation: m, NoExcerpts: true})
			if err != nil {
				t.Fatal(err)
			}
			return res.Violations
		}, t.Logf)
		if !row.Caught {
			t.Errorf("%s: not caught within %d seeds of the default swarm (%.0fs)", m, mutants.Seeds, row.Seconds)
		}
		rows = append(rows, row)
	}
	if err := mutants.Write(*flagMutantsJSON, rows); err != nil {
		t.Fatal(err)
	}
}

// TestMutantClasses: every planted bug has a class in the report.
func TestMutantClasses(t *testing.T) {
	for m := range Mutations {
		if mutants.Classes[m] == "" {
			t.Errorf("planted bug %s has no class in internal/mutants.Classes", m)
		}
	}
}
