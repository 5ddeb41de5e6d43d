package sim

import (
	"testing"
)

// mutationCase is a planted bug and the fault mix that exposes it.
type mutationCase struct {
	mutation  string
	faults    string
	invariant string // the invariant that must catch it
}

var mutationCases = []mutationCase{
	{"unfenced-checkpoint", "partition,pause,crash,clog", "S2"},
	{"unfenced-take", "partition,clog,latency", "S2"},
	{"unfenced-take", "partition,clog,latency,pause", "S1"},
	{"orphan-children", "split,merge", "S5"},
	{"ignore-second-parent", "merge", "S5"},
	{"skip-on-resume", "crash,shutdown,partition", "S4"},
}

// TestMutationsCaught runs the engine with a planted bug on a few seeds:
// the simulator must catch each within the bound.
func TestMutationsCaught(t *testing.T) {
	const bound = 10
	for _, mc := range mutationCases {
		t.Run(mc.mutation+"/"+mc.invariant, func(t *testing.T) {
			for seed := uint64(1); seed <= bound; seed++ {
				res, err := Run(Options{Seed: seed, Mutation: mc.mutation, Faults: mc.faults, Workers: 4, Shards: 8})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range append(res.Violations, res.Tolerated...) {
					if v.Invariant == mc.invariant {
						t.Logf("caught at seed %d: %s", seed, v.String())
						return
					}
				}
			}
			t.Errorf("mutation %s not caught as %s within %d seeds", mc.mutation, mc.invariant, bound)
		})
	}
}
