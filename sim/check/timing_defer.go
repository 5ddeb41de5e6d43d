package check

import "time"

// Violations of T1 that wait for the end of the history: the trace shows
// a read only by its reply, so a read on a violation's path that was in
// flight when the violation was judged, and fails later, is known only
// then.

// readKey names the reads of one row by one process.
type readKey struct {
	proc int32
	key  string
}

// deferredV is a violation whose path includes proc's reads of key sent
// in [from, to]: one of them that fails, answered later, disturbed the
// path, and the violation goes.
type deferredV struct {
	v        Violation
	read     readKey
	from, to time.Duration
}

// judge adds v, a violation of a path on which process k.proc read the
// row k.key in [from, to] (the assigner's read of an assignment its
// receiver did not take), once the history has ended: a read sent in that
// window whose failure is answered only later (a timeout) disturbed the
// path, and v goes (soak seed 8396 of 1b4e506: the read timed out 1.4 s
// after the new owner acted). The trace shows a read only by its reply.
func (c *timingChecker) judge(k readKey, from, to time.Duration, v Violation) {
	c.deferred = append(c.deferred, deferredV{v: v, read: k, from: from, to: to})
}

// voidDeferred drops the deferred violations whose path a failed read of
// k, sent at sent, disturbed.
func (c *timingChecker) voidDeferred(k readKey, sent time.Duration) {
	keep := c.deferred[:0]
	for _, d := range c.deferred {
		if d.read != k || sent < d.from || sent > d.to {
			keep = append(keep, d)
		}
	}
	c.deferred = keep
}

// flush adds the deferred violations that no failed read voided.
func (c *timingChecker) flush() {
	for _, d := range c.deferred {
		if len(c.out) < c.o.max() {
			c.out = append(c.out, d.v)
		}
	}
	c.deferred = nil
}
