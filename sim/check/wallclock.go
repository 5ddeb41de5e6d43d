package check

import (
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// W1 is the wall-clock invariant: no lease decision depends on a reading
// of the wall clock. A worker's wall clock may be offset from the others'
// and may step at any moment; lease expiry is timed on monotonic clocks.
const W1 = "W1"

// NonLeasePurposes are the purposes of wall-clock reads (the Reason of a
// trace.WallRead) that decide nothing about leases, so that a lease
// decision in the same step does not depend on them: the start of an
// AT_TIMESTAMP position, and logs. The engine makes none of them today.
var NonLeasePurposes = map[string]bool{"at-timestamp position": true, "log": true}

// w1Checker checks W1 (see CheckW1): a simulator records the engine's
// events of one step together, at one true time, so a lease decision of
// a process at the true time of its latest wall read is taken in the step
// that read the wall clock.
type w1Checker struct {
	o    *Options
	last map[int32]wallRead // the latest wall read of each process
	out  []Violation
}

type wallRead struct {
	t       time.Duration
	seq     uint64
	purpose string
	flagged bool
}

func newW1(o *Options) *w1Checker { return &w1Checker{o: o, last: map[int32]wallRead{}} }

// leaseDecision reports whether r is a lease decision of its process:
// a lease-table write sent, an assignment, a handoff begun, the start or
// end of acting.
func leaseDecision(r *trace.Record) bool {
	switch r.Kind {
	case trace.CallSent, trace.Assigned, trace.HandingOver, trace.Acting, trace.StoppedActing:
		return true
	}
	return false
}

func (c *w1Checker) observe(r *trace.Record) {
	if r.Proc < 0 {
		return
	}
	if r.Kind == trace.WallRead {
		if !NonLeasePurposes[r.Reason] {
			c.last[r.Proc] = wallRead{t: r.T, seq: r.Seq, purpose: r.Reason}
		}
		return
	}
	if len(c.last) == 0 {
		return // no process read the wall clock in a step not over yet
	}
	w, ok := c.last[r.Proc]
	if !ok {
		return
	}
	if r.T != w.t {
		delete(c.last, r.Proc) // a later step
		return
	}
	if !leaseDecision(r) || w.flagged || len(c.out) >= c.o.max() {
		return
	}
	w.flagged = true // once per read
	c.last[r.Proc] = w
	c.out = append(c.out, Violation{Invariant: W1, Key: r.Key, Workers: []string{who(r)}, From: w.t, To: r.T, Seqs: []uint64{w.seq, r.Seq},
		Detail: who(r) + " took a lease decision (" + r.Kind.String() + " " + r.Reason + ") in a step that read the wall clock for " + q(w.purpose)})
}
