package engine

import (
	"testing"
	"time"
)

// stealOne runs A alone on two fed shards, then starts B and runs until B
// has stolen one lease; it returns the stolen key. B has not acted on it
// yet: it waits out A's own view of the lease.
func stealOne(t *testing.T, c *cluster) (b *tWorker, key string) {
	t.Helper()
	c.feed(2)
	c.start("A")
	c.runUntil(20*time.Second, "A holds all", func() bool { return len(c.held("A")) == 2 })
	b = c.start("B")
	for i := 0; i < 400 && len(c.traceOf(TraceLeaseAcquired, "B", "")) == 0; i++ {
		c.run(100 * time.Millisecond)
		c.feed(2)
	}
	acq := c.traceOf(TraceLeaseAcquired, "B", "")
	if len(acq) != 1 || acq[0].Reason != "stolen" {
		t.Fatalf("B's acquisitions: %v", acq)
	}
	key = acq[0].Key
	if row := c.row(key); row.HandoffFrom != "A" {
		t.Fatalf("stolen row %v carries no pending handoff from A", row)
	}
	if len(c.traceOf(TraceDelivered, "B", key)) != 0 {
		t.Fatalf("B acted on %s at once", key)
	}
	return b, key
}

// A lease stolen and released before its thief ever acted still has a
// previous owner that may be acting: the next taker of the unowned row
// must wait it out too (found by the simulator, seeds 185, 600, 646).
func TestStolenThenReleasedLeaseStillWaitsForVictim(t *testing.T) {
	c := newCluster(t, 2, Config{})
	b, key := stealOne(t, c)
	c.step(b, Input{Kind: InputShutdown})
	if !b.stopped {
		c.run(time.Second)
	}
	if row := c.row(key); row.Owner != "" || row.HandoffFrom != "A" {
		t.Fatalf("released row %v: want unowned with the handoff from A kept", row)
	}
	c.start("C")
	for i := 0; i < 300; i++ {
		c.run(100 * time.Millisecond)
		c.feed(2)
	}
	if len(c.traceOf(TraceDelivered, "C", key)) == 0 && len(c.traceOf(TraceDelivered, "A", key)) == 0 {
		t.Fatalf("nobody acted on %s again", key)
	}
	checkSingleOwner(t, c.trace)
	for _, acq := range c.traceOf(TraceLeaseAcquired, "C", key) {
		if acq.Reason == "unowned" {
			d := c.traceOf(TraceDelivered, "C", key)
			if len(d) > 0 && d[0].Mono < acq.Mono+c.cfg.withDefaults().LeaseDuration-time.Second {
				t.Errorf("C acted on the handed-off row at %v, %v after taking it", d[0].Mono, d[0].Mono-acq.Mono)
			}
		}
	}
	if row := c.row(key); row.HandoffFrom != "" && row.Owner != "" && len(c.traceOf(TraceDelivered, row.Owner, key)) > 0 {
		t.Errorf("row %v still marks a handoff after its owner acted", row)
	}
}

// A thief restarted under its own id must not resume a lease it stole and
// never acted on as if nobody else could be acting (found by the rapid
// property runs).
func TestStolenThenRestartedThiefWaitsForVictim(t *testing.T) {
	restartedThiefWaits(t, AssignmentScan)
}

// The same thief restarted in assigned mode (a rolling deploy from scan
// to assigner mode): the start-up scan's resume of its own rows must not
// act at once on a row that still marks a handoff either.
func TestStolenThenRestartedThiefInAssignedModeWaitsForVictim(t *testing.T) {
	restartedThiefWaits(t, AssignmentAssigner)
}

// restartedThiefWaits steals a lease in scan mode, crashes the thief before
// it acts, restarts it under its own id in the given mode, and asserts that
// it waits a lease duration before acting on the lease.
func restartedThiefWaits(t *testing.T, mode string) {
	t.Helper()
	c := newCluster(t, 2, Config{})
	b, key := stealOne(t, c)
	b.down = true // crash
	c.cfg.Assignment = mode
	c.start("B")
	for i := 0; i < 300; i++ {
		c.run(100 * time.Millisecond)
		c.feed(2)
	}
	checkSingleOwner(t, c.trace)
	for _, acq := range c.traceOf(TraceLeaseAcquired, "B", key) {
		if acq.Reason == "resumed" {
			d := c.traceOf(TraceDelivered, "B", key)
			if len(d) == 0 {
				t.Fatalf("the restarted thief never acted on %s", key)
			}
			if d[0].Mono < acq.Mono+c.cfg.withDefaults().LeaseDuration-time.Second {
				t.Errorf("the restarted thief acted on %s at %v, %v after resuming it", key, d[0].Mono, d[0].Mono-acq.Mono)
			}
			return
		}
	}
	t.Errorf("the restarted thief never resumed %s: %v", key, c.traceOf(TraceLeaseAcquired, "B", key))
}

// A holder handing a lease over whose processor holds its batch releases
// the lease at the handoff's deadline, half a lease duration after it
// began, not at its next renewal after it (T2 holds the simulator's runs
// to that).
func TestHandoffDeadlineReleasesOnTime(t *testing.T) {
	u := newUnit(t, Config{})
	u.holdRecords = true // the processor never finishes its batch
	key := u.holding(shardKey(0), startSeq(), 3)
	u.runTo(500 * time.Millisecond)
	h := u.w.holdingOf(key)
	u.w.handOver(h, "other")
	by := h.handOverBy
	u.runTo(by + 50*time.Millisecond)
	var sent []TraceEvent
	for _, e := range u.trace {
		if e.Kind == TraceCallSent && e.Key == key && e.Reason == "release" {
			sent = append(sent, e)
		}
	}
	if len(sent) == 0 || sent[0].Mono > by {
		t.Fatalf("release sent at %v, want at the handoff's deadline %v:\n%s", sent, by, u.dump())
	}
}

// A holder whose last write of a lease was throttled, and which waits out
// that write's backoff, still releases the lease at the handoff's
// deadline: the processor has let go and the receiver waits (swarm seed
// 9588 with -renewal session, T2: the release went half a second late).
func TestHandoffDeadlineReleasesThroughABackoff(t *testing.T) {
	u := newUnit(t, Config{})
	u.holdRecords = true // the processor never finishes its batch
	key := u.holding(shardKey(0), startSeq(), 3)
	u.runTo(500 * time.Millisecond)
	h := u.w.holdingOf(key)
	u.w.handOver(h, "other")
	by := h.handOverBy
	h.retryWriteAt = by + 3*time.Second // a throttled write's backoff (nextBackoff)
	u.runTo(by + 50*time.Millisecond)
	for _, e := range u.trace {
		if e.Kind == TraceCallSent && e.Key == key && e.Reason == "release" {
			if e.Mono > by {
				t.Fatalf("release sent at %v, want at the handoff's deadline %v", e.Mono, by)
			}
			return
		}
	}
	t.Fatalf("no release by %v, the handoff's deadline %v:\n%s", u.now, by, u.dump())
}

// A holder whose processor let a handoff go in time, with a final
// checkpoint, but whose writes of the row wait out the backoff of a failed
// write, sends that checkpoint and the release after it at the handoff's
// deadline, not once the backoff is over (soak seed 91 of d8f57de with
// -renewal session, T2: a 4.5 s backoff held the release past the
// deadline).
func TestHandoffFinalCheckpointGoesAtTheDeadline(t *testing.T) {
	u := newUnit(t, Config{})
	u.holdNotices = map[NoticeKind]bool{NoticeShutdownRequested: true}
	key := u.holding(shardKey(0), startSeq(), 3)
	u.runTo(500 * time.Millisecond)
	h := u.w.holdingOf(key)
	u.w.handOver(h, "other")
	by := h.handOverBy
	h.retryWriteAt = by + 3*time.Second // a failed write's backoff (nextBackoff)
	u.runTo(600 * time.Millisecond)
	sr := u.noticesOf(NoticeShutdownRequested, key)
	if len(sr) != 1 {
		t.Fatalf("shutdown-requested %v, want one for the handoff", sr)
	}
	mid := u.stream.recs[key][1].Sequence
	if n, ok := u.checkpoint(key, SequenceCheckpoint(mid)); ok {
		t.Fatalf("the final checkpoint was answered at once (%v): the backoff did not hold it", n)
	}
	u.step(Input{Kind: InputDone, Key: key, Batch: sr[0].n.Batch}) // the processor lets go in time
	u.runTo(by + 50*time.Millisecond)
	sentAt := map[string]time.Duration{}
	for _, e := range u.trace {
		if _, seen := sentAt[e.Reason]; e.Kind == TraceCallSent && e.Key == key && !seen {
			sentAt[e.Reason] = e.Mono
		}
	}
	for _, what := range []string{"checkpoint", "release"} {
		if at, ok := sentAt[what]; !ok || at > by {
			t.Errorf("%s sent at %v (sent: %v), want by the handoff's deadline %v:\n%s", what, at, ok, by, u.dump())
		}
	}
}
