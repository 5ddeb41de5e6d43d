package sim

import (
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
)

var (
	flagSeeds = flag.Int("sim.seeds", 0, "number of swarm seeds TestSwarm runs (0: a reduced default)")
	flagFirst = flag.Uint64("sim.first", 1, "first swarm seed")
	flagVerb  = flag.Bool("sim.verbose", false, "print every run's summary")
)

// TestSwarm runs swarm seeds of the correct engine: none may break an
// invariant (S1 is tolerated only in runs outside the assumptions).
// Seeds run on parallel subtests; each run is single-threaded and
// deterministic.
func TestSwarm(t *testing.T) {
	n := *flagSeeds
	if n == 0 {
		n = 16
		if testing.Short() {
			n = 4
		}
	}
	var mu sync.Mutex
	tiers := map[string]int{}
	failed, linUnknown := 0, 0
	t.Run("seeds", func(t *testing.T) {
		for seed := *flagFirst; seed < *flagFirst+uint64(n); seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				res, err := Run(Options{Seed: seed})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if *flagVerb {
					t.Log(res.Summary())
				}
				var bad []string
				for _, v := range res.Violations {
					bad = append(bad, v.Invariant+" "+v.Key)
				}
				mu.Lock()
				tiers[res.Tier()]++
				if res.Lin.Unknown {
					linUnknown++ // timed out: not a violation
				}
				if len(bad) > 0 {
					failed++
				}
				mu.Unlock()
				if len(bad) > 0 {
					t.Errorf("seed %d: %s\n%s", seed, strings.Join(bad, ", "), res.Summary())
				}
			})
		}
	})
	t.Logf("%d seeds, %d failed, tiers %v, Lin checks timed out %d", n, failed, tiers, linUnknown)
}
