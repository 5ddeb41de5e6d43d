package engine

import (
	"context"
	"errors"
	"slices"
	"time"
)

// PendingWatcher is implemented by a LeaseStore that can push to a worker
// the rows that wait for it (etcdstore.Store: an etcd watch on its pending
// index), so that the worker need not poll its PendingIndex: a planned move
// then costs the watch's latency and the take, not a poll interval.
// Consumer uses it when its Store implements it (see Config.WatchPending).
type PendingWatcher interface {
	PendingIndex
	// WatchPending starts a watch of the rows whose Pending is who and
	// returns once the store has established it. From then on every write
	// that leaves a row waiting for who (it makes the row wait for who, or
	// writes it again while it waits) is reported by the watch's Next:
	// in write order, once each, none skipped. A write before the watch
	// began is not reported: the caller reads the index once after
	// WatchPending returns, and the two together miss nothing.
	WatchPending(ctx context.Context, who string) (PendingWatch, error)
}

// PendingWatch is one watch of a PendingWatcher.
type PendingWatch interface {
	// Next waits for writes the watch has not reported yet and returns
	// them in write order. A watch that loses its connection resumes where
	// it was, without a gap; one that cannot (the store has discarded the
	// history it had yet to report: an etcd compaction) fails with an error
	// wrapping ErrWatchLost, and so does every later Next. Next returns
	// ctx's error when ctx ends first.
	Next(ctx context.Context) ([]PendingChange, error)
	// Close ends the watch.
	Close() error
}

// PendingChange is one write a PendingWatch reports: the key of the row and
// the store's revision of the write, which increases from one change of a
// watch to the next.
type PendingChange struct {
	Key      string
	Revision int64
}

// ErrWatchLost is wrapped by the error of a PendingWatch that cannot go on
// without missing writes.
var ErrWatchLost = errors.New("pending watch lost: it cannot resume without a gap")

// WatchInput is the news of one watch of Ready.Watch (InputWatch).
type WatchInput struct {
	// Who is the Pending value the watch is on.
	Who string
	// Started: the watch is established (again); the worker reads the
	// index once and then relies on the watch.
	Started bool
	// Lost is set when the watch has ended (an error wrapping
	// ErrWatchLost, or why it could not start): the worker polls the index
	// until a watch starts again.
	Lost error
	// Changes are the writes the watch reported.
	Changes []PendingChange
}

// pendingWatch is what a worker knows of one of its watches.
type pendingWatch struct {
	up   bool // started and not lost: no polling
	owed bool // a read of the index is owed since it started
	// notified are the keys the watch reported that the worker has not
	// read since, with when it reads them (a failed read is tried again
	// a poll interval later)
	notified map[string]time.Duration
}

// note records keys reported at now.
func (p *pendingWatch) note(cs []PendingChange, now time.Duration) {
	if p.notified == nil {
		p.notified = make(map[string]time.Duration)
	}
	for _, c := range cs {
		p.notified[c.Key] = now
	}
}

// due returns the notified keys due by now, sorted, and the earliest due
// time after now (0 if none).
func (p *pendingWatch) due(now time.Duration) (keys []string, later time.Duration) {
	for k, at := range p.notified {
		if at <= now {
			keys = append(keys, k)
		} else if later == 0 || at < later {
			later = at
		}
	}
	slices.Sort(keys)
	return keys, later
}

// polls reports whether the index is read for this watch's rows now: while
// the watch is not up, every poll interval; while it is, once after it
// started.
func (p *pendingWatch) polls() bool { return !p.up || p.owed }

// watching returns the Pending values this worker wants watched
// (Ready.Watch), appended to out.
func (w *Worker) watching(out []string) []string {
	if !w.cfg.WatchPending || !w.asg.on || !w.start.done || w.stopped {
		return out
	}
	out = append(out, w.cfg.Owner)
	if w.asg.as != nil {
		out = append(out, AssignerPending)
	}
	slices.Sort(out)
	return out
}

// onWatch takes the news of a watch.
func (w *Worker) onWatch(in *WatchInput) {
	now := w.now.Mono
	var p *pendingWatch
	switch {
	case in.Who == w.cfg.Owner:
		p = &w.asg.watch
	case in.Who == AssignerPending && w.asg.as != nil:
		p = &w.asg.as.watch
	default:
		return // a watch this worker no longer wants
	}
	if in.Started {
		p.up, p.owed = true, true
		w.pollNow(in.Who)
	}
	if in.Lost != nil {
		p.up, p.owed = false, false
		w.pollNow(in.Who)
	}
	p.note(in.Changes, now)
}

// pollNow brings the next read of who's rows of the index forward to now.
func (w *Worker) pollNow(who string) {
	if who == w.cfg.Owner {
		w.asg.nextPoll = w.now.Mono
	} else if w.asg.as != nil {
		w.asg.as.nextPoll = w.now.Mono
	}
}

// readNotified reads the rows this worker's watch reported (as it reads
// those a poll of the index shows), once each after its latest report: a
// row whose read or write is in flight waits for it to end.
func (w *Worker) readNotified() {
	p := &w.asg.watch
	if len(p.notified) == 0 {
		return
	}
	keys, _ := p.due(w.now.Mono)
	for _, k := range keys {
		if rs := w.rows.get(k); rs != nil && (rs.confirming || rs.write != nil) {
			continue // read again once it has ended
		}
		delete(p.notified, k)
		w.confirm(k)
	}
}

// readAssignerNotified is readNotified for the rows that wait for the
// assigner.
func (w *Worker) readAssignerNotified() {
	a := w.asg.as
	if a == nil || len(a.watch.notified) == 0 {
		return
	}
	keys, _ := a.watch.due(w.now.Mono)
	for _, k := range keys {
		if a.confirming[k] || w.writeOf(k) != nil {
			continue
		}
		delete(a.watch.notified, k)
		a.confirming[k] = true
		w.call(Call{Op: OpGetLease, Key: k}, pendingCall{purpose: forAssignerConfirm, key: k})
	}
}

// wakeWatches reports to min when the notified rows that wait are due.
func (w *Worker) wakeWatches(min func(time.Duration)) {
	if _, t := w.asg.watch.due(w.now.Mono); t > 0 {
		min(t)
	}
	if a := w.asg.as; a != nil {
		if _, t := a.watch.due(w.now.Mono); t > 0 {
			min(t)
		}
	}
}

// renotify: a write of the assigner on a row that waits for it (a hello's
// delete, an assignment) that did not apply leaves the row as it was, and
// while the assigner's watch is up no poll of the index shows it again and
// no write reports it again: the assigner reads it again a poll interval
// later, as its next poll would have (a hello whose delete failed kept its
// worker out of the member list for good: swarm seeds 125 and 188 in etcd
// worlds).
//
// The same holds for a worker's take of a row assigned to it: one that did
// not apply (a transient error, then a read that found it not applied)
// leaves the row waiting for it, and its watch reports nothing more: it
// reads the row again a poll interval later (swarm seed 598 in an etcd
// world: the receiver tried once, then waited for a crash and a restart).
func (w *Worker) renotify(wr *write) {
	if wr.kind == wTake && w.asg.on && w.asg.watch.up && !IsReserved(wr.key) {
		w.asg.watch.note([]PendingChange{{Key: wr.key}}, w.now.Mono+w.cfg.PendingPollInterval)
	}
	a := w.asg.as
	if a == nil || !a.watch.up {
		return
	}
	if (wr.kind == wDelete && IsWorkerRow(wr.key)) || wr.kind == wAssign {
		a.watch.note([]PendingChange{{Key: wr.key}}, w.now.Mono+w.cfg.PendingPollInterval)
	}
}
