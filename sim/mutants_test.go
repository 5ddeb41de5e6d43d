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
// worlds); a bug that changes none of them is held to changing the run of
// its regression world (latencyWorlds). The bugs that only a named test sees are
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
			// a rare bug is shown to change the run of its regression
			// world instead (which TestLatencyWorldsCaught also shows
			// it breaking)
			if w, ok := worldOf(m); ok && worldHash(t, w.opts, "") != worldHash(t, w.opts, m) {
				t.Logf("%s changes no run of seeds 1-%d, but the run of its regression world (seed %d)", m, changeSeeds, w.opts.Seed)
				continue
			}
			if test, ok := rareShownByTest[m]; ok {
				t.Logf("%s changes no run of seeds 1-%d; its named test %s shows it is not equivalent", m, changeSeeds, test)
				continue
			}
			t.Errorf("%s changes no run of seeds 1-%d: it may be equivalent to the correct engine", m, changeSeeds)
		} else {
			t.Logf("%s: seed %d differs", m, differs)
		}
	}
}

// rareShownByTest are the planted bugs that no seed of 1-changeSeeds
// reaches and whose regression world a later engine change retired
// (sim/regress_latency_test.go): the named test that fails with each
// planted and passes without (package engine's TestTestsCatchPlantedBugs)
// shows it is not equivalent to the correct engine.
var rareShownByTest = map[string]string{
	EngineMutationPrefix + "kcl-owners-members": "TestKCLWorkerIsNoMember",
}

// worldOf returns the regression world of the planted bug m, if it has
// one (latencyWorlds).
func worldOf(m string) (regressWorld, bool) {
	for _, w := range latencyWorlds {
		if EngineMutationPrefix+w.bug == m {
			return w, true
		}
	}
	return regressWorld{}, false
}

// worldHash returns the trace hash of the world o with the planted bug m
// ("": none).
func worldHash(t *testing.T, o Options, m string) uint64 {
	t.Helper()
	o.Mutation, o.NoExcerpts, o.LinBudget = m, true, -1
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	return res.TraceHash
}
