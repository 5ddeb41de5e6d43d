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
	// part of the move; a thief that is then stolen from has undone it
	scan := *shippedTiming()
	scan.Assigner, scan.Scan = false, true
	steal := func(b *hb, t float64, key string, from, to int32) *hb {
		return b.add(t, trace.LeaseAcquired, to, key, func(r *trace.Record) { r.Reason, r.Previous = "stolen", "w"+itoa(int(from)) }).
			add(t+1, trace.LeaseLost, from, key, reason("condition failed: the row changed under renew"))
	}
	b = &hb{}
	b.add(0, trace.KindProcStart, 0, "", nil).add(0, trace.KindProcStart, 1, "", nil).add(0, trace.KindProcStart, 2, "", nil)
	steal(b, 100, "a", 0, 1)
	steal(b, 110, "b", 0, 2)
	expect(t, CheckB1(b.recs, Options{End: time.Hour, Timing: &scan}), B1, 0)
	steal(b, 150, "c", 1, 2)
	expect(t, CheckB1(b.recs, Options{End: time.Hour, Timing: &scan}), B1, 1)
}
