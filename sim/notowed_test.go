package sim

import (
	"testing"

	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/check"
)

// TestChildAtLatestOwed: records put to a child shard before its first
// read are owed in a world that begins at TRIM_HORIZON, and in any world
// when a parent has a row, so the planted bug child-at-latest (children's
// rows created at LATEST) breaks S4 at swarm seed 1: the simulator must not
// record them as not owed because the row says LATEST (it did after the
// merge of the faults branch, and no seed of 1-64 caught the bug).
func TestChildAtLatestOwed(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	res, err := Run(Options{Seed: 1, Faults: "swarm", Mutation: EngineMutationPrefix + "child-at-latest", NoExcerpts: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Violations {
		if v.Invariant == check.S4 {
			return
		}
	}
	t.Fatalf("seed 1 with child-at-latest breaks no S4: %v", res.Violations)
}
