package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

var (
	flagSeeds = flag.Int("sim.seeds", 0, "number of swarm seeds TestSwarm runs (0: a reduced default)")
	flagFirst = flag.Uint64("sim.first", 1, "first swarm seed")
	flagVerb  = flag.Bool("sim.verbose", false, "print every run's summary")
)

// TestSwarm runs swarm seeds of the correct engine: none may break an
// invariant (S1 is tolerated only in runs outside the assumptions).
func TestSwarm(t *testing.T) {
	n := *flagSeeds
	if n == 0 {
		n = 24
		if testing.Short() {
			n = 6
		}
	}
	failed := 0
	tiers := map[string]int{}
	for seed := *flagFirst; seed < *flagFirst+uint64(n); seed++ {
		res, err := Run(Options{Seed: seed})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		tiers[res.Tier()]++
		if *flagVerb {
			t.Log(res.Summary())
		}
		if !res.OK() {
			failed++
			if failed <= 3 {
				t.Errorf("seed %d:\n%s", seed, res.Summary())
			} else {
				var inv []string
				for _, v := range res.Violations {
					inv = append(inv, v.Invariant+" "+v.Key)
				}
				t.Errorf("seed %d: %s (%s)", seed, strings.Join(inv, ", "), res.Replay)
			}
		}
	}
	t.Log(fmt.Sprintf("%d seeds, %d failed, tiers %v", n, failed, tiers))
}
