package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Session renewal (Config.Renewal = RenewalSession; the protocol is
// docs/design/sessions.md).
//
// A worker in session mode holds one session row, SessionKey(Owner), under
// the rules of any lease (a compare-and-swap on its version, renewed every
// RenewInterval), and takes no lease before it holds it. Every lease it
// takes is bound to its session: the take writes Lease.Session, the
// worker's Writer nonce, which a restart under the same owner id changes.
// A bound lease's own row is written only when its ownership, checkpoint or
// handoff changes, never to renew it; the holder's view of it is valid
// until a lease duration after the send of its session's last applied
// renewal (validUntil; the lease's own writes do not extend it), and the
// worker acts on it until a safety margin before that, as on any lease. A
// session that is lost (its renewal refused, or expired in the worker's
// own view) drops every bound lease at once.
//
// An observer (the assigner; a scan-mode taker of this version whose scans
// are strongly consistent) times a bound lease by its holder's session row
// naming the lease's session (stillSince), which the assigner reads
// between its scans too (session_poll.go). When the session row has moved
// to another process (a restart under the same owner id took it over) or
// is gone, the
// session is timed from when the observer first saw that. Either way the
// holder's own view has expired when the observer has seen that time stand
// for a lease duration: the holder's validity started at a send before each
// version the observer saw. An eventually consistent read never times a
// session (a stale copy of a renewed session row would look still), so a
// worker whose scans are not consistent never takes a bound lease for
// expired, and no worker steals one (its holder, renewing nothing on the
// lease, would not notice the steal before its next checkpoint).

// SessionPrefix starts the keys of the session rows (Config.Renewal).
const SessionPrefix = ReservedPrefix + "_session:"

// SessionKey returns the key of owner's session row.
func SessionKey(owner string) string { return SessionPrefix + owner }

// IsSessionRow reports whether key is a worker's session row.
func IsSessionRow(key string) bool { return strings.HasPrefix(key, SessionPrefix) }

// sessionState is a worker's part in session renewal: its own session row
// (holder) and what it knows of the others' (observer).
type sessionState struct {
	key     string   // SessionKey(Owner)
	held    *holding // the session row while this worker holds it
	reading bool     // the read before a take of the session row is in flight
	nextTry time.Duration
	// keys: owner -> SessionKey(owner), made once (stillSince);
	// missing: owner -> when this worker first found a lease bound to a
	// session of owner whose row it has not seen (or no longer sees
	// owned)
	keys    map[string]string
	missing map[string]time.Duration
	// fencing: session keys whose strongly consistent read (fenceRead) is
	// in flight
	fencing map[string]bool
	// checked: the start-up check of who else renews is done
	// (sessionChecked); nonceless: the rows held by writers without a
	// nonce that its first scan showed, by key, with their versions
	// repoll: a take was refused before the worker could take leases
	// (sessionReady): it reads what waits for it again once it can
	repoll      bool
	checked     bool
	auto        bool // Config.Renewal was RenewalAuto, and the check is not done
	nonceless   map[string]int64
	noncelessAt time.Duration
	// orphans: the keys of rows that may be bound to this worker's
	// session while it does not hold them (see noteOrphan), re-read every
	// two poll intervals (orphanNext) until they are not
	// ended: owner -> the latest of its sessions this worker saw ended or
	// taken over on a version it had seen, and since when that session
	// had stood still (stillSince)
	ended       map[string]endedSession
	orphans     []string
	orphanNext  time.Duration
	orphanReads int
	losing      bool // in sessionLost: its drops are no orphans
}

// endedSession is a session seen ended: its nonce, and since when it had
// stood still.
type endedSession struct {
	session string
	since   time.Duration
}

// sessionMode reports whether this worker binds the leases it takes to
// its session: session renewal in assigned mode.
func (w *Worker) sessionMode() bool { return w.cfg.Renewal == RenewalSession && w.asg.on }

// bound reports whether h is a lease bound to this worker's session (the
// planted bug restart-keeps-session takes any binding for its own).
func (w *Worker) bound(h *holding) bool {
	return h.row.Session != "" && (h.row.Session == w.writer || w.bug("restart-keeps-session")) && !h.control && !h.session
}

// sessionReady reports whether the worker may take leases: always in
// per-lease renewal, and in session mode once it acts on its session row.
func (w *Worker) sessionReady() bool {
	return w.sessionHeld() && (!w.sessionMode() || w.sess.checked)
}

// sessionHeld reports whether the worker acts on its session row (always
// true in per-lease renewal): it may scan.
func (w *Worker) sessionHeld() bool {
	if !w.sessionMode() {
		return true
	}
	s := w.sess.held
	return s != nil && !s.gone && w.isActing(s)
}

// sessionRenewing reports whether h is bound to a session whose renewal
// is in flight and would keep it valid now had it applied (see
// renewalInFlight): a bound lease waits for that outcome too.
func (w *Worker) sessionRenewing(h *holding) bool {
	s := w.sess.held
	return w.bound(h) && s != nil && !s.gone && w.renewalInFlight(s)
}

// advanceSession reads, and then creates or takes over, the worker's
// session row while it holds none.
func (w *Worker) advanceSession() {
	s := &w.sess
	now := w.now.Mono
	w.readOrphans()
	if !w.sessionMode() || w.shutdown || s.held != nil || s.reading || w.writeOf(s.key) != nil || now < s.nextTry {
		return
	}
	s.reading = true
	s.nextTry = now + w.jitter(w.cfg.PendingPollInterval)
	w.call(Call{Op: OpGetLease, Key: s.key}, pendingCall{purpose: forSession, key: s.key})
}

// onSessionRead creates the session row, or takes it over from this
// owner's earlier process (or this process, had it lost it): owner ids are
// unique among live processes, so the row is this worker's to take.
func (w *Worker) onSessionRead(r *Result) {
	s := &w.sess
	s.reading = false
	if w.shutdown || s.held != nil || w.writeOf(s.key) != nil || !w.sessionMode() {
		return
	}
	switch {
	case errors.Is(r.Err, ErrNotFound):
		row := Lease{Key: s.key, Owner: w.cfg.Owner, Counter: 1, Checkpoint: SentinelCheckpoint(ShardEnd)}
		wr := &write{kind: wTake, create: true, key: s.key, row: row, actFrom: w.now.Mono, reason: "session"}
		w.setWrite(w.rows.intern(s.key), wr)
		w.sendWrite(wr)
	case r.Err != nil:
		// read again at nextTry
	case r.Lease.Owner != "" && r.Lease.Owner != w.cfg.Owner:
		w.emit(TraceEvent{Kind: TraceMalformedRow, Key: s.key, Reason: "session row owned by " + r.Lease.Owner + ": left alone"})
		s.nextTry = w.now.Mono + w.cfg.LeaseDuration
	default:
		w.observeRow(r.Lease)
		w.take(candidate{row: r.Lease, actFrom: w.now.Mono, reason: "session"})
	}
}

// noteOrphan keeps key for re-reads (onOrphanRead): its row may be bound
// to this worker's session while the worker does not hold it, a take of
// unknown outcome that a re-read found not applied but that landed later
// (a ghost), or a lease dropped while its row still names this worker and
// its session (a write found superseded by the assigner's handoff
// request). In per-lease renewal such a row stands still and expires; in
// session renewal it would look alive for as long as the session is, and
// nobody would ever act on it. The worker finds it and takes it again.
func (w *Worker) noteOrphan(key string) {
	s := &w.sess
	if s.losing || !w.sessionMode() || IsReserved(key) || w.bug("orphans-unread") {
		return
	}
	if !slices.Contains(s.orphans, key) {
		s.orphans = append(s.orphans, key)
		if s.orphanNext < w.now.Mono {
			s.orphanNext = w.now.Mono + w.jitter(2*w.cfg.PendingPollInterval)
		}
	}
}

// readOrphans re-reads the rows of noteOrphan when their time has come.
func (w *Worker) readOrphans() {
	s := &w.sess
	if len(s.orphans) == 0 || s.orphanReads > 0 || w.now.Mono < s.orphanNext || w.shutdown {
		return
	}
	s.orphanNext = w.now.Mono + w.jitter(2*w.cfg.PendingPollInterval)
	for _, key := range s.orphans {
		s.orphanReads++
		w.call(Call{Op: OpGetLease, Key: key}, pendingCall{purpose: forOrphanRead, key: key})
	}
}

// onOrphanRead acts on a re-read of a row noteOrphan kept: this worker's
// and bound to its session but not held, it is taken again under the rule
// of any resume (nobody else can have taken it: that changes its owner);
// still at a version a ghost take of it expects, it is read again later;
// otherwise it is no orphan.
func (w *Worker) onOrphanRead(key string, r *Result) {
	s := &w.sess
	s.orphanReads--
	if r.Err != nil && !errors.Is(r.Err, ErrNotFound) {
		return // read again later
	}
	keep := false
	rs := w.rows.get(key)
	if r.Err == nil && !w.shutdown {
		row := r.Lease
		held, writing := rs.heldOrNil() != nil, rs.writeOrNil() != nil
		switch {
		case held:
		case writing:
			keep = true
		case row.Owner == w.cfg.Owner && row.Session == w.writer:
			o := w.observeRow(row)
			w.take(candidate{row: row, actFrom: w.resumeFrom(o), reason: "resumed"})
			// kept until a read finds it held: a take that fails (a
			// throttle) leaves it an orphan, read again (swarm seed 3641
			// with -renewal session: S4/L1, a take throttled once, and the
			// lease stood unowned by any acting worker for good)
			keep = w.writeOf(key) == nil || !w.bug("orphan-take-once")
		case rs != nil:
			for _, g := range rs.ghosts {
				if g.expect == ExpectOf(row) {
					keep = true
				}
			}
		}
	}
	if !keep {
		s.orphans = slices.DeleteFunc(s.orphans, func(k string) bool { return k == key })
	}
}

// sessionApplied notes an applied write of the session row: every bound
// lease is valid longer, and is ticked now (one taken whose reply came
// after its margin starts acting; one that had stopped acting at its
// margin acts again, and says so: those with a write in flight once it
// comes back, holderWriteApplied, with the row it wrote).
func (w *Worker) sessionApplied(wr *write) {
	if wr.kind == wRelease {
		return
	}
	for _, h := range w.held {
		if !w.bound(h) || h.gone {
			continue
		}
		if h.write == nil && h.stoppedTraced && w.now.Mono < w.actUntil(h) {
			h.stoppedTraced = false
			if h.actingTraced {
				w.emit(TraceEvent{Kind: TraceActing, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Checkpoint: h.row.Checkpoint, Reason: "session renewed after the margin"})
			}
		}
		w.dueq.set(h, w.now.Mono)
	}
}

// sessionLost drops every lease bound to the session row h, which this
// worker no longer holds, and reads the row again to take it back.
//
// The worker then takes a new writer nonce, a new session identity: the
// row it takes back names that one, so that the leases bound to the lost
// session (which it dropped, and which may be reassigned by now) never
// look alive again. The planted bug session-loss-keeps-leases keeps both
// the leases and the identity.
func (w *Worker) sessionLost(h *holding, reason string) {
	if w.bug("session-loss-keeps-leases") {
		w.sess.nextTry = w.now.Mono
		return
	}
	w.sess.losing = true
	for _, o := range slices.Clone(w.held) {
		if o != h && !o.gone && o.row.Session == w.writer && !o.control && !o.session {
			w.loseLease(o, "the session was lost: "+reason)
			w.dueq.set(o, w.now.Mono)
		}
	}
	w.sess.losing = false
	// Takes in flight bound to the lost session are lost with it: one whose
	// reply (or resolving read) comes later must not be acted on, since the
	// assigner times it by that session, which renews no more, and
	// reassigns it (swarm seed 6526 with -renewal session: S1, a take of
	// unknown outcome found applied after the session it named was lost,
	// acted on and renewed per lease while the assigner took it over).
	if old := w.writer; !w.bug("lost-session-take-acted") {
		w.deposeTakes("session", func(wr *write) bool { return wr.row.Session == old })
	}
	w.newWriter()
	w.sess.nextTry = w.now.Mono
}

// sessionKeyOf returns SessionKey(owner), made once per owner.
func (w *Worker) sessionKeyOf(owner string) string {
	s := &w.sess
	key, ok := s.keys[owner]
	if !ok {
		if s.keys == nil {
			s.keys = map[string]string{}
		}
		key = SessionKey(owner)
		s.keys[owner] = key
	}
	return key
}

// endSessionFirst reports whether the expired lease o must wait for the
// end of its session: it is bound to a session whose row still names it.
// A session is fenced by its own row only, so before the assigner hands
// out a lease of a session that stood still it ends the session: a write
// of the session row (unowned, Session naming the ended session)
// conditioned on the version it timed, after which the holder can renew
// it no more. Its leases are assigned once the end applied (sessionEnded).
// The planted bug session-end-skipped assigns them at once: a renewal of
// the session that the assigner's scan did not see then keeps the old
// holder acting.
func (w *Worker) endSessionFirst(o *observation) bool {
	if w.bug("session-end-skipped") || w.bug("taker-times-lease-row") {
		return false
	}
	rs := w.namingSession(o)
	if rs == nil {
		return false // taken over by a restart, or released: nothing to fence
	}
	so := &rs.obs
	if rs.write == nil && rs.held == nil {
		row := so.row.Clone()
		row.Owner, row.Session, row.Pending, row.HandoffTo = "", followed(so.row), "", ""
		row.Counter++
		w.sendAssign(&write{kind: wAssign, key: rs.key, expect: ExpectOf(so.row), row: row, previous: so.row.Owner,
			reason: "session ended: stood still", stillSince: so.seenAt})
	}
	return true
}

// sessionEnded records the applied end of a session (endSessionFirst):
// the row, written on the version the assigner timed, names the ended
// session's last version as its predecessor (observation.prevSince), so
// its leases are expired at once, and are assigned now.
func (w *Worker) sessionEnded(wr *write) {
	w.observeRow(wr.row)
	if a := w.asg.as; a != nil {
		if rs := w.rows.get(wr.key); rs != nil {
			a.noteSessionSight(w, rs) // its worker is given nothing more (sessionStill)
		}
	}
	switch {
	case w.asg.as != nil && w.isAssigner():
		w.assignExpired()
	case !w.asg.on:
		// a worker that takes leases itself: its next scan takes them
		w.nextScan = min(w.nextScan, w.now.Mono)
	}
}

// stillSince returns since when o's lease has stood still in this
// worker's view: when it first saw the row's version; for a lease bound
// to a session whose row it saw naming that session, since when it first
// saw the session's latest sign of life, whatever the lease row did (the
// holder's validity runs from its session alone, validUntil); for one
// whose session row it cannot link to the session (gone, or held by
// another process it did not see take it over), no earlier than either
// sighting (see the top of this file).
func (w *Worker) stillSince(o *observation) time.Duration {
	if o.row.Session == "" || o.row.Owner == "" || w.bug("taker-times-lease-row") {
		return o.seenAt
	}
	now := w.now.Mono

	s := &w.sess
	owner := o.row.Owner
	rs := w.rows.get(w.sessionKeyOf(owner))
	if rs != nil && rs.observed {
		so := &rs.obs
		switch {
		case so.row.Writer == o.row.Session && (so.row.Owner == owner || so.row.Owner == ""):
			// its latest version is the session's own: a renewal (or
			// its release, after which it acts no more)
			if len(s.missing) > 0 {
				delete(s.missing, owner)
			}
			return so.seenAt
		case so.prevWriter == o.row.Session && follows(so.row, o.row.Session, so.prevCounter):
			// taken over (a restart under the same owner id, the same
			// process under a new identity) or ended by the assigner,
			// on the very version of the session this worker saw last:
			// the session renewed nothing after it. Remembered: a later
			// change of the row (the ended session's owner taking it
			// back under a new identity) hides the link.
			if s.ended == nil {
				s.ended = map[string]endedSession{}
			}
			s.ended[owner] = endedSession{session: o.row.Session, since: so.prevSince}
			return so.prevSince
		case s.ended[owner].session == o.row.Session:
			// an ended (or taken over) session this worker saw end
			return s.ended[owner].since
		case so.row.Owner != "":
			if len(s.missing) > 0 {
				delete(s.missing, owner)
			}
			return max(o.seenAt, so.identSince)
		}
	}
	t, seen := s.missing[owner]
	if !seen {
		if s.missing == nil {
			s.missing = map[string]time.Duration{}
		}
		t = now
		s.missing[owner] = t
	}
	if rs != nil && rs.observed {
		t = max(t, rs.obs.identSince) // released: timed from when it was seen unowned
	}
	return max(o.seenAt, t)
}

// followed returns what a session row written on version row by another
// process (a takeover, or the assigner's end) names in its Session: the
// session of row and its version, "writer@counter".
func followed(row Lease) string {
	return row.Writer + "@" + strconv.FormatInt(row.Counter, 10)
}

// follows reports whether the session row row names, as the session it
// follows (followed), session at version counter.
func follows(row Lease, session string, counter int64) bool {
	n, c, ok := strings.Cut(row.Session, "@")
	if !ok || n != session {
		return false
	}
	v, err := strconv.ParseInt(c, 10, 64)
	return err == nil && v == counter
}

// ErrSessionRefused is the error of a worker in session renewal that
// stops at start because a worker that does not know sessions uses the
// table.
var ErrSessionRefused = errors.New("renewal session refused")

// sessionChecked reports whether a worker in session renewal may act on
// its scans: once it has found that no live worker that does not know
// sessions uses the table. A row held by a writer without a nonce (a KCL
// worker, or a shardlease that predates writer nonces) times a lease by
// its own row, which a session-bound lease's holder no longer renews, and
// would take it for expired while its holder acts. Such rows may be a
// dead worker's, left behind: the worker takes no lease (sessionReady)
// and scans again a lease duration later; a row of them whose version
// moved in between is a live worker's, and the worker stops with
// ErrSessionRefused naming it. (Workers of this version in per-lease
// renewal time session-bound leases by their session rows.)
func (w *Worker) sessionChecked(rows []*rowState) bool {
	s := &w.sess
	if w.cfg.Renewal != RenewalSession || s.checked || w.bug("session-start-unchecked") {
		return true
	}
	var found map[string]int64
	for _, rs := range rows {
		o := &rs.obs
		if !rs.observed || !o.ok || o.row.Owner == "" || o.row.Writer != "" || o.row.Checkpoint.IsShardEnd() || w.foreign(o) {
			continue
		}
		if s.auto && !w.bug("auto-keeps-session") {
			w.renewPerLease(o)
			return true
		}
		if c, ok := s.nonceless[o.row.Key]; ok && c != o.row.Counter {
			w.fail(fmt.Errorf("%w: owner %s renews %s per lease without a writer nonce (a KCL worker, or a shardlease older than session renewal): "+
				"it would take session-bound leases for expired; keep Renewal %q until no such worker uses the table", ErrSessionRefused, o.row.Owner, o.row.Key, RenewalPerLease))
			return false
		}
		if found == nil {
			found = map[string]int64{}
		}
		found[o.row.Key] = o.row.Counter
	}
	switch {
	case found == nil || s.nonceless != nil && w.now.Mono-s.noncelessAt >= w.cfg.LeaseDuration:
		// none, or none of those seen a lease duration ago moved
		s.checked, s.nonceless, s.auto = true, nil, false
		if s.repoll {
			w.repollNow() // an assignment it could not take waits
		}
		return true
	case s.nonceless == nil:
		s.nonceless, s.noncelessAt = found, w.now.Mono
	}
	w.asg.resumed = false
	if w.asg.as == nil {
		// Scan again at the assigner's pace meanwhile: the check passes
		// at the first scan that shows no such row (the assigner took a
		// dead KCL worker's leases over), not only a lease duration on
		// (swarm seed 9359 with -renewal session: a worker that joined a
		// table adopted from KCL was given a lease it could not take for
		// a lease duration, T2).
		next := s.noncelessAt + w.cfg.LeaseDuration
		if !w.bug("session-check-waits-lease") {
			next = min(next, w.now.Mono+w.jitter(w.cfg.AssignerScanInterval))
		}
		w.nextScan = max(w.now.Mono, next)
	}
	// (the assigner scans on at its pace meanwhile, assigning nothing:
	// its sightings of the fleet's rows stay fresh, so a lease of a
	// worker that dies during the wait expires a lease duration after its
	// last renewal, not after the first scan once the wait is over: swarm
	// seed 1604 with -renewal session)
	return false
}

// renewPerLease turns a worker of RenewalAuto to per-lease renewal for the
// rest of its life, at its start-up check, before it takes any lease: o is
// a lease row held by a writer without a nonce (a KCL worker, live or left
// behind), which would take a session-bound lease for expired while its
// holder acts. The worker releases the session row it took at start.
func (w *Worker) renewPerLease(o *observation) {
	s := &w.sess
	s.auto, s.checked, s.nonceless = false, true, nil
	w.cfg.Renewal = RenewalPerLease
	if w.cfg.scanIntervalDefaulted {
		w.cfg.AssignerScanInterval = w.cfg.LeaseDuration / 3
	}
	w.emit(TraceEvent{Kind: TraceRenewalFallback, Key: o.row.Key, Reason: "owner " + o.row.Owner + " holds " + o.row.Key +
		" without a writer nonce (a KCL worker, or a shardlease older than session renewal): renewing per lease"})
	if h := s.held; h != nil && !h.gone && h.release == 0 {
		h.release = wRelease
		w.dueq.set(h, w.now.Mono)
	}
	if s.repoll {
		w.repollNow()
	}
}

// repollNow reads what waits for this worker again now, once it may take
// leases after an assignment was refused because it could not yet
// (sessionReady): by a poll of the index, even while its watch is up (the
// watch reported that assignment already and reports nothing more until
// the row changes again: swarm seed 1836 with -renewal session, T2).
func (w *Worker) repollNow() {
	w.sess.repoll = false
	w.asg.nextPoll = w.now.Mono
	if !w.bug("refused-waits-watch") {
		w.asg.watch.owed = w.asg.watch.up
	}
}

// sessionNamed reports whether o is a lease bound to a session whose row
// this worker last saw naming it: its holder's leases are counted for it
// (loads) until the assigner has ended the session, not dropped from its
// load the moment the session looks still (the next round would move
// leases back to it: swarm seed 749, B1).
func (w *Worker) sessionNamed(o *observation) bool { return w.namingSession(o) != nil }

// namingSession returns the session row of o's lease if this worker last
// saw it naming the lease's session (held by its owner, written by that
// session), nil otherwise or if the lease is bound to none.
func (w *Worker) namingSession(o *observation) *rowState {
	if o.row.Session == "" || o.row.Owner == "" {
		return nil
	}
	rs := w.rows.get(w.sessionKeyOf(o.row.Owner))
	if rs == nil || !rs.observed || rs.obs.row.Owner != o.row.Owner || rs.obs.row.Writer != o.row.Session {
		return nil
	}
	return rs
}

// noteSessionLive records, for the assigner, the session rows of its
// scan: a member whose session row's version changed within a lease
// duration is alive. The session of the previous assigner's process
// shows nothing of it (its assigner row expired: it renews nothing, and
// this worker may first see its last renewal well after it was written);
// a later process of the same owner id starts a session of its own.
func (a *assigner) noteSessionLive(w *Worker, rs *rowState) {
	a.noteSessionSight(w, rs)
	o := &rs.obs
	if a.previousProcess(&o.row) && !w.bug("previous-session-revives") {
		return
	}
	if o.row.Owner != "" && w.showsLife(o) && IsSessionRow(rs.key) {
		a.live[o.row.Owner] = max(a.live[o.row.Owner], o.seenAt)
	}
}
