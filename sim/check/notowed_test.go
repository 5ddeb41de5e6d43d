package check

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

func trim(first, last, reason string) func(r *trace.Record) {
	return func(r *trace.Record) { r.First, r.Last, r.Count, r.Reason = first, last, 1, reason }
}

// TestNotOwed: records trimmed as owed to no processor (before where a
// lease began at LATEST, a dropped corrupt aggregate) are neither lost to
// retention nor owed to S4 or L1, and a batch may read past them; the same
// histories without the marks break S4 or L1, and retention's own trims
// still count as lost.
func TestNotOwed(t *testing.T) {
	o := Options{End: 100 * time.Second, Heal: 40 * time.Second, Bound: 10 * time.Second}
	final := []engine.Lease{{Key: "s0", Owner: "w1", Checkpoint: engine.SequenceCheckpoint("13")}}
	notOwed := trace.NotOwedPrefix + "before an iterator at LATEST"

	// 10 and 11 put before a LATEST iterator, 12 and 13 read
	latest := func(mark string) History {
		b := puts(&hb{}, "s0", 1, "10", "11")
		if mark != "" {
			b.add(2, trace.KindTrim, -1, "s0", trim("10", "11", mark))
		}
		b.add(2, trace.KindInitialized, 1, "s0", cp("LATEST"))
		puts(b, "s0", 3, "12", "13")
		b.add(4, trace.KindReceived, 1, "s0", batch("12", "13", 2))
		return History{Records: b.recs, Final: final, FinalKnown: true}
	}
	vs, lost := checkS4T(t, latest(notOwed), o)
	expect(t, vs, S4, 0)
	if lost != 0 {
		t.Errorf("records no reader owes counted as %d lost to retention", lost)
	}
	vs, _ = checkS4T(t, latest(""), o)
	expect(t, vs, S4, 1)
	if _, lost := checkS4T(t, latest("retention"), o); lost != 2 {
		t.Errorf("a retention trim of 2 unread records: %d lost, want 2", lost)
	}

	// a corrupt aggregate (12) dropped inside a batch: 11 and 13 delivered
	// in one batch that reads past it
	corrupt := func(mark bool) History {
		b := puts(&hb{}, "s0", 1, "10", "11", "12")
		if mark {
			b.add(1, trace.KindTrim, -1, "s0", trim("12", "12", trace.NotOwedPrefix+"a corrupt KPL aggregate, which the engine drops"))
		}
		puts(b, "s0", 1, "13")
		b.add(2, trace.KindInitialized, 1, "s0", cp("TRIM_HORIZON")).
			add(3, trace.KindReceived, 1, "s0", batch("10", "13", 3))
		return History{Records: b.recs, Final: final, FinalKnown: true}
	}
	vs, _ = checkS4T(t, corrupt(true), o)
	expect(t, vs, S4, 0)
	vs, _ = checkS4T(t, corrupt(false), o)
	expect(t, vs, S4, 1)

	// L1: a record put after healing and owed to nobody is not late
	l1 := func(mark bool) History {
		b := (&hb{}).
			add(0, trace.KindProcStart, 1, "", nil).
			add(0, trace.KindShardCreated, -1, "s0", nil).
			add(1, trace.Acting, 1, "s0", nil).
			add(60, trace.KindPut, -1, "s0", seq("10"))
		if mark {
			b.add(60, trace.KindTrim, -1, "s0", trim("10", "10", notOwed))
		}
		return History{Records: b.recs, Final: []engine.Lease{{Key: "s0", Owner: "w1"}}, FinalKnown: true}
	}
	expect(t, checkL1T(t, l1(true), o), L1, 0)
	expect(t, checkL1T(t, l1(false), o), L1, 1)
}

// TestSkippedParent: a closed shard skipped for good (trace.SkippedPrefix)
// counts as ended for its children (S5) and needs no row at the end (S4);
// without the mark its child's start breaks S5.
func TestSkippedParent(t *testing.T) {
	h := func(mark bool) []trace.Record {
		b := (&hb{}).
			add(0, trace.KindShardCreated, -1, "s0", nil).
			add(0, trace.KindPut, -1, "s0", seq("5")).
			add(1, trace.KindShardClosed, -1, "s0", func(r *trace.Record) { r.Last = "5" }).
			add(1, trace.KindShardCreated, -1, "s1", func(r *trace.Record) { r.Parent = "s0" })
		if mark {
			b.add(2, trace.KindTrim, -1, "s0", trim("5", "5", trace.SkippedPrefix+"a closed shard without a lease under LATEST"))
		}
		return b.add(3, trace.KindReceived, 2, "s1", batch("30", "30", 1)).recs
	}
	expect(t, checkS5T(t, h(true), Options{}), S5, 0)
	expect(t, checkS5T(t, h(false), Options{}), S5, 1)
	o := Options{End: 100 * time.Second, Heal: 40 * time.Second, Bound: 10 * time.Second}
	final := []engine.Lease{{Key: "s1", Owner: "w2", Checkpoint: engine.SequenceCheckpoint("30")}}
	vs, _ := checkS4T(t, History{Records: h(true), Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 0)
	vs, _ = checkS4T(t, History{Records: h(false), Final: final, FinalKnown: true}, o)
	expect(t, vs, S4, 1)
}
