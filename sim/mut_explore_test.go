package sim

import (
	"flag"
	"testing"
)

var flagMutFaults = flag.String("sim.mutfaults", "", "TestMutExplore: fault classes")

// TestMutExplore lists which invariants catch -sim.mutation over -sim.explore seeds.
func TestMutExplore(t *testing.T) {
	if *flagMut == "" || *flagExplore == 0 {
		t.Skip("set -sim.mutation and -sim.explore")
	}
	for seed := *flagFirst; seed < *flagFirst+uint64(*flagExplore); seed++ {
		res, err := Run(Options{Seed: seed, Mutation: *flagMut, Faults: *flagMutFaults, Workers: 4, Shards: 8})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, v := range append(res.Violations, res.Tolerated...) {
			seen[v.Invariant]++
		}
		t.Logf("seed %d %s: %v", seed, res.Tier(), seen)
	}
}
