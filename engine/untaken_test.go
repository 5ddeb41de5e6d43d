package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// startXAB starts X (the assigner, started first), then A and B, on 6
// shards, and runs until they hold 2 each.
func startXAB(t *testing.T) *cluster { return startXABWith(t, Config{}) }

// startXABWith is startXAB with cfg (in assigned mode).
func startXABWith(t *testing.T, cfg Config) *cluster {
	c := assigned(t, 6, cfg)
	for i := 0; i < 6; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("X")
	c.run(time.Second)
	c.start("A")
	c.start("B")
	c.runUntil(2*time.Minute, "balanced 2-2-2", func() bool {
		return len(c.held("X")) == 2 && len(c.held("A")) == 2 && len(c.held("B")) == 2
	})
	if c.assignerOf() != "X" {
		t.Fatalf("the assigner is %q, want X", c.assignerOf())
	}
	c.run(5 * time.Second)
	return c
}

// assignedTo returns the first TraceAssigned event at or after from that
// names to as the receiver (reason "to <to>: ..."), or false.
func (c *cluster) assignedTo(to string, from time.Duration) (TraceEvent, bool) {
	for _, e := range c.trace {
		if e.Kind == TraceAssigned && e.Mono >= from && strings.HasPrefix(e.Reason, "to "+to+": ") {
			return e, true
		}
	}
	return TraceEvent{}, false
}

// An assignment its receiver does not take (its reads of what waits for
// it fail: cut off from the index, a member all the same) goes to another
// member once it has stood still for three poll intervals in the
// assigner's view (untakenWait), not before, and not a lease duration
// later as it used to.
func TestUntakenAssignmentReassignedAfterAFewPolls(t *testing.T) {
	c := startXAB(t)
	cfg := c.cfg.withDefaults()
	d, wait := cfg.LeaseDuration, 3*cfg.PendingPollInterval
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id == "A" && call.Op == OpListPending {
			return Result{Err: errors.New("cut off from the index")}, true
		}
		return Result{}, false
	}
	c.worker("B").down = true // B's leases expire, and go to A first (least loaded, by id)
	crash := c.now
	var asg TraceEvent
	c.runUntil(2*d, "a lease of B assigned to A", func() bool {
		var ok bool
		asg, ok = c.assignedTo("A", crash)
		return ok
	})
	key := asg.Key
	c.runUntil(d, "the lease A did not take held by X", func() bool {
		for _, k := range c.held("X") {
			if k == key {
				return true
			}
		}
		return false
	})
	var took time.Duration = -1
	for _, e := range c.traceOf(TraceLeaseAcquired, "X", key) {
		if e.Mono > asg.Mono {
			took = e.Mono
			break
		}
	}
	if took < 0 {
		t.Fatalf("%s: no take by X after the assignment to A at %v", key, asg.Mono)
	}
	if stood := took - asg.Mono; stood < wait {
		t.Errorf("%s: given away %v after its assignment to A, before the wait of %v", key, stood, wait)
	} else if stood > wait+cfg.PendingPollInterval {
		t.Errorf("%s: given away %v after its assignment to A, want within %v (three poll intervals, not a lease duration %v)", key, stood, wait+cfg.PendingPollInterval, d)
	}
	for _, e := range c.traceOf(TraceLeaseAcquired, "", key) {
		if e.Mono > asg.Mono && e.Owner == "A" {
			t.Errorf("%s: taken by A, which never saw its assignment", key)
		}
	}
	if e, ok := c.assignedTo("A", asg.Mono+1); ok && e.Key == key {
		t.Errorf("%s: given back to A, which let it stand", key)
	}
}

// The reassignment of a lease a holder released before its thief acted
// keeps HandoffFrom, so its next receiver still waits a lease duration
// from its own first read of the row before it acts: safety does not rest
// on how long the assigner waited.
func TestUntakenReassignmentKeepsHandoffFrom(t *testing.T) {
	c := startXAB(t)
	key := c.held("A")[0]
	// make the row a release to B that B never takes, as a steal's thief
	// that never acted leaves it (HandoffFrom: its previous owner may
	// still act until its own view expires)
	old := c.row(key)
	row := old.Clone()
	row.Owner, row.Pending, row.HandoffFrom = "", "B", "A"
	row.Counter++
	if err := c.store.UpdateLease(context.Background(), ExpectOf(old), row); err != nil {
		t.Fatal(err)
	}
	c.worker("B").down = true
	start := c.now
	d := c.cfg.withDefaults().LeaseDuration
	var who string
	c.runUntil(4*d, "someone acting on it again", func() bool {
		if r := c.row(key); r.Owner == "" && r.Pending != "B" && r.Pending != "" && r.HandoffFrom != "A" {
			t.Fatalf("%s reassigned without its HandoffFrom: %+v", key, r)
		}
		for _, id := range []string{"A", "X"} {
			if c.firstAct(id, key, start) >= 0 {
				who = id
				return true
			}
		}
		return false
	})
	// the released version was written at start: whoever takes it acts a
	// lease duration after it first saw that version, not before
	if act := c.firstAct(who, key, start); act-start < d {
		t.Errorf("%s: %s acted %v after the release it never waited out, before a lease duration (%v)", key, who, act-start, d)
	}
}

// A receiver that is live but slow (it renews, but its reads of what waits
// for it lag) must not lose its assignments again and again: each lease
// given away untaken waits twice as long the next time (per lease), so
// does each next assignment of a receiver that let one stand (per
// receiver), never more than a lease duration; and a receiver that let an
// assignment stand is given nothing until the assigner sees it alive.
func TestUntakenWaitBacksOff(t *testing.T) {
	c := startXAB(t)
	x := c.worker("X").w
	a := x.asg.as
	if a == nil {
		t.Fatal("X is not the assigner")
	}
	cfg := x.cfg
	p, d := cfg.PendingPollInterval, cfg.LeaseDuration
	o := &observation{ok: true, row: Lease{Key: "k", Pending: "A", Counter: 7}, seenAt: x.now.Mono}
	if got := x.untakenFor(o); got != d {
		t.Errorf("an assignment this assigner did not write: waits %v, want the lease duration %v", got, d)
	}
	a.mine["k"] = 7
	if got := x.untakenFor(o); got != 3*p {
		t.Errorf("a first assignment: waits %v, want three poll intervals %v", got, 3*p)
	}
	a.untaken["k"] = 1
	if got := x.untakenFor(o); got != 6*p {
		t.Errorf("a lease given away untaken once: waits %v, want %v", got, 6*p)
	}
	a.slow["A"] = 1
	if got := x.untakenFor(o); got != min(12*p, d) {
		t.Errorf("and a receiver that let one stand: waits %v, want %v", got, min(12*p, d))
	}
	a.slow["A"] = 10
	if got := x.untakenFor(o); got != d {
		t.Errorf("a receiver that let many stand: waits %v, want at most the lease duration %v", got, d)
	}
	// stalled: given nothing until it shows itself alive
	a.stalled["A"] = x.now.Mono
	a.live["A"] = x.now.Mono - time.Second
	if !x.stalled("A") {
		t.Error("A, which let an assignment stand and showed nothing since, is not stalled")
	}
	loads := map[string]float64{"A": 0, "B": 5, "X": 5}
	if got := x.leastLoaded(loads, "", []string{"A", "B", "X"}); got == "A" {
		t.Error("a stalled member was given a lease while another was left")
	}
	if got := x.leastLoaded(loads, "B", []string{"A", "B"}); got != "A" {
		t.Errorf("with no other member left, leastLoaded gave %q, want the stalled A", got)
	}
	a.live["A"] = x.now.Mono + time.Second
	if x.stalled("A") {
		t.Error("A, seen renewing since, is still stalled")
	}
}

// A take of the assigner row that a re-read found not applied may still
// land (a ghost): its worker never knows it holds the row, and a worker
// that takes the row over once it expires reassigns at once every lease
// written under the first one's writer, as the previous assigner's. So
// until the row has moved on (or the worker takes it back), the worker's
// leases are bound as by a take of unknown outcome: it acts on none past
// the ghost's send and a lease duration less the margin (swarm seed 8060
// with -renewal session: S1).
func TestAssignerGhostBindsTheLeases(t *testing.T) {
	c := startXAB(t)
	cfg := c.cfg.withDefaults()
	var ghost Call
	var sentAt time.Duration
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		switch {
		case tw.id == "A" && call.Key == AssignerKey:
			return Result{Err: ErrThrottled}, true // A does not take it
		case tw.id == "B" && call.Key == AssignerKey && call.Op == OpUpdateLease && ghost.Key == "":
			ghost, sentAt = call, c.now
			return Result{Err: errTimeout}, true // not applied yet
		case tw.id == "B" && call.Key == AssignerKey && call.Op == OpUpdateLease:
			return Result{Err: ErrThrottled}, true // its later takes are refused
		case tw.id == "B" && call.Key == AssignerKey && call.Op == OpGetLease && ghost.Key != "" && c.now > sentAt+time.Second:
			return Result{Err: ErrThrottled}, true // B reads the row no more (a worker that is no deputy)
		}
		return Result{}, false
	}
	c.worker("X").down = true
	c.runUntil(3*cfg.LeaseDuration, "B's take of the assigner row sent", func() bool { return ghost.Key != "" })
	c.run(time.Second) // B re-reads the row: not applied
	if err := c.store.UpdateLease(context.Background(), ghost.Expect, ghost.Lease); err != nil {
		t.Fatalf("the ghost's write: %v", err)
	}
	c.run(cfg.PendingPollInterval)
	b := c.worker("B").w
	limit := sentAt + cfg.LeaseDuration - cfg.SafetyMargin
	keys := b.Held()
	if len(keys) == 0 {
		t.Fatal("B holds no lease")
	}
	for _, k := range keys {
		if u := b.ActingUntil(k); u > limit {
			t.Errorf("B acts on %s until %v, past its ghost take of the assigner row (sent at %v) and a lease duration less the margin (%v)", k, u, sentAt, limit)
		}
	}
}

// A worker whose take of the assigner row applied but came back with a
// condition failure (an SDK retry), and whose re-read then finds the row
// taken over since, drops every lease it holds: if its take applied, the
// worker that took the row over reassigns at once the leases written
// under its writer, the previous assigner's (swarm seed 929 with
// -renewal session, S1).
func TestSupersededAssignerTakeDropsTheLeases(t *testing.T) {
	c := startXAB(t)
	cfg := c.cfg.withDefaults()
	var take Call
	readable := false
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		switch {
		case tw.id == "A" && call.Key == AssignerKey:
			return Result{Err: ErrThrottled}, true // A does not take it
		case tw.id == "B" && call.Key == AssignerKey && call.Op == OpUpdateLease && take.Key == "":
			// it applies, and the SDK's retry of it gets a condition failure
			take = call
			if err := c.store.UpdateLease(context.Background(), call.Expect, call.Lease); err != nil {
				t.Errorf("B's take: %v", err)
			}
			return Result{Err: ErrConditionFailed}, true
		case tw.id == "B" && call.Key == AssignerKey && call.Op == OpUpdateLease:
			return Result{Err: ErrThrottled}, true
		case tw.id == "B" && call.Key == AssignerKey && call.Op == OpGetLease && take.Key != "" && !readable:
			return Result{Err: errTimeout}, true // its re-reads fail for now
		}
		return Result{}, false
	}
	c.worker("X").down = true
	c.runUntil(3*cfg.LeaseDuration, "B's take of the assigner row sent", func() bool { return take.Key != "" })
	held := c.held("B")
	if len(held) == 0 {
		t.Fatal("B holds no lease")
	}
	// another worker takes the row over before B's re-read gets through
	over := take.Lease.Clone()
	over.Owner, over.Writer, over.Counter = "Z", "z-nonce", take.Lease.Counter+1
	if err := c.store.UpdateLease(context.Background(), ExpectOf(take.Lease), over); err != nil {
		t.Fatal(err)
	}
	readable = true
	c.run(2 * cfg.PendingPollInterval)
	b := c.worker("B").w
	for _, k := range held {
		if b.Acting(k) {
			t.Errorf("B still acts on %s after its re-read found its take of the assigner row superseded: Z may reassign it at once", k)
		}
	}
}
