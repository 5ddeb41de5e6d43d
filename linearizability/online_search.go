package linearizability

import "github.com/shardlease/shardlease/engine"

// kop is one call in one key's open window, in the part of a row the
// trace carries (owner, counter, checkpoint).
type kop struct {
	call, ret     int64 // ret: math.MaxInt64 while open
	done          bool
	op            engine.Op
	outcome       Outcome
	unconditional bool
	exp           engine.Expect
	row           trow // the row a write writes, or a read returned
}

// trow is a row as the trace carries it.
type trow struct {
	owner   string
	counter int64
	cp      engine.Checkpoint
}

// ostate is one key's state: absent, or a row.
type ostate struct {
	present bool
	row     trow
}

// cond reports whether the condition of write op holds in s.
func (op *kop) cond(s *ostate) bool {
	if op.op == engine.OpCreateLease {
		return !s.present
	}
	return s.present && (op.unconditional || (s.row.owner == op.exp.Owner && s.row.counter == op.exp.Counter))
}

// after returns the state write op leaves.
func (op *kop) after() ostate {
	if op.op == engine.OpDeleteLease {
		return ostate{}
	}
	return ostate{present: true, row: op.row}
}

// search returns the states a key may be in after window w, starting in
// any of from, appended to dst: every linearization of w (each call placed
// between its call and return times, in an order that respects real time)
// whose outcomes the specification allows, and where it ends. A write of
// unknown outcome applies (if its condition holds) or not. ok is false if
// the search ran out of budget.
func search(from []ostate, w []*kop, budget int, dst []ostate) (out []ostate, ok bool) {
	var buf [2]ostate
	out = dst
	if len(w) == 1 {
		// the common window: one call
		for i := range from {
			for _, n := range branches(&from[i], w[0], &buf) {
				out = addState(out, n)
			}
		}
		return out, true
	}
	if len(w) > maxWindow {
		return nil, false
	}
	// pred[i]: the calls that returned before call i was made (they come
	// first in every linearization)
	pred := make([]bits, len(w))
	for i, a := range w {
		for j, b := range w {
			if i != j && b.ret < a.call {
				pred[i].set(j)
			}
		}
	}
	var full bits
	for i := range w {
		full.set(i)
	}
	// the distinct states met; the search's nodes name them by index
	var canon []ostate
	intern := func(s ostate) int {
		for i := range canon {
			if canon[i] == s {
				return i
			}
		}
		canon = append(canon, s)
		return len(canon) - 1
	}
	type node struct {
		mask bits
		s    int
	}
	seen := map[node]bool{}
	var stack []node
	for i := range from {
		stack = append(stack, node{s: intern(from[i])})
	}
	steps := 0
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		// Calls that cannot change the row (reads, writes that failed
		// their condition) and may come next and hold now are placed at
		// once: if any order works, one that places them here does (they
		// change nothing, and placing them early only frees the calls
		// after them). This keeps a burst of failed creates linear.
		cur := canon[n.s]
		for again := true; again; {
			again = false
			for i := range w {
				if n.mask.has(i) || !pred[i].within(&n.mask) || !w[i].readOnly() {
					continue
				}
				if len(branches(&cur, w[i], &buf)) == 1 {
					n.mask.set(i)
					again = true
				}
			}
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		if steps++; steps > budget {
			return nil, false
		}
		if n.mask == full {
			out = addState(out, canon[n.s])
			continue
		}
		for i := range w {
			if n.mask.has(i) || !pred[i].within(&n.mask) || w[i].readOnly() {
				continue
			}
			for _, s := range branches(&cur, w[i], &buf) {
				m := n.mask
				m.set(i)
				stack = append(stack, node{m, intern(s)})
			}
		}
	}
	return out, true
}

// maxWindow is the most calls a window may have (its search is unknown
// beyond): a bit each in bits.
const maxWindow = 64 * len(bits{})

// bits is a set of a window's calls.
type bits [16]uint64

func (b *bits) set(i int)      { b[i>>6] |= 1 << (i & 63) }
func (b *bits) has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }

// within reports whether every call of b is in c.
func (b *bits) within(c *bits) bool {
	for i := range b {
		if b[i]&^c[i] != 0 {
			return false
		}
	}
	return true
}

// readOnly reports whether op leaves the row as it found it, whatever it
// is: a read, or a write that failed its condition.
func (op *kop) readOnly() bool {
	return op.op == engine.OpGetLease || op.outcome == OutcomeConditionFailed
}

// branches returns the states op may leave s in (in buf): none if its
// outcome is impossible from s. A read must see s; a write that applied
// needs its condition, one that failed its condition needs it broken, and
// one of unknown outcome may leave s as it was or (if its condition holds)
// apply.
func branches(s *ostate, op *kop, buf *[2]ostate) []ostate {
	switch {
	case op.op == engine.OpGetLease:
		if (op.outcome == OutcomeOK && s.present && s.row == op.row) || (op.outcome == OutcomeNotFound && !s.present) {
			buf[0] = *s
			return buf[:1]
		}
		return nil
	case op.outcome == OutcomeOK:
		if op.cond(s) {
			buf[0] = op.after()
			return buf[:1]
		}
		return nil
	case op.outcome == OutcomeConditionFailed:
		if !op.cond(s) {
			buf[0] = *s
			return buf[:1]
		}
		return nil
	}
	buf[0] = *s
	if op.cond(s) {
		buf[1] = op.after()
		return buf[:2]
	}
	return buf[:1]
}

// addState adds s to the set ss.
func addState(ss []ostate, s ostate) []ostate {
	for i := range ss {
		if ss[i] == s {
			return ss
		}
	}
	return append(ss, s)
}
