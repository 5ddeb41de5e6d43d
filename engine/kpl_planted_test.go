//go:build shardlease_mutations

package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/planted"
)

// The planted bug resume-after-sequence (the engine before KPL support)
// loses the rest of an aggregate whose first user record was checkpointed:
// the handoff of TestSubSequenceCheckpointSurvivesHandoff shows it.
func TestPlantedResumeAfterSequenceLosesUserRecords(t *testing.T) {
	cfg := Config{}
	if err := planted.Set(&cfg, "resume-after-sequence"); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 1, cfg)
	key := shardKey(0)
	c.stream.putData(key, aggregate(t, "x", 3))
	c.stream.put(key, 1)
	a := c.start("A")
	a.noCheckpoint = true
	c.runUntil(20*time.Second, "A delivers", func() bool { return len(a.recs[key]) == 4 })
	all := a.recs[key]
	c.step(a, Input{Kind: InputCheckpoint, Key: key, Checkpoint: pos(all[0]), Token: 1})
	b := c.start("B")
	b.noCheckpoint = true
	a.down = true
	c.runUntil(30*time.Second, "B takes over", func() bool { return len(c.held("B")) == 1 })
	c.runUntil(10*time.Second, "B delivers", func() bool { return len(b.recs[key]) > 0 })
	c.run(2 * time.Second)
	if got, lost := positions(b.recs[key]), positions(all[3:]); !slices.Equal(got, lost) {
		t.Fatalf("with the bug B delivered %v, want only %v (user records 1 and 2 lost)", got, lost)
	}
}
