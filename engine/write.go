package engine

import (
	"errors"
	"time"
)

// writeKind names a conditional write.
type writeKind uint8

const (
	wTake writeKind = iota + 1
	wRenew
	wCheckpoint
	wShardEnd
	wRelease
	wCreate
	wDelete
	wAssign // the assigner's write on a row it does not hold: assignment, handoff request or cancel
	wHello  // a worker's hello to the assigner
)

var writeNames = [...]string{"", "take", "renew", "checkpoint", "shard-end", "release", "create", "delete", "assign", "hello"}

func (k writeKind) String() string { return writeNames[k] }

// write is a conditional write in flight, and what to do with its outcome.
//
// A write whose outcome is unknown (a timeout, a lost reply) or whose
// condition failed (which is also what an SDK retry of an applied write
// returns) is resolved by a strongly consistent re-read: the row equal to
// the one written means it applied; the row still at the expected version
// means it did not; anything else means another writer got there first.
type write struct {
	kind   writeKind
	key    string
	rs     *rowState // key's row (set by setWrite, or by the holder)
	id     uint64
	expect Expect
	row    Lease // the row written (zero for deletes)
	sentAt time.Duration

	resolving  bool
	condFailed bool
	awaiting   bool          // counted in Worker.retrying
	retryAt    time.Duration // when to re-send the resolving read
	backoff    time.Duration

	// take (create: the row does not exist yet, as the assigner row at
	// first), assign
	create     bool
	actFrom    time.Duration
	reason     string
	previous   string
	prevWriter string
	// assign: for a handoff request or its cancellation (the owner stays,
	// and the write renews nothing), when this worker first saw the
	// version the write replaces (see assignedApplied)
	stillSince time.Duration
	keepsAge   bool
	// assign: the receiver of the assignment this one gives away untaken
	// (see giveUpOn), if any
	giveUp string
	// take: sent under the writer of an assigner row this worker has
	// lost since (bound to that row: see loseLease), or bound to a session
	// it has lost since (sessionLost); deposedBy says which
	deposed   bool
	deposedBy string
	// checkpoint
	target Checkpoint
}

// newWrite returns a zero write for a held lease: one a holder's applied
// write left (see freeWrite), or a new one. A holder writes every renew
// interval and at every checkpoint, so reusing them spares the collector a
// large object per write; it changes no decision.
func (w *Worker) newWrite() *write {
	if n := len(w.spareWrites); n > 0 {
		wr := w.spareWrites[n-1]
		w.spareWrites = w.spareWrites[:n-1]
		return wr
	}
	return new(write)
}

// freeWrite keeps wr, a held lease's write that was applied and that
// nothing refers to any more, for newWrite.
func (w *Worker) freeWrite(wr *write) {
	if len(w.spareWrites) < maxSpareWrites {
		*wr = write{}
		w.spareWrites = append(w.spareWrites, wr)
	}
}

// maxSpareWrites bounds the writes a worker keeps for reuse.
const maxSpareWrites = 8

// sendWrite sends wr now.
func (w *Worker) sendWrite(wr *write) {
	wr.sentAt = w.now.Mono
	wr.row.Writer = w.writer
	if wr.rs == nil {
		wr.rs = w.rows.get(wr.key)
	}
	wr.resolving = false
	c := Call{Key: wr.key}
	switch {
	case wr.kind == wCreate || wr.kind == wHello || wr.create:
		c.Op = OpCreateLease
		c.Lease = wr.row
	case wr.kind == wDelete:
		c.Op = OpDeleteLease
		c.Expect = wr.expect
	default:
		c.Op = OpUpdateLease
		c.Lease = wr.row
		c.Expect = wr.expect
	}
	wr.id = w.call(c, pendingCall{purpose: forWrite, key: wr.key, rs: wr.rs})
	if w.trace != nil {
		w.emit(TraceEvent{Kind: TraceCallSent, Key: wr.key, Shard: w.refOfRow(wr.rs), Counter: wr.row.Counter, Checkpoint: wr.row.Checkpoint, Reason: wr.kind.String()})
	}
}

// findWrite returns the write on row rs with call id, if it is still
// wanted.
func (w *Worker) findWrite(rs *rowState, id uint64) *write {
	if rs == nil {
		return nil
	}
	if h := rs.held; h != nil && h.write != nil && h.write.id == id {
		return h.write
	}
	if wr := rs.write; wr != nil && wr.id == id {
		return wr
	}
	return nil
}

func (w *Worker) onWriteResult(rs *rowState, r *Result) {
	wr := w.findWrite(rs, r.ID)
	if wr == nil {
		return
	}
	switch {
	case r.Err == nil:
		w.writeApplied(wr)
	case errors.Is(r.Err, ErrThrottled):
		w.writeNotApplied(wr, true)
	case wr.kind == wCreate || wr.kind == wHello:
		// A create that failed its condition found the row; one of
		// unknown outcome is settled by the next sync (or hello) either way.
		w.writeNotApplied(wr, false)
	default:
		wr.condFailed = errors.Is(r.Err, ErrConditionFailed)
		if h := rs.held; h != nil && wr.condFailed && w.bug("condition-failed-is-lost") {
			w.writeSuperseded(wr) // KCL's hole: an SDK retry of an applied write read as a lost lease
			return
		}
		if h := rs.held; h != nil && wr.condFailed {
			h.suspect = true // stop acting at once until resolved
		}
		w.resolve(wr)
	}
}

func (w *Worker) resolve(wr *write) {
	if wr.awaiting {
		wr.awaiting = false
		w.retrying--
	}
	wr.resolving = true
	wr.retryAt = 0
	wr.id = w.call(Call{Op: OpGetLease, Key: wr.key}, pendingCall{purpose: forResolve, key: wr.key, rs: wr.rs})
}

func (w *Worker) onResolveResult(rs *rowState, r *Result) {
	wr := w.findWrite(rs, r.ID)
	if wr == nil || !wr.resolving {
		return
	}
	switch {
	case r.Err == nil:
		switch {
		case wr.kind == wDelete:
			w.writeNotApplied(wr, false)
		case w.sameWrite(r.Lease, wr.row):
			w.emitResolved(wr, "applied")
			// The row may have been written by an earlier write of the
			// same row at the same version (see ghost): the validity it
			// gives starts at the earliest such send.
			for _, g := range rs.ghosts {
				if g.expect == wr.expect && g.row.Equal(r.Lease) && g.sentAt < wr.sentAt && !w.bug("ghost-ignored") {
					wr.sentAt = g.sentAt
				}
			}
			w.writeApplied(wr)
		case !wr.condFailed && r.Lease.Owner == wr.expect.Owner && r.Lease.Counter == wr.expect.Counter:
			w.emitResolved(wr, "not applied")
			w.addGhost(wr)
			w.writeNotApplied(wr, false)
			if wr.kind == wTake && wr.key == AssignerKey {
				w.asg.nextMonitor = w.now.Mono // read it again soon: the take may yet land (assignerGhost)
			}
		default:
			if h := rs.held; h != nil && h.write == wr && w.adoptable(h, r.Lease) {
				// The assigner changed the row (a handoff request, or its
				// cancellation): still this worker's lease. Write again on
				// the new version.
				w.emitResolved(wr, "not applied: the assigner changed the row")
				w.observe(rs, r.Lease)
				h.write = nil
				w.adopt(h, r.Lease)
				break
			}
			w.emitResolved(wr, "superseded")
			w.observe(rs, r.Lease)
			w.writeSuperseded(wr)
			if wr.kind == wTake && wr.key == AssignerKey && r.Lease.Counter > wr.row.Counter && !w.bug("superseded-assigner-take-keeps-leases") {
				// The take may have applied, and the row been taken over
				// since: its taker reassigns at once every lease written
				// under this worker's writer as the previous assigner's
				// (assignFrom), so they are dropped as if the row had
				// been held and lost (swarm seed 929 with session
				// renewal: S1, an SDK retry's condition failure of an
				// applied take).
				w.assignerRowLost(nil, "a take of it of unknown outcome was superseded")
			}
		}
	case errors.Is(r.Err, ErrNotFound):
		if wr.kind == wDelete {
			w.writeApplied(wr)
		} else {
			w.emitResolved(wr, "superseded")
			w.writeSuperseded(wr)
		}
	default:
		// The re-read failed too: try again shortly. A held lease is still
		// dropped at its own-view expiry meanwhile.
		wr.backoff = w.nextBackoff(wr.backoff)
		wr.retryAt = w.now.Mono + wr.backoff
		wr.id = 0
		if rs.write == wr {
			// Not held: retryWrites sends it again (a held lease's tick
			// does that for its own write).
			wr.awaiting = true
			w.retrying++
		}
	}
}

// ghost is a write of unknown outcome that a re-read found not applied.
// The read only shows that the request had not landed yet: it may still be
// in flight and land later, writing the very row that a retry at the same
// version writes. A retry that is then found applied by a re-read (its own
// condition failed, or its reply was lost too) cannot tell which attempt
// landed, so its validity starts at the ghost's send time. A retry whose
// reply is a success needs no such care: it applied itself, so the ghost
// did not land before it and cannot land after it.
//
// A write still in flight or unresolved when its lease was dropped (own-view
// expiry) is a ghost too: it may have landed, and a later take of the row
// (a resume under the same owner) that writes the very same row would
// otherwise count its validity from its own, later, send.
type ghost struct {
	expect Expect
	row    Lease
	sentAt time.Duration
}

// addGhost remembers wr as a write that may yet land (or may have).
func (w *Worker) addGhost(wr *write) {
	if wr.kind == wTake {
		// a take that may land: its row may end up bound to this
		// worker's session while it holds nothing (session.go)
		w.noteOrphan(wr.key)
	}
	rs := w.rows.intern(wr.key)
	gs := rs.ghosts
	for i, g := range gs {
		if g.expect == wr.expect && g.row.Equal(wr.row) {
			gs[i].sentAt = min(g.sentAt, wr.sentAt)
			return
		}
	}
	if len(gs) >= 4 {
		gs = gs[1:] // keep the few most recent
	}
	rs.ghosts = append(gs, ghost{expect: wr.expect, row: wr.row, sentAt: wr.sentAt})
}

func (w *Worker) emitResolved(wr *write, how string) {
	if w.trace != nil {
		w.emit(TraceEvent{Kind: TraceResolved, Key: wr.key, Shard: w.refOfRow(wr.rs), Counter: wr.row.Counter, Reason: wr.kind.String() + " " + how})
	}
}

// noteStoreReply notes whether a store call's reply shows the table
// reachable. The first one that does after a failed call sends at once
// every resolving read that waits out a backoff: a write of unknown outcome
// made during an outage would otherwise stay unresolved for up to the
// longest backoff after the table is back, and its row with it (an
// assignment that waits for its receiver: swarm seed 7649 with session
// renewal, T2).
func (w *Worker) noteStoreReply(err error) {
	if err != nil && !errors.Is(err, ErrConditionFailed) && !errors.Is(err, ErrNotFound) {
		w.storeFailing = true
		return
	}
	if !w.storeFailing {
		return
	}
	w.storeFailing = false
	if w.bug("resolve-waits-backoff") {
		return
	}
	now := w.now.Mono
	for _, rs := range w.writing {
		if wr := rs.write; wr.resolving && wr.id == 0 && wr.retryAt > now {
			wr.retryAt = now
		}
	}
	for _, h := range w.held {
		if wr := h.write; wr != nil && wr.resolving && wr.id == 0 && wr.retryAt > now {
			wr.retryAt = now
			w.dueq.set(h, now)
		}
	}
}

// retryResolve re-sends a resolving read whose earlier attempt failed.
func (w *Worker) retryResolve(wr *write) {
	if wr.resolving && wr.id == 0 && w.now.Mono >= wr.retryAt {
		w.resolve(wr)
	}
}

func (w *Worker) writeApplied(wr *write) {
	rs := w.rows.current(wr.rs, wr.key)
	if rs != nil {
		rs.ghosts = nil // the row moved on: no earlier attempt can land
	}
	switch wr.kind {
	case wTake:
		w.observeRow(wr.row)
		w.clearWrite(rs)
		w.acquired(wr)
	case wCreate:
		w.clearWrite(rs)
		w.emit(TraceEvent{Kind: TraceLeaseCreated, Key: wr.key, Shard: w.refOf(wr.key), Checkpoint: wr.row.Checkpoint})
		// A new lease is free: look for it soon rather than at the next
		// take interval.
		w.nextScan = min(w.nextScan, w.now.Mono+200*time.Millisecond)
	case wDelete:
		w.clearWrite(rs)
		w.forget(wr.key)
		w.emit(TraceEvent{Kind: TraceLeaseDeleted, Key: wr.key, Shard: w.refOf(wr.key)})
	case wAssign:
		w.clearWrite(rs)
		w.assignedApplied(wr)
	case wHello:
		w.clearWrite(rs)
	default:
		if rs != nil && rs.held != nil {
			w.holderWriteApplied(rs.held, wr)
		}
	}
	w.rows.tidy(rs)
}

func (w *Worker) writeNotApplied(wr *write, throttled bool) {
	rs := w.rows.current(wr.rs, wr.key)
	w.renotify(wr)
	switch wr.kind {
	case wTake, wCreate, wDelete, wAssign, wHello:
		w.clearWrite(rs)
	default:
		if rs != nil && rs.held != nil {
			h := rs.held
			h.write = nil
			h.suspect = false
			if throttled {
				h.writeBackoff = w.nextBackoff(h.writeBackoff)
				h.retryWriteAt = w.now.Mono + h.writeBackoff
			}
		}
	}
}

func (w *Worker) writeSuperseded(wr *write) {
	rs := w.rows.current(wr.rs, wr.key)
	w.renotify(wr)
	if rs != nil {
		rs.ghosts = nil
	}
	switch wr.kind {
	case wTake, wCreate, wDelete, wAssign, wHello:
		w.clearWrite(rs)
		if wr.kind == wTake && wr.key == AssignerKey && !w.bug("lost-assigner-take-reads-late") {
			// Another worker took the assigner row first: read it again
			// soon, as a deputy does, so that a new assigner that dies
			// at once is taken over a lease duration after the version
			// this worker first saw (onMonitor: a version that stood
			// still since an earlier read is looked at again when it
			// would expire), not at the next read of a worker that is
			// not its deputy, two lease durations on.
			w.asg.nextMonitor = min(w.asg.nextMonitor, w.now.Mono+w.jitter(w.cfg.PendingPollInterval))
		}
	default:
		if rs != nil && rs.held != nil {
			h := rs.held
			h.write = nil
			if h.session && rs.observed && w.bug("session-renew-unconditional") {
				// the planted bug: the session row is this worker's own,
				// so it is written over whatever it now holds
				row := rs.obs.row.Clone()
				row.Owner, row.Session, row.Counter = w.cfg.Owner, "", row.Counter+1
				h.write = w.newWrite()
				*h.write = write{kind: wRenew, key: h.key, rs: rs, expect: ExpectOf(rs.obs.row), row: row}
				w.sendWrite(h.write)
				break
			}
			h.taken = true
			w.loseLease(h, "condition failed: the row changed under "+wr.kind.String())
		}
	}
	w.rows.tidy(rs)
}

// nextBackoff doubles prev within [100ms, 5s], with jitter.
func (w *Worker) nextBackoff(prev time.Duration) time.Duration {
	d := 2 * prev
	if d < 100*time.Millisecond {
		d = 100 * time.Millisecond
	}
	if d > 5*time.Second {
		d = 5 * time.Second
	}
	return w.jitter(d)
}

// sameWrite reports whether the row read back is the version wr wrote:
// the same contents and the same writer (under the planted bug
// resolve-ignores-writer, the contents alone).
func (w *Worker) sameWrite(read, wrote Lease) bool {
	if w.bug("resolve-ignores-writer") {
		read.Writer = wrote.Writer
	}
	return read.Equal(wrote)
}
