package scenarios

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/shardlease/shardlease/sim"
)

// swarmProperty returns the property over the default swarm's worlds: rapid
// draws a seed and the world is the one `simrun -seed N` runs (every fault
// class, option, combination, aimed and targeted fault and boundary knob
// the swarm draws, and its healing phase), with mutation planted if set;
// the run breaks no invariant. A seed does not shrink to a smaller world,
// so a failure names the simrun command that replays it. last, if set,
// receives every failing run.
func swarmProperty(mutation string, last *swarmFailure) func(*rapid.T) {
	return func(t *rapid.T) {
		o := sim.Options{Seed: rapid.Uint64Range(1, math.MaxUint32).Draw(t, "swarm-seed"), Faults: "swarm", Mutation: mutation}
		res, err := sim.Run(o)
		if err != nil {
			t.Fatalf("sim.Run: %v (%s)", err, sim.ReplayCommand(o))
		}
		if len(res.Violations) == 0 {
			return
		}
		if last != nil {
			*last = swarmFailure{o: o, res: res}
		}
		var inv []string
		for _, v := range res.Violations {
			inv = append(inv, v.Invariant+" "+v.Key)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "invariants broken: %s (tier %s)\nreplay: %s\ndrawn world: %s\n", strings.Join(inv, ", "), res.Tier(), res.Replay, res.World)
		for _, v := range res.Violations {
			b.WriteString(sim.FormatViolation(v))
		}
		t.Fatal(b.String())
	}
}

type swarmFailure struct {
	o   sim.Options
	res *sim.Result
}

// TestPropertySwarm: the default swarm's worlds on the property path. rapid
// draws swarm seeds (from the fixed propertySeed, so go test runs the same
// seeds every time; make sweep's -rapid.seed=0 draws new ones) and no run
// of the correct engine may break an invariant. TestProperty's own draws
// (a rapid-built schedule that shrinks) reach only part of what the swarm
// draws; this test runs the swarm's worlds themselves. -rapid.checks=N
// sets the number of seeds (default 100, 20 with -short).
func TestPropertySwarm(t *testing.T) {
	t.Parallel()
	rapid.Check(t, swarmProperty("", nil))
}
