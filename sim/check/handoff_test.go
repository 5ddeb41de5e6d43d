package check

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
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
	if f.PlannedMoves != 1 || f.CheckpointedMoves != 1 || len(f.HandoffGaps) != 1 || f.HandoffGaps[0] != 200*time.Millisecond {
		t.Errorf("planned moves %d (checkpointed %d), gaps %v; want 1 (1), [200ms] (from the release sent at 2.3s, after the last act at 1.1s)", f.PlannedMoves, f.CheckpointedMoves, f.HandoffGaps)
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

// TestFailoverFromLastRenewal: an idle shard's owner renews after its last
// act and then crashes; the failover is measured from its last renewal
// (it held the shard until then), not from its last act, in both the
// online and the batch measurement, and a renewal's failed apply does
// not count.
func TestFailoverFromLastRenewal(t *testing.T) {
	b := &hb{}
	b.add(1, trace.Acting, 1, "k", cp("10")).
		add(1.1, trace.Delivered, 1, "k", batch("11", "20", 10)).
		add(4, trace.KindApply, 1, "k", write(engine.OpUpdateLease, trace.WriteRenew, "w1", 2, "w1", 3, "10")).
		add(7, trace.KindApply, 1, "k", write(engine.OpUpdateLease, trace.WriteRenew, "w1", 3, "w1", 4, "10")).
		add(8, trace.KindApply, 1, "k", func(r *trace.Record) {
			write(engine.OpUpdateLease, trace.WriteRenew, "w1", 4, "w1", 5, "10")(r)
			r.Outcome = trace.OutcomeCondition
		}).
		add(9, trace.KindProcStop, 1, "", nil).
		add(19, trace.Acting, 2, "k", cp("20"))
	for i := range b.recs {
		b.recs[i].Seq = uint64(i + 1)
	}
	c := NewOnline(Options{End: time.Minute, Forget: true})
	for i := range b.recs {
		c.Observe(&b.recs[i])
	}
	_, f := c.Finish(nil, false)
	if len(f.Failovers) != 1 || f.Failovers[0] != 12*time.Second {
		t.Errorf("online: failovers %v, want [12s] (from the renewal at 7s, not the act at 1.1s)", f.Failovers)
	}
	g := Measure(b.recs, time.Minute)
	if len(g.Failovers) != 1 || g.Failovers[0] != 12*time.Second {
		t.Errorf("Measure: failovers %v, want [12s]", g.Failovers)
	}
}

// TestRedeliveriesOfALaterTenure: a process that gets a key back later
// receives records after the handoff it made; they are not re-deliveries
// of that handoff (they were not received before the next owner's first
// batch), online and in the batch measurement.
func TestRedeliveriesOfALaterTenure(t *testing.T) {
	b := &hb{}
	b.add(1, trace.Acting, 1, "k", cp("10")).
		add(1.1, trace.Delivered, 1, "k", batch("11", "20", 10)).
		add(2, trace.LeaseReleased, 1, "k", reason("handed over to w2")).
		add(3, trace.Acting, 2, "k", cp("20")).
		add(3.1, trace.Delivered, 2, "k", batch("21", "30", 10)).
		add(4, trace.LeaseReleased, 2, "k", reason("handed over to w1")).
		add(5, trace.Acting, 1, "k", cp("25")).
		add(5.1, trace.Delivered, 1, "k", batch("26", "50", 25))
	var recs []trace.Record
	for i := 11; i <= 60; i++ {
		recs = append(recs, trace.Record{Kind: trace.KindPut, Key: "k", First: itoa(i), Worker: -1, Proc: -1})
	}
	for _, r := range b.recs {
		recs = append(recs, r)
		if r.Kind == trace.Delivered {
			x := r
			x.Kind = trace.KindReceived
			recs = append(recs, x)
		}
	}
	for i := range recs {
		recs[i].Seq = uint64(i + 1)
	}
	c := NewOnline(Options{End: time.Minute, Forget: true})
	for i := range recs {
		c.Observe(&recs[i])
	}
	_, f := c.Finish(nil, false)
	g := Measure(recs, time.Minute)
	for name, x := range map[string]Figures{"online": f, "Measure": g} {
		// the second handoff re-delivers 26..30 (w2 had received them)
		if x.Handoffs != 2 || x.Redelivered != 5 || x.PlannedRedelivered != 5 || x.PlannedMoves != 2 {
			t.Errorf("%s: handoffs %d, re-delivered %d (planned %d), planned moves %d; want 2, 5 (5), 2", name, x.Handoffs, x.Redelivered, x.PlannedRedelivered, x.PlannedMoves)
		}
	}
}

// TestHandoffToAnOwnerThatNeverActed: a lease handed over to w2, which
// crashes before it takes it; w3 takes it when it expires. That is no
// planned move but a failover, measured from the release.
func TestHandoffToAnOwnerThatNeverActed(t *testing.T) {
	b := &hb{}
	b.add(1, trace.Acting, 1, "k", cp("10")).
		add(1.1, trace.Delivered, 1, "k", batch("11", "20", 10)).
		add(2, trace.CallSent, 1, "k", reason("release")).
		add(2.1, trace.LeaseReleased, 1, "k", reason("handed over to w2")).
		add(2.2, trace.KindProcStop, 2, "", nil).
		add(14, trace.Acting, 3, "k", cp("20"))
	c := NewOnline(Options{End: time.Minute, Forget: true})
	for i := range b.recs {
		c.Observe(&b.recs[i])
	}
	_, f := c.Finish(nil, false)
	g := Measure(b.recs, time.Minute)
	for name, x := range map[string]Figures{"online": f, "Measure": g} {
		if x.PlannedMoves != 0 || len(x.HandoffGaps) != 0 || len(x.Failovers) != 1 || x.Failovers[0] != 12*time.Second {
			t.Errorf("%s: planned moves %d, gaps %v, failovers %v; want 0, [], [12s]", name, x.PlannedMoves, x.HandoffGaps, x.Failovers)
		}
	}
}

// TestG2: a planned release waits for every checkpoint its processor
// asked for, refuses none for the handoff's sake before the handoff's
// deadline, and (where the history records the processor's notices)
// comes after the processor was asked to shut down and answered.
func TestG2(t *testing.T) {
	o := Options{End: time.Minute, Timing: shippedTiming()}
	// the checkpoint landed before the release: nothing owed
	expect(t, CheckG2(moveHistory(true, "shutdown", "150", "151").recs, Options{End: time.Minute}), G2, 0)
	// released with the checkpoint still unwritten: G2 at the release
	// itself, whatever the next owner does
	for _, why := range []string{"shutdown", "handed over to w2"} {
		vs := CheckG2(moveHistory(false, why, "150", "151").recs, Options{End: time.Minute})
		expect(t, vs, G2, 1)
		if v := vs[0]; v.Key != "k" || v.Workers[0] != "w1#1" {
			t.Errorf("violation %v", v)
		}
	}
	// a shard's end is no planned move
	expect(t, CheckG2(moveHistory(false, "shard end", "100", "101").recs, o), G2, 0)

	// a handoff that refuses the processor's checkpoint
	refused := func(handAt, at float64) []trace.Record {
		b := &hb{}
		b.add(1, trace.Acting, 1, "k", cp("100")).
			add(1.05, trace.KindInitialized, 1, "k", cp("100")).
			add(1.1, trace.Delivered, 1, "k", batch("101", "150", 50)).
			add(handAt, trace.HandingOver, 1, "k", reason("to w2")).
			add(at, trace.CheckpointRequested, 1, "k", cp("150")).
			add(at, trace.CheckpointRejected, 1, "k", func(r *trace.Record) { r.Checkpoint.Sequence, r.Reason = "150", "the lease is being handed over" }).
			add(at+0.1, trace.CallSent, 1, "k", reason("release")).
			add(at+0.2, trace.LeaseReleased, 1, "k", reason("handed over to w2"))
		return b.recs
	}
	// within half a lease duration of the handoff's start: G2
	expect(t, CheckG2(refused(2, 2.1), o), G2, 1)
	// at the deadline (5 s later) the holder lets go anyway: allowed
	expect(t, CheckG2(refused(2, 7.1), o), G2, 0)

	// an initialized processor asked to shut down, and answering, before
	// the release
	asked := func(notify, answer bool) []trace.Record {
		b := &hb{}
		b.add(1, trace.Acting, 1, "k", cp("100")).
			add(1.05, trace.KindInitialized, 1, "k", cp("100")).
			add(1.1, trace.Delivered, 1, "k", batch("101", "150", 50))
		if notify {
			b.add(2, trace.KindNotice, 1, "k", reason("ShutdownRequested"))
		}
		if answer {
			b.add(2.05, trace.KindDone, 1, "k", reason("ok"))
		}
		b.add(2.3, trace.CallSent, 1, "k", reason("release")).
			add(2.4, trace.LeaseReleased, 1, "k", reason("shutdown"))
		return b.recs
	}
	expect(t, CheckG2(asked(true, true), o), G2, 0)
	expect(t, CheckG2(asked(false, false), o), G2, 1)
	expect(t, CheckG2(asked(true, false), o), G2, 1)
	// without a timing (a history that may not record notices): not
	// checked
	expect(t, CheckG2(asked(false, false), Options{End: time.Minute}), G2, 0)
}

// TestG1FirstBatchAfterAnyMove: after a planned move whose processor had
// checkpointed only part of what it received, the next owner may deliver
// what came after the checkpoint again, but nothing at or below it.
func TestG1FirstBatchAfterAnyMove(t *testing.T) {
	o := Options{End: time.Minute}
	mk := func(first string) []trace.Record {
		b := &hb{}
		b.add(1, trace.Acting, 1, "k", cp("100")).
			add(1.1, trace.Delivered, 1, "k", batch("101", "200", 100)).
			add(2.1, trace.CheckpointRequested, 1, "k", cp("150")).
			add(2.2, trace.CheckpointWritten, 1, "k", cp("150")).
			add(2.3, trace.CallSent, 1, "k", reason("release")).
			add(2.4, trace.LeaseReleased, 1, "k", reason("shutdown")).
			add(2.5, trace.Acting, 2, "k", cp("150")).
			add(2.6, trace.Delivered, 2, "k", batch(first, "210", 10))
		return b.recs
	}
	expect(t, CheckG1(mk("151"), o), G1, 0)
	expect(t, CheckG1(mk("150"), o), G1, 1)
}
