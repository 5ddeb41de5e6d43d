package driversim

import (
	"errors"
	"flag"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/check"
)

// driverBugs are the planted bugs of the production driver, each with the
// invariant that must catch it and the number of seeds of the default
// mix (no fault class chosen for the bug) within which it must.
var driverBugs = []struct {
	name, invariant string
	bound           uint64
}{
	// about half the seeds catch it (112 of seeds 1-200): a hand-off pause long enough for
	// another consumer to take the lease and act on it
	{"driver-handoff-unchecked", "S1", 16},
	// about one seed in five (38 of seeds 1-200): a graceful shutdown that
	// hits its deadline while a processor that ignores cancellation still
	// has a checkpoint to ask for
	{"driver-ack-on-stop", "S3", 128},
}

// TestDriverBugsCaught plants each bug of the production driver in every
// consumer and runs seeds of the default mix until the checkers catch it
// as its invariant: within the bound, or the test fails.
func TestDriverBugsCaught(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	for _, b := range driverBugs {
		t.Run(b.name, func(t *testing.T) {
			start := time.Now()
			for seed := uint64(1); seed <= b.bound; seed++ {
				res := runSeed(t, Options{Seed: seed, Mutation: b.name})
				for _, v := range res.Violations {
					if v.Invariant == b.invariant {
						t.Logf("caught at seed %d after %.1fs of wall time: %s", seed, time.Since(start).Seconds(), v.String())
						return
					}
				}
			}
			t.Errorf("planted bug %s not caught as %s within %d seeds", b.name, b.invariant, b.bound)
		})
	}
}

var flagMutantsJSON = flag.String("driversim.mutants.json", "", "TestDriverMutants: write its rows (internal/mutants) to this file (make mutants)")

// TestDriverMutants runs each planted bug of the driver on seeds 1 to
// mutants.Seeds of the default driver worlds (those of simrun -driver; as
// many at a time as GOMAXPROCS) and
// counts the seeds that break an invariant: make mutants' catch rates. It
// writes a row per bug to -driversim.mutants.json.
func TestDriverMutants(t *testing.T) {
	if *flagMutantsJSON == "" {
		t.Skip("set -driversim.mutants.json (make mutants)")
	}
	planted.SkipUnlessEnabled(t)
	var rows []mutants.Row
	for _, b := range driverBugs {
		name := "engine:" + b.name // as simrun -list shows it
		row := mutants.Sweep(name, "driversim", mutants.Seeds, runtime.GOMAXPROCS(0), func(seed uint64) []check.Violation {
			return runSeed(t, Options{Seed: seed, Mutation: b.name}).Violations
		}, t.Logf)
		if !row.Caught {
			t.Errorf("%s: not caught by any of seeds 1-%d", name, mutants.Seeds)
		}
		rows = append(rows, row)
	}
	if err := mutants.Write(*flagMutantsJSON, rows); err != nil {
		t.Fatal(err)
	}
}

// TestPlantNeedsTheTag: a planted bug is refused, naming the tag, by a
// binary built without it; an unknown name is refused either way.
func TestPlantNeedsTheTag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := Run(Options{Seed: 1, Mutation: "driver-handoff-unchecked"})
		switch {
		case planted.Enabled() && err != nil:
			t.Fatalf("with the tag: %v", err)
		case !planted.Enabled() && !errors.Is(err, planted.ErrDisabled):
			t.Fatalf("without the tag: err = %v, want %v", err, planted.ErrDisabled)
		}
		if _, err := Run(Options{Seed: 1, Mutation: "no-such-bug"}); err == nil {
			t.Fatal("an unknown planted bug was accepted")
		}
	})
}

// TestRunNeedsABubble: outside a synctest bubble Run refuses to start
// (it would run the consumers in real time).
func TestRunNeedsABubble(t *testing.T) {
	if _, err := Run(Options{Seed: 1}); !errors.Is(err, ErrNoBubble) {
		t.Fatalf("Run outside a bubble: err = %v, want ErrNoBubble", err)
	}
}
