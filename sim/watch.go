package sim

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// The watches of an etcd world's workers (see etcd.go): what Consumer and
// etcdstore do with Ready.Watch, on the virtual network.
//
//   - Opening: the request travels the worker's table link (lost while its
//     requests are cut; refused during an election: retried with backoff,
//     as Consumer retries WatchPending); the store registers the watch from
//     its next revision and records it (trace.KindWatch "open"); the
//     confirmation travels back (lost while replies are cut: retried), and
//     the worker is told its watch Started.
//   - Reporting: each write that leaves a row waiting for the watch's value
//     is reported, with every other write of the store's log since the last
//     report, after the link's latency and the world's watch delay, in
//     revision order (KindWatch "change").
//   - Breaking: a report that finds the link cut, a leader change, a random
//     cut (watch-cut) cut the stream; it reconnects within the world's
//     Reconnect once the link is back and the election over, and resumes
//     after the last revision it reported. If that revision is compacted,
//     the watch is lost (KindWatch "lost", and the worker is told Lost), and
//     a new one is opened.
//
// The planted bug etcd-watch-resume-at-current resumes at the store's
// current revision instead; W3 (sim/check) catches what it skips.

type watchState uint8

const (
	watchOpening watchState = iota + 1
	watchUp
	watchCut
)

// simWatch is one watch of one process.
type simWatch struct {
	slot  int
	proc  int32
	who   string
	state watchState
	next  int64  // the first revision not reported yet
	gen   uint32 // bumped at every change of state: events of an older state are stale
	// delivering: a report is scheduled
	delivering bool
	backoff    time.Duration
}

// keepWatches gives process p the watches its last Ready asked for.
func (s *simulator) keepWatches(p *proc, want []string) {
	e := &s.etcd
	for _, w := range e.watches {
		if w != nil && w.proc == p.id && !contains(want, w.who) {
			s.closeWatch(w)
		}
	}
	for _, who := range want {
		if s.watchOf(p.id, who) == nil {
			s.openWatch(p, who)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (s *simulator) watchOf(proc int32, who string) *simWatch {
	for _, w := range s.etcd.watches {
		if w != nil && w.proc == proc && w.who == who {
			return w
		}
	}
	return nil
}

// openWatch starts a watch of who for p.
func (s *simulator) openWatch(p *proc, who string) {
	e := &s.etcd
	w := &simWatch{proc: p.id, who: who, backoff: 100 * time.Millisecond}
	if n := len(e.free); n > 0 {
		w.slot = e.free[n-1]
		e.free = e.free[:n-1]
		e.watches[w.slot] = w
	} else {
		w.slot = len(e.watches)
		e.watches = append(e.watches, w)
	}
	s.attemptWatch(w, p)
}

// closeWatch ends a watch the process no longer wants.
func (s *simulator) closeWatch(w *simWatch) {
	p := s.cl.procs[w.proc]
	if p.alive {
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindWatch, Reason: w.who, Outcome: "closed"}))
	}
	s.dropWatch(w)
}

func (s *simulator) dropWatch(w *simWatch) {
	w.gen++
	w.state = 0
	s.etcd.watches[w.slot] = nil
	s.etcd.free = append(s.etcd.free, w.slot)
}

// schedWatch schedules a watch event for w's current state.
func (s *simulator) schedWatch(w *simWatch, at time.Duration, k evKind) {
	s.q.push(event{at: at, kind: k, a: uint64(w.slot)<<32 | uint64(w.gen)})
}

// watchEvent returns the live watch (and its live process) an event is for,
// nil if the event is stale; a watch whose process ended is dropped.
func (s *simulator) watchEvent(a uint64) (*simWatch, *proc) {
	i, gen := int(a>>32), uint32(a)
	if i >= len(s.etcd.watches) {
		return nil, nil
	}
	w := s.etcd.watches[i]
	if w == nil || w.gen != gen {
		return nil, nil
	}
	p := s.cl.procs[w.proc]
	if !p.alive {
		s.dropWatch(w)
		return nil, nil
	}
	return w, p
}

// attemptWatch sends w's request to open (again, after a failure).
func (s *simulator) attemptWatch(w *simWatch, p *proc) {
	w.state = watchOpening
	w.gen++
	l := s.linkOf(p, engine.OpGetLease)
	if l.cutReq {
		s.retryWatch(w, s.w.CallTimeout) // lost: the attempt times out
		return
	}
	s.schedWatch(w, s.now+s.latency(l), evWatchOpen)
}

// retryWatch schedules the next attempt to open w after wait and a backoff.
func (s *simulator) retryWatch(w *simWatch, wait time.Duration) {
	w.gen++
	s.schedWatch(w, s.now+wait+w.backoff, evWatchRetry)
	w.backoff = min(2*w.backoff, 5*time.Second)
}

// onWatchOpen is a watch's request reaching the store.
func (s *simulator) onWatchOpen(a uint64) {
	w, p := s.watchEvent(a)
	if w == nil {
		return
	}
	l := s.linkOf(p, engine.OpGetLease)
	if s.inElection() {
		s.retryWatch(w, s.latency(l)) // no leader: refused
		return
	}
	w.next = s.tbl.Revision() + 1
	s.emit(s.procRec(p, &trace.Record{Kind: trace.KindWatch, Reason: w.who, Outcome: "open", Counter: w.next - 1}))
	if l.cutRep {
		s.retryWatch(w, s.w.CallTimeout) // the confirmation is lost: the attempt times out
		return
	}
	w.gen++
	s.schedWatch(w, s.now+s.latency(l), evWatchStarted)
}

// onWatchStarted is a watch's confirmation reaching its process.
func (s *simulator) onWatchStarted(a uint64) {
	w, p := s.watchEvent(a)
	if w == nil {
		return
	}
	w.state = watchUp
	w.gen++
	w.backoff = 100 * time.Millisecond
	s.emit(s.procRec(p, &trace.Record{Kind: trace.KindWatch, Reason: w.who, Outcome: "started"}))
	in := engine.Input{Kind: engine.InputWatch, Watch: engine.WatchInput{Who: w.who, Started: true}}
	s.deliver(p, &in)
	s.watchUp(w)
}

// watchUp is w up (started or resumed): it reports what its log holds,
// and a random cut is drawn.
func (s *simulator) watchUp(w *simWatch) {
	if cs, err := s.tbl.PendingChanges(w.who, w.next); err != nil || len(cs) > 0 {
		s.scheduleReport(w)
	}
	if e := &s.w.Etcd; e.CutEvery > 0 && !s.healed {
		s.schedWatch(w, s.now+s.etcd.rng.exp(e.CutEvery), evWatchCut)
	}
}

// watchChanged is a write that left a row waiting for who: the watches of
// who report it.
func (s *simulator) watchChanged(who string) {
	for _, w := range s.etcd.watches {
		if w != nil && w.who == who && w.state == watchUp {
			s.scheduleReport(w)
		}
	}
}

// scheduleReport schedules w's next report, unless one is scheduled.
func (s *simulator) scheduleReport(w *simWatch) {
	if w.delivering {
		return
	}
	w.delivering = true
	p := s.cl.procs[w.proc]
	at := s.now + s.latency(s.linkOf(p, engine.OpGetLease)) + s.w.Etcd.WatchDelay.draw(s.etcd.rng)
	s.schedWatch(w, at, evWatchReport)
}

// onWatchReport reports to w's process what the store's log holds after
// the last revision w reported.
func (s *simulator) onWatchReport(a uint64) {
	w, p := s.watchEvent(a)
	if w == nil {
		return
	}
	w.delivering = false
	if l := s.linkOf(p, engine.OpGetLease); l.cutReq || l.cutRep {
		s.cutWatch(w, "its link is cut")
		return
	}
	cs, err := s.tbl.PendingChanges(w.who, w.next)
	if err != nil {
		s.lostWatch(w, p)
		return
	}
	if len(cs) == 0 {
		return
	}
	for _, c := range cs {
		s.emit(s.procRec(p, &trace.Record{Kind: trace.KindWatch, Reason: w.who, Outcome: "change", Key: c.Key, Counter: c.Revision}))
	}
	w.next = cs[len(cs)-1].Revision + 1
	in := engine.Input{Kind: engine.InputWatch, Watch: engine.WatchInput{Who: w.who, Changes: cs[:len(cs):len(cs)]}}
	s.deliver(p, &in)
}

// cutWatch cuts w's stream; it reconnects within the world's Reconnect.
func (s *simulator) cutWatch(w *simWatch, why string) {
	if w.state != watchUp {
		return
	}
	p := s.cl.procs[w.proc]
	s.fault(fmt.Sprintf("the watch of %s (w%d) on %s is cut: %s", p.owner, p.slot, w.who, why), "")
	w.state = watchCut
	w.gen++
	w.delivering = false
	s.schedWatch(w, s.now+s.etcd.rng.between(10*time.Millisecond, s.w.Etcd.Reconnect), evWatchResume)
}

// onWatchCut is a random cut of w's stream (watch-cut).
func (s *simulator) onWatchCut(a uint64) {
	if w, _ := s.watchEvent(a); w != nil && !s.healed {
		s.cutWatch(w, "a random cut")
	}
}

// watchRetry bounds the wait before a cut stream tries again to resume when
// its link is cut or an election is on (check.Timing.WatchResume).
const watchRetry = time.Second

// onWatchResume reconnects a cut stream, after the last revision it
// reported, once its link is back and no election is on.
func (s *simulator) onWatchResume(a uint64) {
	w, p := s.watchEvent(a)
	if w == nil {
		return
	}
	if l := s.linkOf(p, engine.OpGetLease); l.cutReq || l.cutRep || s.inElection() {
		w.gen++
		s.schedWatch(w, s.now+s.etcd.rng.between(50*time.Millisecond, watchRetry), evWatchResume)
		return
	}
	from := w.next
	if s.o.Mutation == "etcd-watch-resume-at-current" {
		from = s.tbl.Revision() + 1
	}
	if from < s.tbl.Compacted() {
		s.lostWatch(w, p)
		return
	}
	w.next = from
	w.state = watchUp
	w.gen++
	s.watchUp(w)
}

// lostWatch loses w: the store compacted what it had yet to report. The
// process is told, and a new watch is opened, as Consumer does.
func (s *simulator) lostWatch(w *simWatch, p *proc) {
	s.emit(s.procRec(p, &trace.Record{Kind: trace.KindWatch, Reason: w.who, Outcome: "lost", Counter: w.next - 1}))
	in := engine.Input{Kind: engine.InputWatch, Watch: engine.WatchInput{Who: w.who, Lost: engine.ErrWatchLost}}
	w.delivering = false
	w.backoff = 100 * time.Millisecond
	s.retryWatch(w, 0)
	w.state = watchOpening
	s.deliver(p, &in)
}

// onWatchRetry is the next attempt to open a watch.
func (s *simulator) onWatchRetry(a uint64) {
	if w, p := s.watchEvent(a); w != nil {
		s.attemptWatch(w, p)
	}
}
