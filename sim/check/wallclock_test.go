package check

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// TestW1: a lease decision in the step that read the wall clock breaks
// W1; one in a later step, or after a read for a purpose that decides
// nothing about leases, does not.
func TestW1(t *testing.T) {
	o := Options{End: time.Minute}
	b := &hb{}
	b.add(1, trace.WallRead, 1, "", reason("lease expiry")).
		add(1, trace.CallSent, 1, "k", reason("take"))
	vs := CheckW1(b.recs, o)
	expect(t, vs, W1, 1)
	if v := vs[0]; v.Key != "k" || v.Workers[0] != "w1#1" || len(v.Seqs) != 2 {
		t.Fatalf("violation %v", v)
	}
	// another process's decision at the same time, and this one's in a
	// later step
	b = &hb{}
	b.add(1, trace.WallRead, 1, "", reason("lease expiry")).
		add(1, trace.CallSent, 2, "k", reason("take")).
		add(1.5, trace.Acting, 1, "k", cp("5"))
	expect(t, CheckW1(b.recs, o), W1, 0)
	// a read for a position, then a decision in the same step
	b = &hb{}
	b.add(1, trace.WallRead, 1, "", reason("at-timestamp position")).
		add(1, trace.Acting, 1, "k", cp("5"))
	expect(t, CheckW1(b.recs, o), W1, 0)
	// one violation per read, however many decisions follow
	b = &hb{}
	b.add(1, trace.WallRead, 1, "", reason("x")).
		add(1, trace.CallSent, 1, "k", reason("take")).
		add(1, trace.CallSent, 1, "j", reason("take"))
	expect(t, CheckW1(b.recs, o), W1, 1)
}
