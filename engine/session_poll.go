package engine

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// Session polls (Config.Renewal = RenewalSession).
//
// The assigner times a session-bound lease by its holder's session row
// (stillSince): from when it first saw the session's latest version. Seen
// only at scans (every AssignerScanInterval, a third of a lease duration
// by default), a session's last renewal before its worker died is first
// seen up to a scan interval after it applied, and the failover waits
// that much longer than a lease duration. So, between its scans, the
// assigner reads the session rows of the workers whose leases it times,
// every PendingPollInterval (readSessions): one strongly consistent read
// per such worker, so the cost grows with workers, not with shards, and a
// dead worker's leases expire within a poll of a lease duration after its
// last renewal.
//
// A poll read is a sighting like a scan's: the version it shows applied
// before the read, after the renewal's send, so timing from it is as safe
// as timing from a scan (see the top of session.go); and the end of a
// session is still a write conditioned on the version timed
// (endSessionFirst). A row the read finds gone is forgotten, as a scan
// that did not list it would: its leases are timed from now (stillSince).
// The planted bug session-poll-resets-sighting times a session from
// every poll read, not from the first sight of its version: a dead
// worker's session never expires while the assigner polls it.

// sessionPolls is the assigner's part in session polls.
type sessionPolls struct {
	// next is when the next poll round is due (0: none, while no
	// session-bound lease of another worker is in view; the assigner's
	// scans arm it, armSessionPolls)
	next  time.Duration
	reads int // reads of the round in flight
	// changed: a read of the round showed a session taken over, ended or
	// gone, which may expire leases earlier than noted (noteExpiry)
	changed bool
	// sights: member -> what the latest read of its session row (a scan's
	// or a poll's) showed (see sessionStill)
	sights map[string]sessionSight
}

// sessionSight is what a read of a member's session row showed: when it
// was read, since when its version had stood still in the assigner's
// view, and whether the session was ended (the row names no owner).
type sessionSight struct {
	read, since time.Duration
	ended       bool
}

// noteSessionSight records what a read of the session row rs showed.
func (a *assigner) noteSessionSight(w *Worker, rs *rowState) {
	if !rs.observed || !IsSessionRow(rs.key) {
		return
	}
	if a.sessions.sights == nil {
		a.sessions.sights = map[string]sessionSight{}
	}
	o := &rs.obs
	m := strings.TrimPrefix(rs.key, SessionPrefix)
	a.sessions.sights[m] = sessionSight{read: w.now.Mono, since: o.seenAt, ended: o.row.Owner == ""}
}

// sessionStill reports whether member m's session, as the latest read of
// its row showed it, was ended, or had stood still since this assigner
// first saw its version for longer than two renew intervals and a poll
// interval (its worker missed two renewals in a row, as a fresh read
// shows: it is dead, paused or cut off, or its renewals are failing),
// and m has shown no other sign of life since. Such a member is given no
// lease (leastLoaded) while others are left: its own leases expire a
// lease duration after that sighting, and a lease assigned to it
// meanwhile would wait that long again for its receiver. A member whose
// session renews again (or starts afresh) is counted as before from the
// read that shows it.
func (a *assigner) sessionStill(w *Worker, m string) bool {
	s, ok := a.sessions.sights[m]
	if !ok || w.bug("session-still-ignored") || !s.ended && s.read-s.since <= 2*w.cfg.RenewInterval+w.cfg.PendingPollInterval {
		return false
	}
	// ... and m shows no other sign of life since: a member whose lease
	// rows renew (per lease: a worker of a mixed fleet, beside a session
	// row an earlier process of its owner id left ended or standing) is
	// alive whatever that row shows, and so is one that says hello (one
	// that holds nothing yet) (swarm seed 9552: L1, a per-lease
	// member left out of the balance for good). A lease row's version
	// first seen up to a scan after its write (the last checkpoint of a
	// worker that died) is no such sign.
	return w.bug("session-still-ignores-renewals") || max(a.live[m], a.hellos[m]) <= s.since+w.cfg.AssignerScanInterval+w.cfg.PendingPollInterval
}

// readSessions starts a poll round when one is due: a read of the session
// row of every other worker that holds a session-bound lease in this
// assigner's view, in key order.
func (w *Worker) readSessions() {
	a := w.asg.as
	now := w.now.Mono
	if a == nil || a.sessions.next == 0 || !w.isAssigner() || w.shutdown || a.sessions.reads > 0 || now < a.sessions.next {
		return
	}
	keys := w.polledSessions()
	if len(keys) == 0 {
		a.sessions.next = 0
		return
	}
	a.sessions.next = now + w.jitter(w.cfg.PendingPollInterval)
	for _, key := range keys {
		if rs := w.rows.get(key); rs != nil && (rs.write != nil || rs.held != nil) {
			continue // its end is being written: the write's reply tells
		}
		a.sessions.reads++
		w.call(Call{Op: OpGetLease, Key: key}, pendingCall{purpose: forSessionPoll, key: key})
	}
}

// armSessionPolls, after a scan of the assigner, makes the next poll
// round due a poll interval later if none is due and a session-bound
// lease of another worker is in view.
func (w *Worker) armSessionPolls() {
	a := w.asg.as
	if a == nil || a.sessions.next != 0 {
		return
	}
	for _, rs := range w.rows.all {
		if _, ok := w.polledOwner(rs); ok {
			a.sessions.next = w.now.Mono + w.cfg.PendingPollInterval
			return
		}
	}
}

// polledSessions returns the keys of the session rows a poll round reads,
// sorted and each once: those of the other workers that hold a
// session-bound lease in this worker's view.
func (w *Worker) polledSessions() []string {
	var keys []string
	for _, rs := range w.rows.all {
		if owner, ok := w.polledOwner(rs); ok {
			keys = append(keys, w.sessionKeyOf(owner))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// polledOwner returns the owner of the lease row rs if it is a
// session-bound lease of another worker in this worker's view.
func (w *Worker) polledOwner(rs *rowState) (string, bool) {
	if rs == nil || !rs.observed {
		return "", false
	}
	o := &rs.obs
	if !o.ok || o.row.Session == "" || o.row.Owner == "" || o.row.Owner == w.cfg.Owner || o.row.Checkpoint.IsShardEnd() || IsReserved(o.row.Key) {
		return "", false
	}
	return o.row.Owner, true
}

// onSessionPoll records a poll read of a session row; once the round's
// last reply is in, it notes the leases' expiry again if a session was
// taken over, ended or gone.
func (w *Worker) onSessionPoll(key string, r *Result) {
	a := w.asg.as
	if a == nil {
		return
	}
	a.sessions.reads--
	rs := w.rows.get(key)
	switch {
	case r.Err == nil:
		wasOwner, wasWriter := "", ""
		if rs != nil && rs.observed {
			wasOwner, wasWriter = rs.obs.row.Owner, rs.obs.row.Writer
		}
		rs = w.rows.intern(key)
		o := w.observe(rs, r.Lease)
		if w.bug("session-poll-resets-sighting") {
			o.seenAt = w.now.Mono
		}
		if o.row.Owner != wasOwner || o.row.Writer != wasWriter {
			a.sessions.changed = true
		}
		if wasOwner != "" && o.row.Owner == "" {
			w.readReleased(wasOwner)
		}
		a.noteSessionLive(w, rs)
	case errors.Is(r.Err, ErrNotFound):
		if rs != nil && rs.observed && rs.write == nil && rs.held == nil {
			w.forgetRow(rs)
			a.sessions.changed = true
		}
	}
	if a.sessions.reads == 0 && a.sessions.changed {
		a.sessions.changed = false
		if w.isAssigner() {
			w.noteExpiry()
		}
	}
}

// readReleased reads, strongly consistently, every lease row this
// assigner last saw held by owner, once a poll shows owner's session row
// released or ended: a worker that shuts down releases its leases to the
// assigner before its session, so they wait for the assigner now, and
// the pending index would show them only after its lag and a poll. The
// replies go where the index's would (onAssignerConfirm): a released
// lease is assigned, any other row is left as it is.
func (w *Worker) readReleased(owner string) {
	a := w.asg.as
	if !w.isAssigner() || w.shutdown || w.bug("released-waits-index") {
		return
	}
	for _, rs := range w.rows.all {
		if rs == nil || !rs.observed || rs.write != nil || rs.held != nil {
			continue
		}
		o := &rs.obs
		if !o.ok || o.row.Owner != owner || IsReserved(o.row.Key) || o.row.Checkpoint.IsShardEnd() || a.confirming[rs.key] {
			continue
		}
		a.confirming[rs.key] = true
		w.call(Call{Op: OpGetLease, Key: rs.key}, pendingCall{purpose: forAssignerConfirm, key: rs.key})
	}
}
