package engine

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// assigner is the state of the worker while it holds the assigner row
// (see assign.go).
type assigner struct {
	since time.Duration // when this worker took the row
	// previous and previousWriter name the process whose expired assigner
	// row this worker took over: that process dropped its leases when the
	// row expired in its own view, so the rows it wrote that this worker's
	// first scan shows (firstScan) may be reassigned at once. Rows it takes
	// later, as an ordinary worker, are seen later.
	previous, previousWriter string
	firstScan                time.Duration

	pollInFlight bool
	nextPoll     time.Duration
	confirming   map[string]bool
	// watch is the watch of the rows that wait for the assigner
	// (Config.WatchPending)
	watch pendingWatch

	live    map[string]time.Duration // member -> when last seen renewing (or taking, or inherited)
	hellos  map[string]time.Duration // member -> when its hello was last read
	leaving map[string]time.Duration // member -> when it released a lease for its shutdown, or said it was leaving (LeavingPrefix)
	// helloWriters: member -> the process (Lease.Writer) of its last hello
	// read: a leaving row of another process is its predecessor's
	helloWriters map[string]string
	writers      map[string]string // Lease.Writer -> the owner that wrote with it
	moved        map[string]move   // lease key -> when the assigner last moved it for balance
	// epoch counts changes of the member list (lastMembers): a lease moved
	// in an earlier epoch may move again (the fleet changed), one moved in
	// this epoch only after MoveQuiet.
	epoch       int
	lastMembers []string
	expiry      time.Duration            // the earliest time an observed lease expires in this worker's view
	requests    map[string]time.Duration // lease key -> when its handoff request was written
	requestFrom map[string]string        // lease key -> the owner its handoff request was sent to
	// created: this worker created the assigner row (no assigner before
	// it), so it has seen every lease's owner from its first scan and
	// need not wait a lease duration before it balances
	created bool
	// leaveLoads are the members' loads as this assigner's releases for
	// its own shutdown leave them (releaseTo)
	leaveLoads map[string]float64
	// untaken: lease key -> how many times in a row this assigner gave
	// the lease to another member because its receiver did not take it
	// (see untakenWait); cleared when a scan shows the lease owned.
	// stalled: member -> when this assigner last gave away an assignment
	// that member did not take: it is given nothing until the assigner
	// sees it alive again (see stalledMember).
	untaken map[string]int
	stalled map[string]time.Duration
	// slow: member -> how many of this assigner's assignments it let
	// stand untaken (see untakenWait); dropped when it leaves the members
	slow map[string]int
	// mine: lease key -> the version (Counter) of the assignment this
	// assigner wrote last, until a scan shows the lease owned
	mine map[string]int64
	// untakenAt is when the next assignment seen here becomes due to be
	// given away (0: none); untakenReads are the rows read for it
	// (readUntaken), by key, until their replies come
	untakenAt    time.Duration
	untakenReads map[string]bool
	// sessions: the reads of session rows between scans (session_poll.go)
	sessions sessionPolls
}

// expiredFor returns how long a lease must have stood still in the
// assigner's view to be taken for expired: the lease duration.
func (w *Worker) expiredFor() time.Duration {
	if w.bug("assigner-early-expiry") {
		return w.cfg.LeaseDuration / 2
	}
	return w.expiryWait()
}

// expiryWait returns how long a lease version must have stood still in a
// taker's view (a worker taking leases itself, or the assigner) before it
// is expired: the lease duration, never less. The planted bug
// wait-less-margin subtracts the safety margin, which is the holder's to
// take, not the taker's.
func (w *Worker) expiryWait() time.Duration {
	if w.bug("wait-less-margin") {
		return w.cfg.LeaseDuration - w.cfg.SafetyMargin
	}
	return w.cfg.LeaseDuration
}

// untakenWait returns how long an assignment this assigner wrote (an
// unowned row whose Pending names a member: o) must have stood still in
// its view before it gives the lease to another member: a few of the
// receiver's polls, not a lease duration. A live receiver learns of the
// assignment within the pending index's lag and one poll
// (PendingPollInterval, jittered by up to a tenth), then reads the row
// strongly consistently and takes it: three poll intervals allow a poll
// interval for the index's lag (DynamoDB's global secondary indexes lag
// their table by well under a second; a default poll interval is
// LeaseDuration/8), a jittered poll and the round trips of the read and
// the take. The assigner reads the row when the wait is over (readUntaken)
// rather than waiting for its next scan.
//
// A receiver that is live but slow (an index that lags more than a poll
// interval, throttled reads) must not lose its assignments again and
// again: the wait doubles for each time in a row the same lease was given
// away untaken (assigner.untaken), and for each assignment the same
// receiver let stand before (assigner.slow), and is never more than
// LeaseDuration, the wait of old. So a slow receiver loses at most a few
// assignments before it has the old wait, and a lease whose receivers are
// all slow goes back to the old pace instead of moving at every poll.
//
// Safety does not depend on this wait: the row is unowned and every write
// is conditioned on its version, so the first receiver's late take fails
// its condition once the reassignment applied (and the reassignment fails
// its own if the take applied first); and the reassignment keeps the row's
// HandoffFrom, so a receiver of a lease released before its thief acted
// still waits a lease duration from its own first read of the row before
// it acts (see onConfirm). The planted bug untaken-waits-lease restores
// the old wait of a lease duration.
func (w *Worker) untakenWait(o *observation) time.Duration {
	d := w.cfg.LeaseDuration
	if w.bug("untaken-waits-lease") {
		return d
	}
	wait := 3 * w.cfg.PendingPollInterval
	n := 0
	if a := w.asg.as; a != nil {
		n = a.untaken[o.row.Key] + a.slow[o.row.Pending]
	}
	for i := n; i > 0 && wait < d; i-- {
		wait *= 2
	}
	return min(wait, d)
}

// stalledMember reports whether member m let an assignment of this
// assigner stand untaken and has shown no sign of life since: no new
// version of a row it holds and no hello. Such a member (cut off from the
// table, or dead and not yet out of the member list) is given no lease,
// so its other assignments do not wait for it too; a live member shows
// itself again at its next renewal (every RenewInterval) or hello (every
// lease duration while it holds nothing), and is then given leases again.
func (a *assigner) stalledMember(m string) bool {
	t, ok := a.stalled[m]
	return ok && a.live[m] <= t && a.hellos[m] <= t
}

// MoveQuiet is how long the assigner leaves a lease where it moved it
// (unless its holder dies, or the fleet changes): a steady fleet never
// moves a lease twice in that time.
const MoveQuiet = 10 * time.Minute

// move is a balance move of a lease: when, and in which epoch of the
// member list.
type move struct {
	at    time.Duration
	epoch int
}

// previousProcess reports whether row was last written by the process
// whose expired assigner row this worker took over (previous and
// previousWriter): such a row shows nothing of that process's life.
func (a *assigner) previousProcess(row *Lease) bool {
	return a.previousWriter != "" && row.Owner == a.previous && row.Writer == a.previousWriter
}

func newAssigner(now time.Duration, members []string) *assigner {
	a := &assigner{since: now, live: map[string]time.Duration{}, hellos: map[string]time.Duration{}, leaving: map[string]time.Duration{},
		helloWriters: map[string]string{}, writers: map[string]string{}, moved: map[string]move{},
		requests: map[string]time.Duration{}, requestFrom: map[string]string{}, confirming: map[string]bool{},
		untaken: map[string]int{}, stalled: map[string]time.Duration{}, slow: map[string]int{}, mine: map[string]int64{}, untakenReads: map[string]bool{}}
	for _, m := range members {
		a.live[m] = now // inherited: alive until shown otherwise
	}
	return a
}

// becomeAssigner starts the assigner's work on a freshly taken row.
func (w *Worker) becomeAssigner(h *holding, wr *write) {
	h.control = true
	a := newAssigner(w.now.Mono, wr.row.Children)
	if wr.reason == "assigner" && wr.previous != "" && wr.previous != w.cfg.Owner {
		a.previous, a.previousWriter = wr.previous, wr.prevWriter
	}
	a.created = wr.create
	if a.previous != "" {
		delete(a.live, a.previous) // its row expired in this worker's view: it renews nothing
	}
	// A member whose rows this worker has observed (a deputy's scans, see
	// warming) is alive as of their latest version, not as of now: a
	// worker that died with the previous assigner is not handed leases it
	// will never take.
	seen := map[string]time.Duration{}
	for _, rs := range w.rows.all {
		if rs == nil || !rs.observed {
			continue
		}
		if o := &rs.obs; o.ok && o.row.Owner != "" {
			seen[o.row.Owner] = max(seen[o.row.Owner], o.seenAt)
		}
	}
	for m := range a.live {
		if t, ok := seen[m]; ok {
			a.live[m] = t
		}
	}
	a.live[w.cfg.Owner] = w.now.Mono
	w.asg.as = a
	w.nextScan = w.now.Mono
	w.sync.next = w.now.Mono
}

// members returns the workers the assigner counts on, sorted: itself,
// those whose rows it saw change within two renew intervals and a scan
// interval (a worker renews every RenewInterval), and those whose hello it
// read within one and a half lease durations (an idle worker says hello
// every lease duration).
func (a *assigner) members(w *Worker) []string {
	now := w.now.Mono
	renewing := 2*w.cfg.RenewInterval + w.cfg.AssignerScanInterval
	var out []string
	for m, t := range a.live {
		if now-t <= renewing || m == w.cfg.Owner {
			out = append(out, m)
		}
	}
	for m, t := range a.hellos {
		if now-t <= 3*w.cfg.LeaseDuration/2 && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	// A worker that released a lease for its shutdown is leaving: not a
	// member until it says hello again.
	out = slices.DeleteFunc(out, func(m string) bool {
		t, ok := a.leaving[m]
		return ok && m != w.cfg.Owner && a.hellos[m] <= t
	})
	slices.Sort(out)
	return out
}

// learnWriter notes who wrote row when the version this assigner saw last,
// prev, is an assignment to a worker: no one but the assignee writes the
// row next (a worker takes only what is assigned to it, and declines
// without a write), so a later version that another process wrote, this
// assigner's own writes aside, is the assignee's. A worker assigned a
// lease that takes it and releases it for its shutdown before any scan
// shows its take is then known to be leaving, and is not given the lease
// back.
func (a *assigner) learnWriter(w *Worker, prev, row Lease) {
	if row.Writer == "" || row.Writer == w.writer || row.Counter <= prev.Counter || row.Key != prev.Key {
		return
	}
	if prev.Owner != "" || prev.Pending == "" || prev.Pending == AssignerPending {
		return
	}
	if _, ok := a.writers[row.Writer]; !ok {
		a.writers[row.Writer] = prev.Pending
	}
}

// released notes the release, for its shutdown, of a lease that row now
// shows, first seen at seenAt: its writer is leaving as of then. A hello
// read since (the process that replaced it under the same owner id) makes
// the owner a member again: the released row stands until it is assigned,
// and marking the owner leaving again at every read of it would undo that
// hello for as long as it stands (soak seed 36816 of d8f57de, S4 and L1:
// the assigner, at its own cap, could give the released lease to no one
// but the restarted worker, which it never counted as a member again). A
// hello of an earlier process of that owner, read before, is no such sign
// (soak seed 57657 of 01b4227, T2: the leaving worker was given a lease).
func (a *assigner) released(w *Worker, row Lease, seenAt time.Duration) {
	m, ok := a.writers[row.Writer]
	if !ok || row.Owner != "" || row.Pending != AssignerPending {
		return
	}
	if w.bug("released-marks-successor-leaving") {
		a.leaving[m] = w.now.Mono
		return
	}
	a.leaving[m] = max(a.leaving[m], seenAt)
}

// advanceAssigner does the assigner's periodic work: scans, shard syncs,
// and reads of the rows that wait for it.
func (w *Worker) advanceAssigner() {
	now := w.now.Mono
	a := w.asg.as
	if !w.isAssigner() {
		return // not yet acting (a take waiting out its predecessor), or lapsing
	}
	if !w.sync.inFlight() && now >= w.sync.next {
		w.startSync()
	}
	if !w.scanInFlight && !w.sync.inFlight() && now >= w.nextScan {
		w.scanInFlight = true
		w.scanSentAt = now
		w.nextScan = now + w.jitter(w.cfg.AssignerScanInterval)
		if w.bug("assigner-scans-slowly") {
			w.nextScan = now + w.jitter(w.cfg.TakeInterval)
		}
		w.call(Call{Op: OpListLeases, Consistent: true}, pendingCall{purpose: forScan})
	}
	if !a.pollInFlight && now >= a.nextPoll && a.watch.polls() {
		a.pollInFlight = true
		a.watch.owed = false
		a.nextPoll = now + w.jitter(w.cfg.PendingPollInterval)
		w.call(Call{Op: OpListPending, Key: AssignerPending}, pendingCall{purpose: forAssignerPoll})
	}
	w.readAssignerNotified()
	w.readSessions()
	if a.untakenAt > 0 && now >= a.untakenAt {
		a.untakenAt = 0
		w.readUntaken()
	}
	if a.expiry > 0 && now >= a.expiry && !w.bug("expiry-at-scans-only") {
		// A lease expires now in this worker's view: assign it at once,
		// from what the last scan showed (the write is conditioned on that
		// version: if the holder renewed since, it fails).
		a.expiry = 0
		w.assignExpired()
	}
}

// assignExpired assigns the observed leases that have expired in this
// worker's view since the last scan, and notes when the next one expires.
func (w *Worker) assignExpired() {
	a := w.asg.as
	now := w.now.Mono
	members := a.members(w)
	loads := w.loads()
	var expired []*rowState
	for _, rs := range w.rows.all {
		if rs == nil || !rs.observed {
			continue
		}
		if o := &rs.obs; o.ok && o.row.Owner != "" && o.row.Owner != w.cfg.Owner && !o.row.Checkpoint.IsShardEnd() && now-w.stillSince(o) >= w.expiredFor() &&
			rs.write == nil && rs.held == nil && !w.foreign(o) && !w.gated(o) {
			expired = append(expired, rs)
		}
	}
	slices.SortFunc(expired, byRowKey)
	for _, rs := range expired {
		o := &rs.obs
		if w.endSessionFirst(o) {
			continue
		}
		to := w.leastLoaded(loads, o.row.Owner, members)
		w.assignTo(o, to, "expired")
		loads[to] += w.weight(o.row)
	}
	w.noteExpiry()
}

// noteExpiry sets the assigner's next wake-up for an expiry: the earliest
// time an observed lease of another worker expires in its view; and for
// an assignment its receiver has not taken (see untakenDue).
func (w *Worker) noteExpiry() {
	a := w.asg.as
	a.expiry = 0
	a.untakenAt = 0
	for _, rs := range w.rows.all {
		if rs == nil || !rs.observed {
			continue
		}
		if o := &rs.obs; o.ok && o.row.Owner != "" && o.row.Owner != w.cfg.Owner && !o.row.Checkpoint.IsShardEnd() {
			if t := w.stillSince(o) + w.expiredFor(); t > w.now.Mono && (a.expiry == 0 || t < a.expiry) {
				a.expiry = t
			}
		} else if t, ok := w.untakenDue(o); ok && t > w.now.Mono {
			a.noteUntaken(t)
		}
	}
}

// notTakenBy starts the reason of an assignment given away because its
// receiver (the rest of the reason) did not take it.
const notTakenBy = "not taken by "

// untakenDue returns when the assignment o shows (an unowned row whose
// Pending names a worker) is due to be given to another member if its
// receiver has not taken it: untakenFor after this worker saw it.
func (w *Worker) untakenDue(o *observation) (time.Duration, bool) {
	if !o.ok || o.row.Owner != "" || o.row.Pending == "" || o.row.Pending == AssignerPending || o.row.Checkpoint.IsShardEnd() {
		return 0, false
	}
	return o.seenAt + w.untakenFor(o), true
}

// untakenFor returns how long the assignment o must stand still in this
// worker's view before it goes to another member: untakenWait for an
// assignment this assigner wrote (ownAssignment), a lease duration (the
// wait of old) for one it did not: a lease a holder (this worker too)
// released to the receiver of a handoff or of its shutdown (a planned
// move: that receiver was chosen a moment before, as a live member under
// its fair share), or that an earlier assigner assigned.
func (w *Worker) untakenFor(o *observation) time.Duration {
	if !w.ownAssignment(o) {
		return w.cfg.LeaseDuration
	}
	return w.untakenWait(o)
}

// ownAssignment reports whether o's version is an assignment this
// assigner wrote (assigner.mine).
func (w *Worker) ownAssignment(o *observation) bool {
	a := w.asg.as
	if a == nil {
		return false
	}
	c, ok := a.mine[o.row.Key]
	return ok && c == o.row.Counter
}

// noteUntaken makes t, when an assignment becomes due, a wake-up.
func (a *assigner) noteUntaken(t time.Duration) {
	if a.untakenAt == 0 || t < a.untakenAt {
		a.untakenAt = t
	}
}

// readUntaken reads, strongly consistently, every assignment that is due
// (untakenDue) since the assigner's last scan, rather than waiting for
// its next scan to show it: the reply (onUntakenRead) gives it to
// another member if it still stands.
func (w *Worker) readUntaken() {
	a := w.asg.as
	now := w.now.Mono
	for _, rs := range w.rows.all {
		if rs == nil || !rs.observed || rs.write != nil || rs.held != nil {
			continue
		}
		o := &rs.obs
		t, ok := w.untakenDue(o)
		if !ok {
			continue
		}
		if t > now && !(w.ownAssignment(o) && w.stalled(o.row.Pending)) {
			a.noteUntaken(t)
			continue
		}
		if key := o.row.Key; !a.untakenReads[key] && !w.foreign(o) {
			a.untakenReads[key] = true
			w.call(Call{Op: OpGetLease, Key: key}, pendingCall{purpose: forUntakenRead, key: key})
		}
	}
}

// onUntakenRead acts on the read of an assignment that was due
// (readUntaken): one that still stands, unchanged for untakenFor in this
// worker's view, goes to another member, as at a scan (assignFrom).
func (w *Worker) onUntakenRead(key string, r *Result) {
	a := w.asg.as
	if a == nil {
		return
	}
	delete(a.untakenReads, key)
	if r.Err != nil || !w.isAssigner() || w.shutdown {
		return
	}
	o := w.observeRow(r.Lease)
	rs := w.rows.get(key)
	row := &o.row
	if !o.ok || w.foreign(o) || w.gated(o) || rs.write != nil || rs.held != nil || row.Owner != "" ||
		row.Pending == "" || row.Pending == AssignerPending || row.Checkpoint.IsShardEnd() || !w.untakenGone(o) {
		return
	}
	members := a.members(w)
	if !slices.Contains(members, row.Pending) {
		w.assignTo(o, w.leastLoaded(w.loads(), "", members), "unowned")
		return
	}
	w.giveUpOn(o)
	w.assignTo(o, w.leastLoaded(w.loads(), w.notAgain(row.Pending), members), notTakenBy+row.Pending)
}

// notAgain is whom an assignment that m did not take is not given to
// again: m, unless m is this worker, the assigner (a lease assigned to it
// before it became the assigner), which may take it itself.
func (w *Worker) notAgain(m string) string {
	if m == w.cfg.Owner {
		return ""
	}
	return m
}

// untakenGone reports whether the assignment o (see untakenDue) is to be
// given to another member: it has stood still for untakenFor in this
// worker's view, or its receiver is stalled (it let another assignment
// stand that long and has shown no sign of life since), so that the
// leases assigned to a worker that is cut off or dead do not each wait
// for it in turn.
func (w *Worker) untakenGone(o *observation) bool {
	return w.now.Mono-o.seenAt >= w.untakenFor(o) || w.ownAssignment(o) && w.stalled(o.row.Pending)
}

// giveUpOn notes that the assignment o goes to another member untaken:
// the lease's next assignment waits longer (untakenWait), its receiver is
// stalled (it is given nothing until it shows itself alive), and its
// other assignments are read at once (readUntaken) to be given away too.
func (w *Worker) giveUpOn(o *observation) {
	a := w.asg.as
	a.untaken[o.row.Key]++
	if o.row.Pending != w.cfg.Owner && !w.stalled(o.row.Pending) {
		a.stalled[o.row.Pending] = w.now.Mono
		a.noteUntaken(w.now.Mono)
	}
}

func (w *Worker) wakeAssigner(min func(time.Duration)) {
	if !w.scanInFlight {
		min(w.nextScan)
	}
	if !w.sync.inFlight() {
		min(w.sync.next)
	}
	if !w.asg.as.pollInFlight && w.asg.as.watch.polls() {
		min(w.asg.as.nextPoll)
	}
	if h := w.heldAssignerRow(); h != nil {
		min(h.actFrom)
	}
	if w.asg.as.expiry > 0 {
		min(w.asg.as.expiry)
	}
	if w.asg.as.untakenAt > 0 {
		min(w.asg.as.untakenAt)
	}
	if s := &w.asg.as.sessions; s.next > 0 && s.reads == 0 {
		min(s.next)
	}
}

// onAssignerPoll reads each row that waits for the assigner.
func (w *Worker) onAssignerPoll(r *Result) {
	a := w.asg.as
	if a == nil {
		return
	}
	a.pollInFlight = false
	if r.Err != nil {
		a.watch.owed = a.watch.up
		return
	}
	for _, row := range r.Listing.Leases {
		if a.confirming[row.Key] || w.writeOf(row.Key) != nil {
			// A read or a write of the row is in flight, and may not show
			// what this poll did. While the watch is up, no poll or
			// report shows the row again: it is read once that call has
			// ended (soak seed 28644 of d8f57de, L1: the read the watch
			// owed at its start skipped a worker's new hello while the
			// delete of its last one was in flight, and the worker was
			// never a member again).
			if a.watch.up && !w.bug("owed-poll-skips-busy-rows") {
				a.watch.note([]PendingChange{{Key: row.Key}}, w.now.Mono)
			}
			continue
		}
		a.confirming[row.Key] = true
		w.call(Call{Op: OpGetLease, Key: row.Key}, pendingCall{purpose: forAssignerConfirm, key: row.Key})
	}
}

// onAssignerConfirm acts on a row that waits for the assigner: a hello
// registers its worker (and is deleted), a released lease is assigned.
func (w *Worker) onAssignerConfirm(key string, r *Result) {
	a := w.asg.as
	if a == nil {
		return
	}
	delete(a.confirming, key)
	// No poll will show the row again, and no write may change it (a
	// hello stands until the assigner deletes it): a read that failed, or
	// that came back while this worker holds the assigner row but does not
	// act on it (a renewal slow past its margin), is made again later.
	lapsing := !w.isAssigner() && w.heldAssignerRow() != nil
	if (r.Err != nil || lapsing) && a.watch.up {
		a.watch.note([]PendingChange{{Key: key}}, w.now.Mono+w.cfg.PendingPollInterval)
	}
	if r.Err != nil || !w.isAssigner() || r.Lease.Pending != AssignerPending {
		return
	}
	row := r.Lease
	if who, ok := strings.CutPrefix(key, LeavingPrefix); ok {
		// a worker that shut down holding nothing: not a member until it
		// says hello again (unless its successor under the same id has
		// said hello already)
		if hw, ok := a.helloWriters[who]; !ok || hw == row.Writer {
			a.leaving[who] = w.now.Mono
		}
		if rs := w.rows.intern(key); rs.write == nil {
			wr := &write{kind: wDelete, key: key, expect: ExpectOf(row)}
			w.setWrite(rs, wr)
			w.sendWrite(wr)
		}
		return
	}
	if who, ok := strings.CutPrefix(key, HelloPrefix); ok {
		a.hellos[who] = w.now.Mono
		a.helloWriters[who] = row.Writer
		if !slices.Contains(a.lastMembers, who) && !w.scanInFlight {
			// a new member: scan now, to balance onto it, rather than at
			// the next scan
			w.nextScan = min(w.nextScan, w.now.Mono)
		}
		if rs := w.rows.intern(key); rs.write == nil {
			wr := &write{kind: wDelete, key: key, expect: ExpectOf(row)}
			w.setWrite(rs, wr)
			w.sendWrite(wr)
		}
		return
	}
	if rs := w.rows.get(key); rs != nil && rs.observed && rs.obs.ok {
		a.learnWriter(w, rs.obs.row, row)
	}
	o := w.observeRow(row) // the freshest version this worker knows: not older than row
	seen := w.now.Mono
	if o.row.Counter == row.Counter {
		seen = o.seenAt
	}
	a.released(w, row, seen)
	if o.ok && !w.foreign(o) && o.row.Owner == "" && o.row.Pending == AssignerPending && !o.row.Checkpoint.IsShardEnd() && !w.gated(o) {
		w.assignTo(o, w.leastLoaded(w.loads(), "", a.members(w)), "released")
	}
}

// assignFrom is the assigner's round over a strongly consistent scan: it
// notes who is alive, assigns what needs an owner, cancels handoff
// requests that went nowhere, and balances.
func (w *Worker) assignFrom(rows []*rowState) {
	a := w.asg.as
	if a == nil || !w.isAssigner() || w.shutdown {
		return
	}
	now, d := w.now.Mono, w.cfg.LeaseDuration
	if a.firstScan == 0 {
		a.firstScan = now
	}
	// Liveness: an owner whose row's version changed within a lease
	// duration in this worker's view is alive.
	for _, rs := range rows {
		if rs.observed && !rs.obs.ok {
			a.noteSessionLive(w, rs)
		}
		if !rs.observed || !rs.obs.ok {
			continue
		}
		o := &rs.obs
		if o.row.Owner != "" && o.row.Writer != "" {
			a.writers[o.row.Writer] = o.row.Owner
		}
		// (the rows of the previous assigner's process show nothing of
		// it: its row expired, it renews nothing, and this worker may
		// first see their last versions well after they were written;
		// nor do rows written without a writer nonce, a KCL worker's: it
		// takes no assignment and never deputizes for the assigner row)
		kcl := o.row.Writer == "" && !w.bug("kcl-owners-members")
		if o.row.Owner != "" && w.showsLife(o) && !a.previousProcess(&o.row) && !kcl {
			a.live[o.row.Owner] = max(a.live[o.row.Owner], o.seenAt)
		}
		if o.row.Owner != "" && len(a.untaken)+len(a.mine) > 0 {
			delete(a.untaken, o.row.Key) // taken: its next assignment waits untakenWait afresh
			delete(a.mine, o.row.Key)
		}
		a.released(w, o.row, o.seenAt)
	}
	members := a.members(w)
	if !slices.Equal(members, a.lastMembers) {
		a.epoch++
		a.lastMembers = members
		for m := range a.slow {
			if !slices.Contains(members, m) {
				delete(a.slow, m) // a worker that comes back starts afresh
			}
		}
	}
	loads := w.loads()
	var free []*observation
	var why, not []string
	for _, rs := range rows {
		if !rs.observed {
			continue
		}
		o := &rs.obs
		if !o.ok || w.foreign(o) || o.row.Checkpoint.IsShardEnd() || rs.write != nil || rs.held != nil {
			continue
		}
		row := &o.row
		switch {
		case w.gated(o):
		case row.Owner == "":
			if row.Pending == "" || row.Pending == AssignerPending || !slices.Contains(members, row.Pending) {
				free, why, not = append(free, o), append(why, "unowned"), append(not, "")
			} else if w.untakenGone(o) {
				// its receiver did not take it within a few of its polls:
				// another member takes it (never the same one again)
				free, why, not = append(free, o), append(why, notTakenBy+row.Pending), append(not, w.notAgain(row.Pending))
				w.giveUpOn(o)
			}
		case row.Owner == a.previous && (row.Writer == a.previousWriter || w.bug("previous-assigner-any-writer")) && a.previousWriter != "" && o.seenAt <= a.firstScan && !w.bug("previous-assigner-leases-wait"):
			// The previous assigner's leases: dropped when its row expired.
			free, why, not = append(free, o), append(why, "held by the previous assigner"), append(not, "")
		case now-w.stillSince(o) >= w.expiredFor():
			if !w.endSessionFirst(o) {
				free, why, not = append(free, o), append(why, "expired"), append(not, "")
			}
		case row.HandoffTo != "":
			if at, ok := a.requests[row.Key]; ok && now-at >= 2*d && w.stillSince(o) > at {
				w.cancelHandoff(o) // the owner renews but does not hand over
			}
		}
	}
	for i, o := range free {
		to := w.leastLoaded(loads, cmp.Or(not[i], o.row.Owner), members)
		w.assignTo(o, to, why[i])
		loads[to] += w.weight(o.row)
	}
	if (now-a.since >= d || a.created && w.cfg.BalanceBy != BalanceThroughput) && !w.staleMember(rows, members) {
		// (by throughput, not before the holders have reported theirs)
		w.balance(rows, loads, members)
	}
	w.noteExpiry()
}

// assignTo hands the lease of o to worker to: the assigner takes it itself,
// or makes it unowned with Pending naming to. The write is conditioned on
// the version the assigner saw.
func (w *Worker) assignTo(o *observation, to, why string) {
	rs := w.rows.get(o.row.Key)
	if to == "" || rs.writeOrNil() != nil {
		return
	}
	if h := rs.heldOrNil(); h != nil && !h.gone {
		return // this worker holds it: never assigned away but by a handoff
	}
	// Handed out anew (its holder died, or let it go): its place is
	// not a balance move of the fleet as it is, so it may move again.
	delete(w.asg.as.moved, o.row.Key)
	if o.row.Owner != "" {
		// taken since it was last given away untaken: its next
		// assignment waits untakenWait afresh
		delete(w.asg.as.untaken, o.row.Key)
	}
	if to == w.cfg.Owner {
		actFrom := w.now.Mono
		if o.row.Owner == "" && o.row.HandoffFrom != "" {
			actFrom = o.seenAt + w.cfg.LeaseDuration
		}
		w.take(candidate{row: o.row, actFrom: actFrom, reason: "assigned"})
		return
	}
	row := o.row.Clone()
	prev := row.Owner
	if prev != "" {
		// Expired: its holder's own view has expired, so has any handoff
		// it was waiting out.
		row.Owner, row.HandoffFrom = "", ""
	}
	row.Counter++
	row.Pending, row.HandoffTo = to, ""
	giveUp := "" // the receiver that let it stand, when it is given away untaken
	if strings.HasPrefix(why, notTakenBy) {
		giveUp = o.row.Pending
	}
	w.sendAssign(&write{kind: wAssign, key: row.Key, expect: ExpectOf(o.row), row: row, previous: prev, reason: "to " + to + ": " + why, giveUp: giveUp})
}

// sendAssign sends one of the assigner's writes on a row it does not hold.
func (w *Worker) sendAssign(wr *write) {
	rs := w.rows.intern(wr.key)
	if rs.write != nil {
		return
	}
	w.setWrite(rs, wr)
	w.sendWrite(wr)
}

// assignedApplied records an applied write of the assigner.
//
// A handoff request or its cancellation leaves the owner in place and
// renews nothing: the owner adopts the new version with its validity
// unchanged (see adopt), and the write applied on the version this worker
// first saw at wr.stillSince, so no renewal came in between. For expiry
// the lease has stood still since then: a request to a holder that has
// died does not put its lease's expiry off by a lease duration.
func (w *Worker) assignedApplied(wr *write) {
	if IsSessionRow(wr.key) {
		w.sessionEnded(wr)
		return
	}
	o := w.observeRow(wr.row)
	if wr.keepsAge && o.row.Counter == wr.row.Counter && o.row.Owner == wr.row.Owner && wr.stillSince < o.seenAt && !w.bug("handoff-request-resets-age") {
		o.seenAt = wr.stillSince
	}
	if a := w.asg.as; a != nil {
		if wr.giveUp != "" {
			a.slow[wr.giveUp]++ // it let this assignment stand: its next ones wait longer
		}
		if o.row.Owner == "" && o.row.Counter == wr.row.Counter {
			a.mine[wr.key] = wr.row.Counter
		}
		if t, ok := w.untakenDue(o); ok {
			a.noteUntaken(t)
		}
	}
	w.emit(TraceEvent{Kind: TraceAssigned, Key: wr.key, Shard: w.refOf(wr.key), Counter: wr.row.Counter, Previous: wr.previous, Reason: wr.reason})
}

// sortedMembers returns the member list the assigner writes into its row.
func (w *Worker) sortedMembers() []string {
	if w.asg.as == nil {
		return nil
	}
	return w.asg.as.members(w)
}

// releaseTo is whom a lease released for a shutdown waits for: the
// assigner, which hands it out at once, or, when this worker is the
// assigner and leaves, the least loaded other member, which takes it at
// its next read of the rows that wait for it, as the receiver of a
// handoff does: the leases of a leaving assigner need not wait for its
// successor to take the assigner row over and scan.
func (w *Worker) releaseTo(h *holding) string {
	a := w.asg.as
	if a == nil || !w.shutdown || !w.isAssigner() {
		return AssignerPending
	}
	if a.leaveLoads == nil {
		a.leaveLoads = w.loads()
	}
	members := slices.DeleteFunc(a.members(w), func(m string) bool { return m == w.cfg.Owner })
	to := w.leastLoaded(a.leaveLoads, w.cfg.Owner, members)
	if to == "" || to == w.cfg.Owner {
		return AssignerPending
	}
	a.leaveLoads[to] += w.weight(h.row)
	return to
}
