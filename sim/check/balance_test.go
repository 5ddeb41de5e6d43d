package check

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// handoff adds a completed balance move of key from owner proc from to
// owner proc to, requested by the assigner (proc 2) at t.
func handoffMove(b *hb, t float64, key string, from, to int32) *hb {
	fo, tw := "w"+itoa(int(from)), "w"+itoa(int(to))
	return b.add(t, trace.Assigned, 2, key, func(r *trace.Record) { r.Reason, r.Previous = "handoff to "+tw, fo }).
		add(t+0.5, trace.LeaseReleased, from, key, reason("handed over to "+tw)).
		add(t+1, trace.LeaseAcquired, to, key, reason("assigned"))
}

// TestB1: in a steady fleet a lease moves once within MoveQuiet, and no
// member both receives and gives leases for balance; a change of the
// fleet starts a new steady stretch.
func TestB1(t *testing.T) {
	o := Options{End: time.Hour, Timing: shippedTiming()}
	// one move, another lease another way: fine
	b := handoffMove(fleet(), 100, "a", 0, 1)
	handoffMove(b, 110, "b", 2, 1)
	expect(t, CheckB1(b.recs, o), B1, 0)
	// the same lease back within ten minutes: moved twice, and w1 gives
	// after it received
	b = handoffMove(fleet(), 100, "a", 0, 1)
	handoffMove(b, 200, "a", 1, 0)
	expect(t, CheckB1(b.recs, o), B1, 1)
	// another lease, the other way: the first move is undone
	b = handoffMove(fleet(), 100, "a", 0, 1)
	handoffMove(b, 150, "b", 1, 2)
	expect(t, CheckB1(b.recs, o), B1, 1)
	// a worker started in between: the fleet changed, a new stretch
	b = handoffMove(fleet(), 100, "a", 0, 1)
	b.add(120, trace.KindProcStart, 5, "", nil)
	handoffMove(b, 150, "b", 1, 2)
	expect(t, CheckB1(b.recs, o), B1, 0)
	// ... that is steady again once the member list has settled
	b = handoffMove(fleet(), 100, "a", 0, 1)
	b.add(120, trace.KindProcStart, 5, "", nil)
	handoffMove(b, 150, "b", 1, 2)
	handoffMove(b, 160, "c", 2, 1)
	expect(t, CheckB1(b.recs, o), B1, 1)
	// moves right after the fleet changed are not held to it
	b = fleet()
	b.add(95, trace.KindProcStart, 5, "", nil)
	handoffMove(b, 100, "a", 0, 1)
	handoffMove(b, 101, "b", 1, 2)
	expect(t, CheckB1(b.recs, o), B1, 0)
	// steals of workers that take leases themselves: the victim's loss is
	// part of the move; a thief that is then stolen from has undone it if
	// a steal took it past the fair share, or if the steals go back and
	// forth between two workers
	scan := *shippedTiming()
	scan.Assigner, scan.Scan = false, true
	so := Options{End: time.Hour, Timing: &scan}
	steal := func(b *hb, t float64, key string, from, to int32) *hb {
		return b.add(t, trace.LeaseAcquired, to, key, func(r *trace.Record) { r.Reason, r.Previous = "stolen", "w"+itoa(int(from)) }).
			add(t+1, trace.LeaseLost, from, key, reason("condition failed: the row changed under renew"))
	}
	// holding: w0 9 leases (a0..a8), w1 6 (b0..b5), w2 4 (c0..c3): 19,
	// a fair share of 6 to 7
	holding := func() *hb {
		b := &hb{}
		b.add(0, trace.KindProcStart, 0, "", nil).add(0, trace.KindProcStart, 1, "", nil).add(0, trace.KindProcStart, 2, "", nil)
		for p, n := range []int{9, 6, 4} {
			for i := 0; i < n; i++ {
				b.add(1, trace.LeaseAcquired, int32(p), string(rune('a'+p))+itoa(i), reason("unowned"))
			}
		}
		return b
	}
	b = holding()
	steal(b, 100, "a0", 0, 1) // w1 7
	steal(b, 110, "a1", 0, 2) // w2 5, w0 7
	expect(t, CheckB1(b.recs, so), B1, 0)
	// two thieves at once leave w0 and w1 tied at the most (7, 7, 5), and
	// w2 steals from w1, which has just stolen (swarm seed 62 after the
	// merge of the faults branch): every steal kept within the fair
	// share, and no lease goes back: no churn
	b = holding()
	steal(b, 100, "a0", 0, 1) // w0 8, w1 7, w2 4
	steal(b, 110, "a1", 0, 2) // w0 7, w1 7, w2 5
	steal(b, 120, "a0", 1, 2) // w0 7, w1 6, w2 6
	expect(t, CheckB1(b.recs, so), B1, 0)
	// a steal that took the thief above the fair share, then undone
	b = holding()
	steal(b, 100, "a0", 0, 1) // w1 7
	steal(b, 105, "a1", 0, 1) // w1 8: above 7
	steal(b, 120, "a1", 1, 2)
	expect(t, CheckB1(b.recs, so), B1, 1)
	// a steal that takes the victim below the fair share after it stole
	b = holding()
	steal(b, 100, "a0", 0, 1) // w0 8, w1 7
	steal(b, 110, "b0", 1, 2) // w1 6, w2 5
	steal(b, 120, "b1", 1, 2) // w1 5: below 6
	expect(t, CheckB1(b.recs, so), B1, 1)
	// the steals go back and forth between two workers
	b = holding()
	steal(b, 100, "a0", 0, 1)
	steal(b, 120, "b0", 1, 0)
	expect(t, CheckB1(b.recs, so), B1, 1)
	// a worker stolen from that steals past the fair share
	b = holding()
	steal(b, 100, "b0", 1, 2) // w1 5, w2 5
	steal(b, 110, "a0", 0, 1) // w1 6
	expect(t, CheckB1(b.recs, so), B1, 0)
	steal(b, 120, "a1", 0, 1) // w1 7
	steal(b, 130, "a2", 0, 1) // w1 8: above 7
	expect(t, CheckB1(b.recs, so), B1, 1)
}
