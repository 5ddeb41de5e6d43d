package engine

import (
	"errors"
	"slices"
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
