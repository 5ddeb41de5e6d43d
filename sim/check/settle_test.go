package check

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

func TestSettled(t *testing.T) {
	o := Options{End: 1000 * time.Second, Heal: 40 * time.Second, Bound: 10 * time.Second, Balance: true, BalanceSlack: 1}
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	lag := 2 * time.Second
	feed := func(b *hb) *Online {
		c := NewOnline(o)
		for i := range b.recs {
			c.Observe(&b.recs[i])
		}
		return c
	}
	base := func() *hb {
		b := (&hb{}).
			add(0, trace.KindProcStart, 1, "", nil).
			add(0, trace.KindProcStart, 2, "", nil)
		for _, k := range []string{"s0", "s1", "s2", "s3"} {
			b.add(0, trace.KindShardCreated, -1, k, nil)
		}
		return b.add(1, trace.Acting, 1, "s0", nil).add(1, trace.Acting, 1, "s1", nil).
			add(1, trace.Acting, 2, "s2", nil).add(1, trace.Acting, 2, "s3", nil)
	}
	even := []engine.Lease{{Key: "s0", Owner: "w1"}, {Key: "s1", Owner: "w1"}, {Key: "s2", Owner: "w2"}, {Key: "s3", Owner: "w2"}}
	if !feed(base()).Settled(s(100), even, lag) {
		t.Fatalf("every shard acted on, balanced, nothing put: not settled")
	}
	// unbalanced: w1 holds all four (w2 none: below 2-1)
	all1 := []engine.Lease{{Key: "s0", Owner: "w1"}, {Key: "s1", Owner: "w1"}, {Key: "s2", Owner: "w1"}, {Key: "s3", Owner: "w1"}}
	if feed(base()).Settled(s(100), all1, lag) {
		t.Fatalf("settled although one worker holds every lease")
	}
	o.Balance = false
	if !feed(base()).Settled(s(100), all1, lag) {
		t.Fatalf("without L1's balance check, an imbalance keeps a world from settling")
	}
	o.Balance = true
	// a shard without a process acting on it
	if feed(base().add(50, trace.LeaseLost, 2, "s3", nil)).Settled(s(100), even, lag) {
		t.Fatalf("settled although s3 has nobody acting on it")
	}
	// ... which a closed shard may
	closed := base().add(50, trace.LeaseLost, 2, "s3", nil).add(51, trace.KindShardClosed, -1, "s3", nil)
	if !feed(closed).Settled(s(100), even, lag) {
		t.Fatalf("a closed shard without an owner keeps the world from settling")
	}
	// a record waiting longer than the lag; one put within it
	waiting := base().add(90, trace.KindPut, -1, "s0", seq("10"))
	if feed(waiting).Settled(s(100), even, lag) {
		t.Fatalf("settled although a record put 10 s ago was never delivered")
	}
	if !feed(waiting).Settled(s(91), even, lag) {
		t.Fatalf("a record put within the lag keeps the world from settling")
	}
	if !feed(waiting.add(91, trace.KindReceived, 1, "s0", batch("10", "10", 1))).Settled(s(100), even, lag) {
		t.Fatalf("a record delivered keeps the world from settling")
	}
	// no live process
	if feed(base().add(50, trace.KindProcStop, 1, "", nil).add(50, trace.KindProcStop, 2, "", nil)).Settled(s(100), nil, lag) {
		t.Fatalf("settled without a live process")
	}
}

// TestSetEnd ends a history earlier than the checkers were told: L1's
// windows and the end-of-run checks follow the new end.
func TestSetEnd(t *testing.T) {
	o := Options{End: 1000 * time.Second, Heal: 40 * time.Second, Bound: 10 * time.Second}
	b := (&hb{}).
		add(0, trace.KindProcStart, 1, "", nil).
		add(0, trace.KindShardCreated, -1, "s0", nil).
		add(1, trace.Acting, 1, "s0", nil).
		// put at 75 and received 20 s later: late, inside the window of
		// an end at 1000 s, outside that of an end at 80 s ([50 s, 70 s])
		add(75, trace.KindPut, -1, "s0", seq("10")).
		add(95, trace.KindReceived, 1, "s0", batch("10", "10", 1))
	run := func(end time.Duration) []Violation {
		c := NewOnline(o)
		for i := range b.recs {
			c.Observe(&b.recs[i])
		}
		if end > 0 {
			c.SetEnd(end)
		}
		rep, _ := c.Finish(nil, false)
		return rep.Violations
	}
	expect(t, run(0), L1, 1)
	expect(t, run(80*time.Second), L1, 0)
	// the end moves the ownership window too: the shard's owner lost it at
	// 70 s; by an end at 75 s the gap (5 s) is within the bound, by one at
	// 100 s (30 s) past it
	lost := append(append([]trace.Record(nil), b.recs[:3]...),
		trace.Record{Seq: 4, T: 70 * time.Second, Kind: trace.LeaseLost, Proc: 1, Owner: "w1", Key: "s0"})
	gap := func(end time.Duration) []Violation {
		c := NewOnline(o)
		for i := range lost {
			c.Observe(&lost[i])
		}
		c.SetEnd(end)
		rep, _ := c.Finish(nil, false)
		return rep.Violations
	}
	expect(t, gap(75*time.Second), L1, 0)
	expect(t, gap(100*time.Second), L1, 1)
}
