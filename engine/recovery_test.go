package engine

import (
	"testing"
	"time"
)

// A worker whose first scan in assigned mode fails scans again after a
// short backoff, not a renew interval later: until that scan comes back it
// takes nothing, and the leases the assigner gives it wait (swarm seed
// 6373 with -renewal session, T2).
func TestStartupScanRetriedSoon(t *testing.T) {
	c := assigned(t, 4, Config{})
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.runUntil(time.Minute, "A holds every lease", func() bool { return len(c.held("A")) == 4 })
	var scans []time.Duration
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id != "B" || call.Op != OpListLeases {
			return Result{}, false
		}
		scans = append(scans, c.now)
		if len(scans) == 1 {
			return Result{Err: errTimeout}, true
		}
		return Result{}, false
	}
	c.start("B")
	renew := c.cfg.withDefaults().RenewInterval
	c.runUntil(2*renew, "B scans again", func() bool { return len(scans) >= 2 })
	if gap := scans[1] - scans[0]; gap > renew/4 {
		t.Errorf("B's first scan failed at %v, it scanned again at %v (%v later): want a short backoff, well within a renew interval (%v)", scans[0], scans[1], gap, renew)
	}
}

// A write of unknown outcome made while the table is out of reach, whose
// resolving reads fail and back off, is resolved as soon as the table
// answers again (the first reply of any store call), not after the
// backoff: the row waits for it (swarm seed 7649 with -renewal session,
// T2: an assignment waited four seconds for its receiver's resolving read).
func TestResolveSentOnceTheTableAnswers(t *testing.T) {
	c := assigned(t, 4, Config{LeaseDuration: 30 * time.Second, RenewInterval: 3 * time.Second})
	for i := 0; i < 4; i++ {
		c.stream.put(shardKey(i), 3)
	}
	c.start("A")
	c.start("B")
	c.runUntil(time.Minute, "A and B hold 2 each", func() bool { return len(c.held("A")) == 2 && len(c.held("B")) == 2 })
	c.run(5 * time.Second)
	out, back := c.now, c.now+8*time.Second // B cannot reach the table in between
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id == "B" && call.Op.IsStore() && c.now < back {
			return Result{Err: errTimeout}, true
		}
		return Result{}, false
	}
	c.runUntil(back, "the outage ends", func() bool { return c.now >= back })
	resolving := false
	for _, h := range c.worker("B").w.held {
		resolving = resolving || h.write != nil && h.write.resolving
	}
	if !resolving {
		t.Fatalf("B has no write being resolved at the end of its outage (%v to %v)", out, back)
	}
	answered := time.Duration(-1) // B's first store reply after the outage
	c.intercept = func(tw *tWorker, call Call) (Result, bool) {
		if tw.id == "B" && call.Op.IsStore() && answered < 0 {
			answered = c.now
		}
		return Result{}, false
	}
	c.runUntil(10*time.Second, "B resolves its writes", func() bool {
		for _, h := range c.worker("B").w.held {
			if h.write != nil && h.write.resolving {
				return false
			}
		}
		return true
	})
	if limit := answered + 200*time.Millisecond; c.now > limit {
		t.Errorf("B's first store call after the outage was answered at %v; its writes were resolved at %v: want at once (by %v)", answered, c.now, limit)
	}
}
