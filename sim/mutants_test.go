package sim

import (
	"flag"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/check"
)

var (
	flagMutantsJSON  = flag.String("sim.mutants.json", "", "TestMutantsSwarm: write its rows (internal/mutants) to this file (make mutants)")
	flagMutantsOnly  = flag.String("sim.mutants.only", "", "TestMutantsSwarm: run only these planted bugs (comma-separated)")
	flagMutantsSeeds = flag.Uint64("sim.mutants.seeds", mutants.Seeds, "TestMutantsSwarm: seeds 1 to this (a quick look; make mutants runs mutants.Seeds)")
)

// driverMutation reports a planted bug of the production driver: the
// simulator drives the core alone, so sim/driversim runs those.
func driverMutation(m string) bool { return strings.HasPrefix(m, EngineMutationPrefix+"driver-") }

// TestMutantsSwarm runs every planted bug simrun -list shows (but the
// driver's) on the default swarm, seeds 1 to mutants.Seeds (as many at a
// time as GOMAXPROCS), and counts the seeds that break an invariant inside
// the assumptions: make mutants' catch rates, with no fault mix or
// scenario chosen for a bug. -sim.mutants.only=NAME,... runs those bugs
// alone. With -sim.mutants.json it writes a row per bug.
func TestMutantsSwarm(t *testing.T) {
	if *flagMutantsJSON == "" {
		t.Skip("set -sim.mutants.json (make mutants)")
	}
	planted.SkipUnlessEnabled(t)
	var names []string
	only := strings.Split(*flagMutantsOnly, ",")
	for m := range Mutations {
		if !driverMutation(m) && !mutants.TestOnly(m) && (*flagMutantsOnly == "" || slices.Contains(only, m)) {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	var rows []mutants.Row
	for _, m := range names {
		row := mutants.Sweep(m, "sim", *flagMutantsSeeds, runtime.GOMAXPROCS(0), func(seed uint64) []check.Violation {
			res, err := Run(Options{Seed: seed, Faults: "swarm", Mutation: m, NoExcerpts: true})
			if err != nil {
				t.Error(err)
				return nil
			}
			return res.Violations
		}, t.Logf)
		if !row.Caught {
			t.Errorf("%s: not caught by any of seeds 1-%d of the default swarm", m, *flagMutantsSeeds)
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

// TestPlantedBugsChangeTheRun: no planted bug is equivalent to the correct
// engine: each changes the trace of some seed of the default swarm (among
// seeds 1 to changeSeeds), caught or not. The loop stops at a bug's first
// seed that differs, so the rare ones alone run long (deposed-take-acted
// first changes seed 107 since a quarter of the swarm's worlds became etcd
// worlds). The bugs that only a named test sees are
// shown by that test (package engine's TestTestsCatchPlantedBugs).
const changeSeeds = 160

func TestPlantedBugsChangeTheRun(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	if testing.Short() {
		t.Skip("runs the swarm for every planted bug")
	}
	base := map[uint64]uint64{}
	hash := func(seed uint64, m string) uint64 {
		res, err := Run(Options{Seed: seed, Mutation: m, NoExcerpts: true, LinBudget: -1})
		if err != nil {
			t.Fatal(err)
		}
		return res.TraceHash
	}
	var names []string
	for m := range Mutations {
		if !driverMutation(m) && !mutants.TestOnly(m) {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	for _, m := range names {
		differs := uint64(0)
		for seed := uint64(1); seed <= changeSeeds && differs == 0; seed++ {
			if _, ok := base[seed]; !ok {
				base[seed] = hash(seed, "")
			}
			if hash(seed, m) != base[seed] {
				differs = seed
			}
		}
		if differs == 0 {
			t.Errorf("%s changes no run of seeds 1-%d: it may be equivalent to the correct engine", m, changeSeeds)
		} else {
			t.Logf("%s: seed %d differs", m, differs)
		}
	}
}
