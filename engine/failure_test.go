package engine

import (
	"testing"
	"time"
)

// TestFailedBatchesCountedThenSkipped: the core counts failed deliveries of
// the same records in a row (Notice.Attempt, TraceBatchFailed.Count); a
// Done that is Failed and Skipped passes the batch over (TraceBatchSkipped)
// and reading goes on after it, with the count reset.
func TestFailedBatchesCountedThenSkipped(t *testing.T) {
	u := newUnit(t, Config{})
	u.holdRecords = true
	key := u.holding(shardKey(0), startSeq(), 3)
	all := u.stream.recs[key]
	last := func() Notice {
		recs := u.noticesOf(NoticeRecords, key)
		return recs[len(recs)-1].n
	}
	waitNext := func(n int) {
		for i := 0; len(u.noticesOf(NoticeRecords, key)) == n; i++ {
			if i > 100 {
				t.Fatalf("no delivery after %d", n)
			}
			u.runTo(u.wake)
		}
	}
	u.runTo(u.now + 50*time.Millisecond)
	for attempt := 1; attempt <= 3; attempt++ {
		n := last()
		if n.Attempt != attempt {
			t.Fatalf("delivery %d: Attempt %d, want %d", attempt, n.Attempt, attempt)
		}
		u.step(Input{Kind: InputDone, Key: key, Batch: n.Batch, Failed: true})
		f := u.traceOf(TraceBatchFailed, key)
		if len(f) != attempt || f[attempt-1].Count != attempt || f[attempt-1].First != all[0].Sequence || f[attempt-1].Last != all[2].Sequence {
			t.Fatalf("after failure %d: batch-failed events %v", attempt, f)
		}
		waitNext(attempt)
	}
	n := last()
	if n.Attempt != 4 || n.Records[0].Sequence != all[0].Sequence {
		t.Fatalf("fourth delivery: Attempt %d of %v, want 4 of the same records", n.Attempt, n.Records)
	}
	u.stream.put(key, 2)
	u.step(Input{Kind: InputDone, Key: key, Batch: n.Batch, Failed: true, Skipped: true, Reason: "handed-off"})
	s := u.traceOf(TraceBatchSkipped, key)
	if len(s) != 1 || s[0].Count != 4 || s[0].Reason != "handed-off" || s[0].Last != all[2].Sequence {
		t.Fatalf("batch-skipped events %v, want one after 4 attempts, reason handed-off", s)
	}
	if f := u.traceOf(TraceBatchFailed, key); len(f) != 3 {
		t.Errorf("a skipped batch counted as failed: %v", f)
	}
	waitNext(4)
	n = last()
	if n.Attempt != 1 || n.Records[0].Sequence != u.stream.recs[key][3].Sequence {
		t.Fatalf("after the skip: Attempt %d of %v, want 1 of the records after the skipped batch", n.Attempt, n.Records)
	}
	// a success resets the count too
	u.step(Input{Kind: InputDone, Key: key, Batch: n.Batch, Failed: true})
	waitNext(5)
	u.stream.put(key, 1)
	u.step(Input{Kind: InputDone, Key: key, Batch: last().Batch})
	waitNext(6)
	if a := last().Attempt; a != 1 {
		t.Errorf("after a processed batch: Attempt %d, want 1", a)
	}
}
