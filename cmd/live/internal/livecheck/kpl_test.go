package livecheck

import (
	"strings"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// subs sets the sub-sequence numbers of a batch's first and last user
// records.
func subs(first, last int32) func(r *trace.Record) {
	return func(r *trace.Record) { r.FirstSub, r.LastSub = first, last }
}

// atSub sets the checkpoint (seq, sub) of a write or a notice.
func atSub(seq string, sub int64) func(r *trace.Record) {
	return func(r *trace.Record) { r.Checkpoint = engine.Checkpoint{Sequence: seq, SubSequence: sub} }
}

// kplProducer puts 1, a KPL aggregate 2 of three user records, and 3.
func kplProducer() *hb {
	p := &hb{}
	p.add(100, trace.KindPut, "producer", 9, "s0", putSeq("1"))
	p.add(101, trace.KindPut, "producer", 9, "s0", putSeq("2"), func(r *trace.Record) { r.Count = 3 })
	p.add(102, trace.KindPut, "producer", 9, "s0", putSeq("3"))
	return p
}

// kplWorker reads s0 in the given batches ([first, last] user records
// with their counts) and checkpoints at at.
func kplWorker(at engine.Checkpoint, batches ...[5]any) *hb {
	a := &hb{}
	a.add(0, trace.KindProcStart, "w1", 100, "", reason(workerCfg))
	a.wr(10, "w1", 100, "s0", 1, "take", "", 1, "w1", 2, "TRIM_HORIZON")
	a.add(11, trace.LeaseAcquired, "w1", 100, "s0", reason("unowned"))
	a.add(12, trace.Acting, "w1", 100, "s0", cp("TRIM_HORIZON"))
	a.add(13, trace.KindInitialized, "w1", 100, "s0", cp("TRIM_HORIZON"))
	for i, b := range batches {
		f := batch(b[0].(string), b[2].(string), b[4].(int))
		s := subs(int32(b[1].(int)), int32(b[3].(int)))
		a.add(float64(200+10*i), trace.Delivered, "w1", 100, "s0", f, s)
		a.add(float64(201+10*i), trace.KindReceived, "w1", 100, "s0", f, s)
		a.add(float64(204+10*i), trace.KindDone, "w1", 100, "s0", reason("ok"))
	}
	a.wr(300, "w1", 100, "s0", 2, "checkpoint", "w1", 2, "w1", 3, at.Sequence)
	a.recs[len(a.recs)-2].Checkpoint = at // the send
	a.add(301, trace.KindCheckpointAck, "w1", 100, "s0", atSub(at.Sequence, at.SubSequence), func(r *trace.Record) { r.Outcome = trace.OutcomeOK })
	a.wr(400, "w1", 100, "s0", 3, "release", "w1", 3, "", 4, at.Sequence)
	a.recs[len(a.recs)-2].Checkpoint = at
	a.add(402, trace.KindProcStop, "w1", 100, "", reason("exit"))
	return a
}

// TestKPLUserRecords: live check counts the user records of KPL
// aggregates, delivered and covered at (sequence, sub-sequence).
func TestKPLUserRecords(t *testing.T) {
	end := engine.SequenceCheckpoint("3")
	final := func(cp engine.Checkpoint) []engine.Lease {
		return []engine.Lease{{Key: "s0", Counter: 4, Checkpoint: cp}}
	}

	// every user record, in two batches that split the aggregate
	a := kplWorker(end, [5]any{"1", 0, "2", 1, 3}, [5]any{"2", 2, "3", 0, 2})
	rep := run(t, final(end), a, kplProducer())
	if rep.Failed() || rep.Produced != 5 || rep.Aggregated != 3 || rep.Delivered != 5 || rep.Lost != 0 || rep.Uncovered != 0 {
		t.Fatalf("want a clean pass over 5 user records: produced %d delivered %d lost %d uncovered %d: %v",
			rep.Produced, rep.Delivered, rep.Lost, rep.Uncovered, rep.Violations)
	}

	// the rest of the aggregate after its first user record never came
	// (a resume after its sequence number would do that)
	a = kplWorker(end, [5]any{"1", 0, "2", 0, 2}, [5]any{"3", 0, "3", 0, 1})
	rep = run(t, final(end), a, kplProducer())
	if !rep.Failed() || rep.Lost != 2 || rep.Invariants[check.S4] == 0 {
		t.Fatalf("want 2 user records lost and S4: lost %d, S4 %d", rep.Lost, rep.Invariants[check.S4])
	}
	if ex := strings.Join(rep.LostExamples, " "); !strings.Contains(ex, "s0/2/1") || !strings.Contains(ex, "s0/2/2") {
		t.Errorf("lost examples %q do not name 2/1 and 2/2", ex)
	}

	// a final checkpoint inside the aggregate leaves its rest uncovered
	mid := engine.Checkpoint{Sequence: "2", SubSequence: 1}
	a = kplWorker(mid, [5]any{"1", 0, "3", 0, 5})
	rep = run(t, final(mid), a, kplProducer())
	if !rep.Failed() || rep.Uncovered != 2 {
		t.Fatalf("want 2/2 and 3 uncovered by 2/1: uncovered %d %v", rep.Uncovered, rep.UncoveredEx)
	}

	// a batch of 5 over 1..3 that holds only 4 user records skips one
	a = kplWorker(end, [5]any{"1", 0, "3", 0, 4})
	rep = run(t, final(end), a, kplProducer())
	if !rep.Failed() || rep.Invariants[check.S4] == 0 {
		t.Fatalf("a batch that left a user record out passed: %v", rep.Violations)
	}
	// nor is it taken for unrecorded producers
	if rep.Unrecorded != 0 {
		t.Errorf("unrecorded %d, want 0", rep.Unrecorded)
	}
}
