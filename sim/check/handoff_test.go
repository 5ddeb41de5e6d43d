package check

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

func reason(s string) func(r *trace.Record) { return func(r *trace.Record) { r.Reason = s } }

// moveHistory builds a history: w1 acts on k from 100, delivers 101..150,
// is asked to shut down, its processor asks for checkpoint 150; then
// (release) w1 releases k for reason and w2 acts from start2 and
// delivers from first2. If landed, the checkpoint is written before the
// release is sent.
func moveHistory(landed bool, why, start2, first2 string) *hb {
	b := &hb{}
	b.add(1, trace.Acting, 1, "k", cp("100")).
		add(1.1, trace.Delivered, 1, "k", batch("101", "150", 50)).
		add(2, trace.KindNotice, 1, "k", reason("ShutdownRequested")).
		add(2.1, trace.CheckpointRequested, 1, "k", cp("150"))
	if landed {
		b.add(2.2, trace.CheckpointWritten, 1, "k", cp("150"))
	}
	b.add(2.3, trace.CallSent, 1, "k", reason("release")).
		add(2.4, trace.LeaseReleased, 1, "k", reason(why)).
		add(2.5, trace.Acting, 2, "k", cp(start2)).
		add(2.6, trace.Delivered, 2, "k", batch(first2, "200", 10))
	return b
}

// TestG1: the next owner after a planned move starts at or after what the
// old owner's processor checkpointed before the release was sent, and
// re-delivers nothing when that covered every record it had received.
func TestG1(t *testing.T) {
	o := Options{End: time.Minute}
	// correct: the checkpoint landed, the next owner starts from it
	expect(t, CheckG1(moveHistory(true, "shutdown", "150", "151").recs, o), G1, 0)
	expect(t, CheckG1(moveHistory(true, "handed over to w2", "150", "151").recs, o), G1, 0)
	// the release raced ahead of the checkpoint: the next owner starts at
	// the older stored one
	for _, why := range []string{"shutdown", "handed over to w2"} {
		vs := CheckG1(moveHistory(false, why, "100", "101").recs, o)
		expect(t, vs, G1, 1)
		if v := vs[0]; v.Key != "k" || len(v.Workers) != 2 || v.Workers[0] != "w2#2" || v.Workers[1] != "w1#1" {
			t.Fatalf("violation %v", v)
		}
	}
	// a shard's end is no planned move
	expect(t, CheckG1(moveHistory(false, "shard end", "100", "101").recs, o), G1, 0)
	// the next owner starts at the checkpoint but re-delivers it
	expect(t, CheckG1(moveHistory(true, "shutdown", "150", "150").recs, o), G1, 1)
	// a checkpoint the worker refused before the release (its processor
	// was too slow for the handoff) is not owed
	b := &hb{}
	b.add(1, trace.Acting, 1, "k", cp("100")).
		add(1.1, trace.Delivered, 1, "k", batch("101", "150", 50)).
		add(2.1, trace.CheckpointRequested, 1, "k", cp("150")).
		add(2.2, trace.CheckpointRejected, 1, "k", func(r *trace.Record) { r.Checkpoint.Sequence, r.Reason = "150", "the lease is being handed over" }).
		add(2.3, trace.CallSent, 1, "k", reason("release")).
		add(2.4, trace.LeaseReleased, 1, "k", reason("handed over to w2")).
		add(2.5, trace.Acting, 2, "k", cp("100")).
		add(2.6, trace.Delivered, 2, "k", batch("101", "200", 100))
	expect(t, CheckG1(b.recs, o), G1, 0)
	// a request that comes after the release was sent is not owed either
	b = &hb{}
	b.add(1, trace.Acting, 1, "k", cp("100")).
		add(1.1, trace.Delivered, 1, "k", batch("101", "150", 50)).
		add(2.3, trace.CallSent, 1, "k", reason("release")).
		add(2.35, trace.CheckpointRequested, 1, "k", cp("150")).
		add(2.4, trace.LeaseReleased, 1, "k", reason("shutdown")).
		add(2.5, trace.Acting, 2, "k", cp("100"))
	expect(t, CheckG1(b.recs, o), G1, 0)
	// checkpoints compare as numbers: 99 is below 100
	b = &hb{}
	b.add(1, trace.Acting, 1, "k", cp("90")).
		add(1.1, trace.Delivered, 1, "k", batch("91", "100", 10)).
		add(2.1, trace.CheckpointRequested, 1, "k", cp("100")).
		add(2.3, trace.CallSent, 1, "k", reason("release")).
		add(2.4, trace.LeaseReleased, 1, "k", reason("shutdown")).
		add(2.5, trace.Acting, 2, "k", cp("99"))
	expect(t, CheckG1(b.recs, o), G1, 1)
}

// TestPlannedFigures: a planned move's gap is a handoff gap, not a
// failover; its re-deliveries are counted apart; a move whose processor
// checkpointed everything counts as checkpointed.
func TestPlannedFigures(t *testing.T) {
	b := moveHistory(true, "shutdown", "150", "151")
	// an unplanned end on another key: w1 loses j, w2 takes it 3s later
	b.add(3, trace.Acting, 1, "j", cp("10")).
		add(3.1, trace.Delivered, 1, "j", batch("11", "20", 10)).
		add(4, trace.LeaseLost, 1, "j", nil).
		add(7, trace.Acting, 2, "j", cp("10")).
		add(7.1, trace.Delivered, 2, "j", batch("11", "30", 20))
	var recs []trace.Record
	for _, r := range b.recs {
		recs = append(recs, r)
		if r.Kind == trace.Delivered { // the processor's receipt too
			x := r
			x.Kind = trace.KindReceived
			recs = append(recs, x)
		}
	}
	for i := range recs {
		recs[i].Seq = uint64(i + 1)
	}
	for _, k := range []string{"k", "j"} {
		for i := 11; i <= 200; i++ {
			recs = append([]trace.Record{{Kind: trace.KindPut, Key: k, First: itoa(i), Worker: -1, Proc: -1}}, recs...)
		}
	}
	c := NewOnline(Options{End: time.Minute, Forget: true})
	for i := range recs {
		c.Observe(&recs[i])
	}
	_, f := c.Finish(nil, false)
	if f.PlannedMoves != 1 || f.CheckpointedMoves != 1 || len(f.HandoffGaps) != 1 || f.HandoffGaps[0] != 1400*time.Millisecond {
		t.Errorf("planned moves %d (checkpointed %d), gaps %v; want 1 (1), [1.4s] (last act 1.1s: a delivery)", f.PlannedMoves, f.CheckpointedMoves, f.HandoffGaps)
	}
	if len(f.Failovers) != 1 || f.Failovers[0] != 3900*time.Millisecond {
		t.Errorf("failovers %v, want [3.9s]", f.Failovers)
	}
	if f.Handoffs != 2 || f.PlannedRedelivered != 0 || f.Redelivered != 10 {
		t.Errorf("handoffs %d, re-delivered %d (planned %d); want 2, 10 (0)", f.Handoffs, f.Redelivered, f.PlannedRedelivered)
	}
	// without Forget: the same
	g := Measure(recs, time.Minute)
	if g.PlannedMoves != 1 || len(g.HandoffGaps) != 1 || len(g.Failovers) != 1 || g.Redelivered != 10 || g.PlannedRedelivered != 0 {
		t.Errorf("Measure: %+v", g)
	}
}
