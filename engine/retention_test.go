package engine

import (
	"strings"
	"testing"
	"time"
)

// A closed shard whose retention passed before anyone read it to its end
// is gone from the stream: its lease is ended, so its children start and
// nothing waits for it forever (found by the simulator, seed 682).
func TestShardGoneFromStreamEndsItsLease(t *testing.T) {
	c := newCluster(t, 1, Config{})
	p := shardKey(0)
	c.stream.put(p, 3)
	a := c.start("A")
	a.noCheckpoint = true
	c.runUntil(20*time.Second, "A delivers", func() bool { return totalGot(a) == 3 })
	a.down = true
	c.stream.split(p, "shardId-000000000001", "shardId-000000000002")
	c.stream.put("shardId-000000000001", 2)
	c.stream.put("shardId-000000000002", 2)
	c.stream.expire(p)
	b := c.start("B")
	c.runUntil(90*time.Second, "children delivered", func() bool {
		return len(b.got["shardId-000000000001"]) == 2 && len(b.got["shardId-000000000002"]) == 2
	})
	ended := c.traceOf(TraceShardEnded, "B", p)
	if len(ended) != 1 || !strings.Contains(ended[0].Reason, "retention") {
		t.Fatalf("the gone parent's end: %v", ended)
	}
	if len(b.got[p]) != 0 {
		t.Errorf("B read %d records of a shard that is gone", len(b.got[p]))
	}
	c.runUntil(30*time.Second, "the gone parent's row deleted", func() bool {
		_, err := c.store.GetLease(t.Context(), p)
		return err != nil
	})
}
