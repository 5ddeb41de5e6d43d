package check

import (
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// Cut watch streams, as T2 sees them.
//
// A worker told by a watch what waits for it (Config.WatchPending: an etcd
// world) does not poll the pending index while its watch is up, and a cut
// stream is not an error it is told of: the stream resumes after the last
// revision it reported, and the writes it missed meanwhile reach the
// worker only then. A cut (a random one, one just before a write that
// makes a row wait for the worker, the cancellation of every stream at a
// leader change) therefore delays a handoff to that worker, or a release
// the assigner learns of through its watch, by up to the time the stream
// takes to resume, which the bound does not account for; a worker that
// makes no call meanwhile fails none (swarm seeds 653, 724, 975).
//
// The trace shows the cut (a fault "the watch of OWNER (wN) on WHO is cut:
// WHY") but not the resumption, so a cut lasts from the fault until
// Timing.WatchResume after it, or after what held the stream back ends
// (an election the trace names, "leader-change for D", or a cut of the
// worker's table link), and no longer than until the watch's next record
// (a report, or its loss, after which the worker polls): a watch that
// reports is back. Only the watch the move waits on excuses it: the
// receiver's watch of its own rows, the assigner's of the rows released to
// it.

// watchCuts are the latest cuts of one process's watch streams (a ring).
type watchCuts struct {
	ring [8]watchCutRec
	n    int
}

type watchCutRec struct {
	who  string // the Pending value the watch is on
	i    interval
	open bool // not yet shown over by a record of the watch
}

func (w *watchCuts) add(who string, i interval) {
	w.ring[w.n%len(w.ring)] = watchCutRec{who: who, i: i, open: true}
	w.n++
}

// hold is what holds the cut streams back lasting until until (seen at
// now): a stream that may not have resumed by now resumes only resume(until)
// at the earliest.
func (w *watchCuts) hold(until, now time.Duration, resume func(time.Duration) time.Duration) {
	for k := range min(w.n, len(w.ring)) {
		if x := &w.ring[k]; x.open && x.i.to >= now {
			x.i.to = max(x.i.to, resume(until))
		}
	}
}

// reported is a record of the watch of who at t: it is up (or lost, and
// its worker polls), its cut over.
func (w *watchCuts) reported(who string, t time.Duration) {
	for k := range min(w.n, len(w.ring)) {
		if x := &w.ring[k]; x.open && x.who == who {
			x.i.to, x.open = min(x.i.to, t), false
		}
	}
}

// cut reports whether the watch of who was cut in [from, to]; a ring too
// short to tell counts as cut.
func (w *watchCuts) cut(who string, from, to time.Duration) bool {
	oldest := time.Duration(-1)
	for k := range min(w.n, len(w.ring)) {
		x := w.ring[k]
		if x.who == who && x.i.overlaps(from, to) {
			return true
		}
		if oldest < 0 || x.i.from < oldest {
			oldest = x.i.from
		}
	}
	return w.n > len(w.ring) && oldest > from
}

// cutEnd returns the latest end of a cut of who's watch that overlaps
// [from, to] (0: none).
func (w *watchCuts) cutEnd(who string, from, to time.Duration) time.Duration {
	end := time.Duration(0)
	for k := range min(w.n, len(w.ring)) {
		if x := w.ring[k]; x.who == who && x.i.overlaps(from, to) {
			end = max(end, x.i.to)
		}
	}
	return end
}

// watchCut parses the description of a cut of a worker's watch stream
// ("the watch of w1 (w1) on w1 is cut: a random cut"): the worker's slot
// and the Pending value its watch is on.
func watchCut(reason string) (slot int32, who string, ok bool) {
	rest, ok := strings.CutPrefix(reason, "the watch of ")
	if !ok {
		return -1, "", false
	}
	i := strings.LastIndex(rest, " (w")
	j := strings.Index(rest, ") on ")
	if i < 0 || j < i {
		return -1, "", false
	}
	n, err := strconv.Atoi(rest[i+len(" (w") : j])
	who, _, ok = strings.Cut(rest[j+len(") on "):], " is cut: ")
	if err != nil || !ok || who == "" {
		return -1, "", false
	}
	return int32(n), who, true
}

// watchFault takes a fault record that is an election of the store or the
// cut of a watch, and reports whether it was one.
func (c *timingChecker) watchFault(r *trace.Record) bool {
	if strings.Contains(r.Reason, " leader-change for ") {
		c.electionEnd = max(c.electionEnd, r.T+pauseFor(r.Reason))
		for _, p := range c.procs {
			if p != nil {
				p.cuts.hold(c.electionEnd, r.T, c.resumeBy)
			}
		}
		return true
	}
	slot, who, ok := watchCut(r.Reason)
	if !ok {
		return false
	}
	if pid, live := c.slots[slot]; live {
		c.proc(pid).cuts.add(who, interval{r.T, c.resumeBy(r.T)})
	}
	return true
}

// resumeBy is the latest time a stream cut, or held back, until t resumes.
func (c *timingChecker) resumeBy(t time.Duration) time.Duration {
	if c.tm.WatchResume <= 0 {
		return t + time.Hour // unknown: until the watch shows itself back
	}
	return max(t, c.electionEnd) + c.tm.WatchResume
}

// watchReported is a record of a process's watch (a report, its loss, a
// new watch): that watch is back.
func (c *timingChecker) watchReported(r *trace.Record) {
	if r.Proc >= 0 {
		c.proc(r.Proc).cuts.reported(r.Reason, r.T)
	}
}
