package engine

import (
	"testing"
	"time"
)

func totalGot(tw *tWorker) int {
	n := 0
	for _, v := range tw.got {
		n += len(v)
	}
	return n
}

func TestFailoverResumesAfterLastCheckpoint(t *testing.T) {
	c := newCluster(t, 1, Config{})
	key := shardKey(0)
	c.stream.put(key, 3)
	a := c.start("A")
	c.runUntil(20*time.Second, "A checkpoints", func() bool { return c.row(key).Checkpoint.Sequence == c.stream.recs[key][2].Sequence })
	b := c.start("B")
	c.run(5 * time.Second)
	if len(c.held("B")) != 0 {
		t.Fatalf("B took a live lease: %v", c.held("B"))
	}
	a.down = true // crash
	crashAt := c.now
	c.stream.put(key, 2)
	c.runUntil(30*time.Second, "B takes over", func() bool { return len(c.held("B")) == 1 })
	if took := c.now - crashAt; took < c.cfg.withDefaults().LeaseDuration {
		t.Errorf("B took over %v after the crash, before a full lease duration", took)
	}
	c.runUntil(10*time.Second, "B delivers", func() bool { return totalGot(b) == 2 })
	if got, want := b.got[key][0], c.stream.recs[key][3].Sequence; got != want {
		t.Errorf("B resumed at %s, want the record after the checkpoint %s", got, want)
	}
	acq := c.traceOf(TraceLeaseAcquired, "B", key)
	if len(acq) != 1 || acq[0].Reason != "expired" || acq[0].Previous != "A" {
		t.Errorf("B's acquisition: %v", acq)
	}
}

func TestStaleOwnerCheckpointRejected(t *testing.T) {
	c := newCluster(t, 1, Config{})
	key := shardKey(0)
	c.stream.put(key, 3)
	a := c.start("A")
	a.noCheckpoint = true
	c.runUntil(20*time.Second, "A delivers", func() bool { return totalGot(a) == 3 })
	b := c.start("B")
	b.noCheckpoint = true
	a.down = true // paused: its clock runs on, it does nothing
	c.runUntil(30*time.Second, "B takes over", func() bool { return len(c.held("B")) == 1 })
	a.down = false
	// A wakes up and its processor asks for a checkpoint at once.
	c.step(a, Input{Kind: InputCheckpoint, Key: key, Checkpoint: SequenceCheckpoint(c.stream.recs[key][2].Sequence), Token: 99})
	if len(a.cpResults) == 0 || a.cpResults[len(a.cpResults)-1].Err == nil {
		t.Fatalf("stale owner's checkpoint accepted: %+v", a.cpResults)
	}
	if row := c.row(key); row.Owner != "B" || !row.Checkpoint.IsStart() {
		t.Errorf("row after stale checkpoint: %v", row)
	}
	if len(a.lost) != 1 {
		t.Errorf("A's processor was not told of the loss: %v", a.lost)
	}
}

func TestStaleOwnerWriteIsFenced(t *testing.T) {
	// A's own view still says it holds the lease, but the row moved on:
	// its checkpoint write must fail its condition and A must stop.
	c := newCluster(t, 1, Config{})
	key := shardKey(0)
	c.stream.put(key, 3)
	a := c.start("A")
	a.noCheckpoint = true
	c.runUntil(20*time.Second, "A delivers", func() bool { return totalGot(a) == 3 })
	// Another writer takes the row behind A's back.
	row := c.row(key)
	stolen := row.Clone()
	stolen.Owner = "X"
	stolen.Counter++
	if err := c.store.UpdateLease(t.Context(), ExpectOf(row), stolen); err != nil {
		t.Fatal(err)
	}
	c.step(a, Input{Kind: InputCheckpoint, Key: key, Checkpoint: SequenceCheckpoint(c.stream.recs[key][2].Sequence), Token: 7})
	c.run(time.Second)
	if got := c.row(key); got.Owner != "X" || !got.Checkpoint.IsStart() {
		t.Fatalf("fenced write landed: %v", got)
	}
	if len(a.cpResults) != 1 || a.cpResults[0].Err == nil {
		t.Errorf("checkpoint result %+v, want a rejection", a.cpResults)
	}
	if len(c.held("A")) != 0 || len(c.traceOf(TraceLeaseLost, "A", key)) != 1 {
		t.Errorf("A still holds %v", c.held("A"))
	}
}

func TestGracefulShutdownHandsOverAtOnce(t *testing.T) {
	c := newCluster(t, 4, Config{})
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 2)
	}
	a := c.start("A")
	c.runUntil(20*time.Second, "A holds all", func() bool { return len(c.held("A")) == 4 })
	b := c.start("B")
	c.run(time.Second)
	shutdownAt := c.now
	c.step(a, Input{Kind: InputShutdown})
	c.runUntil(5*time.Second, "A stops", func() bool { return a.stopped })
	stopAt := c.now
	c.runUntil(c.cfg.withDefaults().TakeInterval+2*time.Second, "B takes all", func() bool { return len(c.held("B")) == 4 })
	if took := c.now - stopAt; took >= c.cfg.withDefaults().LeaseDuration+time.Second {
		t.Errorf("handover took %v: released leases should not wait for expiry", took)
	}
	for _, e := range c.traceOf(TraceLeaseAcquired, "B", "") {
		if e.Mono >= shutdownAt && e.Reason != "unowned" {
			t.Errorf("B acquired %s as %s, want unowned", e.Key, e.Reason)
		}
	}
	c.run(3 * time.Second)
	if totalGot(b) != 0 {
		t.Errorf("B re-delivered %d records that A had checkpointed", totalGot(b))
	}
}

func TestRestartUnderSameOwnerResumesAtOnce(t *testing.T) {
	c := newCluster(t, 2, Config{})
	a := c.start("A")
	c.runUntil(20*time.Second, "A holds all", func() bool { return len(c.held("A")) == 2 })
	a.down = true
	c.run(time.Second)
	restartAt := c.now
	a2 := c.start("A")
	c.runUntil(3*time.Second, "A resumes", func() bool { return len(a2.w.Held()) == 2 })
	for _, e := range c.traceOf(TraceLeaseAcquired, "A", "") {
		if e.Mono >= restartAt && e.Reason != "resumed" {
			t.Errorf("restart acquired %s as %s", e.Key, e.Reason)
		}
	}
}
