package check

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// W3 is the invariant "a pending watch is reliable": the contract of
// engine.PendingWatcher, on which a worker with pushed assignments relies
// instead of polling. From the revision a watch was opened at (a
// trace.KindWatch "open" record) until it is lost or closed, or its process
// ends, it reports every write that left a row waiting for its value (the
// trace.KindIndex records of that value), in revision order, each once,
// nothing that was not written; and by the end of the history it has
// reported every such write older than Options.Bound. A watch that resumed
// from the wrong revision after a break skips writes: the worker would
// never be told of them. It is checked as etcd's robustness tests check
// watches (ordered, unique, reliable), over the store's own log of writes,
// online in the simulator: it needs each write's KindIndex record before
// the reports of it, the true-time order of a run (All, for histories
// merged from several processes' clocks, leaves it out).
const W3 = "W3"

// w3Checker checks W3 (see W3).
type w3Checker struct {
	o *Options // the Online's: its End moves with SetEnd
	// events are, per watched value, the writes that left a row waiting
	// for it, in revision order, from the lowest revision an open watch
	// of that value still has to report
	events map[string][]indexEvent
	open   map[watchID]*watchCursor
	out    []Violation
}

type watchID struct {
	proc int32
	who  string
}

// watchCursor is how far an open watch has reported.
type watchCursor struct {
	rev   int64 // the last revision reported (or the one it opened at)
	owner string
	at    time.Duration // when it last reported (or opened)
	seq   uint64
}

type indexEvent struct {
	rev int64
	key string
	t   time.Duration
	seq uint64
}

func newW3(o *Options) *w3Checker {
	return &w3Checker{o: o, events: map[string][]indexEvent{}, open: map[watchID]*watchCursor{}}
}

func (c *w3Checker) add(v Violation) {
	if len(c.out) < c.o.max() {
		v.Invariant = W3
		c.out = append(c.out, v)
	}
}

func (c *w3Checker) observe(r *trace.Record) {
	switch r.Kind {
	case trace.KindIndex:
		if c.watched(r.Reason) {
			c.events[r.Reason] = append(c.events[r.Reason], indexEvent{rev: r.Counter, key: r.Key, t: r.T, seq: r.Seq})
		}
	case trace.KindProcStop:
		for id := range c.open { // each independently
			if id.proc == r.Proc {
				c.close(id)
			}
		}
	case trace.KindWatch:
		id := watchID{r.Proc, r.Reason}
		switch r.Outcome {
		case "open":
			c.open[id] = &watchCursor{rev: r.Counter, owner: who(r), at: r.T, seq: r.Seq}
			c.prune(r.Reason)
		case "change":
			c.change(id, r)
		case "lost", "closed":
			c.close(id)
		}
	}
}

// watched reports whether a watch of who is open.
func (c *w3Checker) watched(who string) bool {
	for id := range c.open {
		if id.who == who {
			return true
		}
	}
	return false
}

func (c *w3Checker) close(id watchID) {
	delete(c.open, id)
	c.prune(id.who)
}

// change is a watch reporting the write of r.Key at revision r.Counter.
func (c *w3Checker) change(id watchID, r *trace.Record) {
	cur := c.open[id]
	where := fmt.Sprintf("the watch of %s on the rows that wait for %q", who(r), id.who)
	if cur == nil {
		c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
			Detail: where + " reported the write of " + r.Key + " at revision " + strconv.FormatInt(r.Counter, 10) + " while no watch of it was open"})
		return
	}
	if r.Counter <= cur.rev {
		c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: cur.at, To: r.T, Seqs: []uint64{cur.seq, r.Seq},
			Detail: fmt.Sprintf("%s reported revision %d after revision %d: out of order, or twice", where, r.Counter, cur.rev)})
		return
	}
	evs := c.events[id.who]
	i := firstFrom(evs, cur.rev+1)
	j := firstFrom(evs, r.Counter)
	if i < j {
		e := evs[i]
		c.add(Violation{Key: e.key, Workers: []string{who(r)}, From: e.t, To: r.T, Seqs: []uint64{e.seq, r.Seq},
			Detail: fmt.Sprintf("%s skipped %d write(s) that left rows waiting for it, the first of %s at revision %d: it reported revision %d after revision %d (did it resume at the wrong revision?)",
				where, j-i, e.key, e.rev, r.Counter, cur.rev)})
	}
	if j == len(evs) || evs[j].rev != r.Counter || evs[j].key != r.Key {
		c.add(Violation{Key: r.Key, Workers: []string{who(r)}, From: r.T, To: r.T, Seqs: []uint64{r.Seq},
			Detail: fmt.Sprintf("%s reported a write of %s at revision %d that did not leave %s waiting for it", where, r.Key, r.Counter, r.Key)})
	}
	cur.rev, cur.at, cur.seq = r.Counter, r.T, r.Seq
	c.prune(id.who)
}

// firstFrom returns the first event at or after revision rev.
func firstFrom(evs []indexEvent, rev int64) int {
	i, _ := slices.BinarySearchFunc(evs, rev, func(e indexEvent, rev int64) int { return cmp.Compare(e.rev, rev) })
	return i
}

// prune forgets the writes of who that every open watch of who has
// reported (all of them, if none is open).
func (c *w3Checker) prune(who string) {
	low, any := int64(0), false
	for id, cur := range c.open {
		if id.who == who && (!any || cur.rev < low) {
			low, any = cur.rev, true
		}
	}
	evs := c.events[who]
	if !any {
		delete(c.events, who)
		return
	}
	if i := firstFrom(evs, low+1); i > 0 {
		c.events[who] = slices.Delete(evs, 0, i)
	}
}

// finish reports the writes an open watch never reported although they are
// older than the bound.
func (c *w3Checker) finish() []Violation {
	ids := make([]watchID, 0, len(c.open))
	for id := range c.open {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b watchID) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.who, b.who))
	})
	for _, id := range ids {
		cur := c.open[id]
		evs := c.events[id.who]
		for _, e := range evs[firstFrom(evs, cur.rev+1):] {
			if e.t < c.o.End-c.o.Bound {
				c.add(Violation{Key: e.key, Workers: []string{cur.owner}, From: e.t, To: c.o.End, Seqs: []uint64{e.seq},
					Detail: fmt.Sprintf("the watch of %s on the rows that wait for %q never reported the write of %s at revision %d (applied at %v; the watch's last report was revision %d at %v)",
						cur.owner, id.who, e.key, e.rev, e.t, cur.rev, cur.at)})
				break
			}
		}
	}
	return c.out
}
