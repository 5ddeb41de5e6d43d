package engine

import (
	"testing"
	"time"
)

func TestSplitChildWaitsForParentEnd(t *testing.T) {
	c := newCluster(t, 1, Config{})
	p := shardKey(0)
	c.stream.put(p, 3)
	a := c.start("A")
	a.noCheckpoint = true // the parent cannot end until its records are checkpointed by the engine at shard end
	c.runUntil(20*time.Second, "A delivers", func() bool { return totalGot(a) == 3 })
	c.stream.split(p, "shardId-000000000001", "shardId-000000000002")
	c.stream.put("shardId-000000000001", 2)
	c.stream.put("shardId-000000000002", 2)
	c.runUntil(40*time.Second, "children delivered", func() bool { return totalGot(a) == 7 })
	ended := c.traceOf(TraceShardEnded, "A", p)
	if len(ended) != 1 {
		t.Fatalf("parent never ended: %v", ended)
	}
	for _, child := range []string{"shardId-000000000001", "shardId-000000000002"} {
		st := c.traceOf(TraceChildStarted, "", child)
		if len(st) == 0 {
			t.Fatalf("%s: no child-started", child)
		}
		if st[0].Mono < ended[0].Mono {
			t.Errorf("%s started at %v before its parent ended at %v", child, st[0].Mono, ended[0].Mono)
		}
		for _, d := range c.traceOf(TraceDelivered, "", child) {
			if d.Mono < ended[0].Mono {
				t.Errorf("%s delivered at %v before its parent ended", child, d.Mono)
			}
		}
		if row := c.row(child); len(row.Parents) != 1 || row.Parents[0] != p {
			t.Errorf("child row parents %v", row.Parents)
		}
	}
	// The parent's row goes once both children started, and is never
	// re-created though ListShards still lists the parent.
	c.runUntil(30*time.Second, "parent row deleted", func() bool {
		_, err := c.store.GetLease(t.Context(), p)
		return err != nil
	})
	c.run(60 * time.Second)
	if _, err := c.store.GetLease(t.Context(), p); err == nil {
		t.Errorf("finished parent %s re-created", p)
	}
	if n := len(c.traceOf(TraceLeaseCreated, "", p)); n != 1 {
		t.Errorf("parent created %d times", n)
	}
}

func TestMergeChildWaitsForBothParents(t *testing.T) {
	c := newCluster(t, 2, Config{})
	p1, p2, child := shardKey(0), shardKey(1), "shardId-000000000002"
	c.stream.put(p1, 2)
	c.stream.put(p2, 2)
	a := c.start("A")
	b := c.start("B")
	c.runUntil(60*time.Second, "one parent each", func() bool { return len(c.held("A")) == 1 && len(c.held("B")) == 1 })
	c.runUntil(20*time.Second, "parents delivered", func() bool { return totalGot(a)+totalGot(b) == 4 })
	// B's processor hangs on nothing, but B is paused: its parent cannot
	// end until B is taken over.
	slow := b
	if c.held("A")[0] == p2 {
		slow = a
	}
	slow.down = true
	c.stream.merge(p1, p2, child)
	c.stream.put(child, 3)
	c.runUntil(60*time.Second, "child delivered", func() bool {
		n := 0
		for _, tw := range c.workers {
			n += len(tw.got[child])
		}
		return n == 3
	})
	e1, e2 := c.traceOf(TraceShardEnded, "", p1), c.traceOf(TraceShardEnded, "", p2)
	if len(e1) == 0 || len(e2) == 0 {
		t.Fatalf("a parent never ended: %v %v", e1, e2)
	}
	last := max(e1[0].Mono, e2[0].Mono)
	for _, d := range c.traceOf(TraceDelivered, "", child) {
		if d.Mono < last {
			t.Errorf("merge child delivered at %v, before both parents ended (%v)", d.Mono, last)
		}
	}
	if row := c.row(child); len(row.Parents) != 2 {
		t.Errorf("merge child records parents %v, want both", row.Parents)
	}
}

func TestLatestSkipsClosedShardsButNotChildren(t *testing.T) {
	c := newCluster(t, 1, Config{Streams: []StreamConfig{{Name: "s", InitialPosition: Latest}}})
	p := shardKey(0)
	c.stream.put(p, 3)
	c.stream.split(p, "shardId-000000000001", "shardId-000000000002")
	c.stream.put("shardId-000000000001", 1)
	a := c.start("A")
	c.runUntil(20*time.Second, "children held", func() bool { return len(c.held("A")) == 2 })
	if _, err := c.store.GetLease(t.Context(), p); err == nil {
		t.Errorf("closed shard got a lease under LATEST")
	}
	for _, k := range []string{"shardId-000000000001", "shardId-000000000002"} {
		if cp := c.traceOf(TraceLeaseCreated, "", k)[0].Checkpoint; cp.Sequence != Latest {
			t.Errorf("%s created at %s, want LATEST (it existed at first start)", k, cp)
		}
	}
	// A later split's children start at TRIM_HORIZON: records written
	// before anyone holds them are not skipped.
	c.run(2 * time.Second)
	c.stream.split("shardId-000000000002", "shardId-000000000003", "shardId-000000000004")
	c.stream.put("shardId-000000000003", 2)
	c.runUntil(40*time.Second, "grandchild records", func() bool { return len(a.got["shardId-000000000003"]) == 2 })
	if cp := c.traceOf(TraceLeaseCreated, "", "shardId-000000000003")[0].Checkpoint; cp.Sequence != TrimHorizon {
		t.Errorf("child of a later split created at %s", cp)
	}
}
