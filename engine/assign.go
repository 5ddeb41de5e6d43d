package engine

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// Assignment by an assigner (Config.Assignment = AssignmentAssigner).
//
// One worker, elected through the table, is the assigner: it holds the
// assigner row (AssignerKey) under the same rules as any lease (a
// compare-and-swap on its version, renewed every RenewInterval, taken over
// only when unowned or seen standing still for LeaseDuration on the
// taker's own clock). It scans the table every AssignerScanInterval,
// observes every lease as a taker would, and writes, always conditioned on
// the version it saw:
//   - assignments: an expired lease (seen standing still for
//     LeaseDuration: its holder's own view has expired), an unowned one, or
//     one this assigner assigned to a worker that has not taken it within
//     a few of that worker's polls (untakenWait: three PendingPollIntervals,
//     doubling for a lease or a receiver that let one stand before, at most
//     LeaseDuration; a lease a holder released to a receiver waits
//     LeaseDuration), becomes unowned with Pending naming the worker that
//     is to take it;
//   - handoff requests, for balance: the owner stays, HandoffTo names the
//     receiver and Pending the owner, which finishes its in-flight batch,
//     lets its processor checkpoint (ShutdownRequested), and releases the
//     lease with Pending naming the receiver. A request the owner does not
//     act on within 2 LeaseDuration while it renews is cancelled; an owner
//     that dies midway is expired like any other, so no lease stays "being
//     handed over".
//
// Every other worker renews its leases and reads only the rows that wait
// for it, every PendingPollInterval, from the store's pending index
// (eventually consistent); it reads each such row strongly consistently
// before it acts, and takes an assignment with a conditional write. The
// deputies (the two workers after the assigner in its member list) read
// the assigner row every PendingPollInterval, the others every two lease
// durations, and take it over when it expires in their own view.
//
// Two workers that both believe they assign are harmless by construction:
// each assignment is conditioned on the version its writer saw, so at most
// one applies to any version, and what makes an assignment safe (the
// previous holder's own view has expired, or it released the lease) does
// not depend on who wrote it. The assigner's own leases are bound to its
// assigner row: it acts on them only while that row is valid in its own
// view and drops them when it is not, so the worker that takes over an
// expired assigner row may reassign them at once.

// AssignerKey is the key of the assigner row.
const AssignerKey = ReservedPrefix + "_assigner"

// HelloPrefix starts the keys of workers' hello rows: a worker that the
// assigner does not know yet, or that holds nothing, announces itself with
// one (Pending AssignerPending); the assigner reads and deletes it.
const HelloPrefix = ReservedPrefix + "_worker:"

// LeavingPrefix starts the keys of the rows a worker that shuts down in
// assigned mode writes once it holds nothing (Pending AssignerPending):
// the assigner reads one, counts its worker out of the members until it
// says hello again, and deletes it. Without it an idle worker that left
// stays a member until its last hello is 1.5 lease durations old, and
// the assigner may give it a lease that nobody then takes.
const LeavingPrefix = ReservedPrefix + "_leaving:"

// IsWorkerRow reports whether key is a worker's hello or leaving row: rows
// that hold no lease, created and deleted again and again with the same
// contents (so that an SDK retry of a create may apply once more after the
// assigner deleted the row).
func IsWorkerRow(key string) bool {
	return strings.HasPrefix(key, HelloPrefix) || strings.HasPrefix(key, LeavingPrefix)
}

// AssignerPending is the Pending of rows that wait for the assigner: a
// lease released by a worker that shut down, a worker's hello.
const AssignerPending = ReservedPrefix + "_assigner"

// Deputies is how many workers after the assigner in its member list watch
// the assigner row closely.
const Deputies = 2

// assignState is a worker's part in assignment by an assigner.
type assignState struct {
	on      bool // assigned mode in force (not fallen back for want of an index)
	indexOK bool // a read of the pending index succeeded: the mode is settled

	resumed      bool // the start-up scan for this process's own rows is done
	pollInFlight bool
	nextPoll     time.Duration

	monitorInFlight bool
	nextMonitor     time.Duration
	members         []string // the assigner row's member list, as last read
	isMember        bool     // members names this worker (see member)
	// deputy's memo: whether this worker is a deputy of depOwner under
	// members (depKnown false: none; members changes clear it)
	depKnown  bool
	depOwner  string
	depIs     bool
	nextHello time.Duration
	// saidGoodbye: the leaving row of this process's shutdown is written
	// (or was tried once)
	saidGoodbye bool
	// watch is the watch of this worker's pending rows (Config.WatchPending)
	watch pendingWatch

	as *assigner // non-nil while this worker holds the assigner row
}

// isAssigner reports whether this worker holds the assigner row and may
// act on it now.
func (w *Worker) isAssigner() bool {
	h := w.heldAssignerRow()
	return h != nil && w.isActing(h)
}

// member reports whether the assigner's member list names this worker.
func (w *Worker) member() bool { return w.asg.isMember }

// deputy reports whether this worker is among the Deputies that follow
// the assigner (owner) in the member list, which watch the assigner row
// closely. Without a list every worker watches closely.
func (w *Worker) deputy(owner string) bool {
	a := &w.asg
	if a.depKnown && a.depOwner == owner {
		return a.depIs
	}
	is := w.isDeputy(owner)
	a.depKnown, a.depOwner, a.depIs = true, owner, is
	return is
}

// isDeputy is deputy without its memo. A worker the list does not name
// yet (new, its hello not yet in the row) counts where it will be once it
// is: in a small fleet it is a deputy from its first read, instead of
// reading the row again only two lease durations later (a fleet of two
// whose assigner then died: a takeover 1.5 lease durations after the
// row's last write).
func (w *Worker) isDeputy(owner string) bool {
	m := w.asg.members
	if len(m) == 0 {
		return true
	}
	if j, found := slices.BinarySearch(m, w.cfg.Owner); !found {
		m = slices.Insert(slices.Clone(m), j, w.cfg.Owner)
	}
	i, found := slices.BinarySearch(m, owner)
	n := len(m)
	if !found {
		i-- // the first deputy is the member after where owner would be
		n++
	}
	for d := 1; d <= Deputies && d < n; d++ {
		if m[(i+d+len(m))%len(m)] == w.cfg.Owner {
			return true
		}
	}
	return false
}

// warming reports whether this worker, a deputy, scans the table as the
// assigner does: the assigner row has stood still longer than its
// renewals allow (see warmingFrom), so this worker may take it over soon.
// Its observations then date from these scans: the leases of a worker
// that died with the assigner, or just before it, expire in its view a
// lease duration after it first saw their last versions, not a lease
// duration after it became the assigner. A live assigner's row moves on
// every RenewInterval, so in a steady fleet no deputy scans.
func (w *Worker) warming() bool {
	at, ok := w.warmingFrom()
	return ok && w.now.Mono >= at
}

// warmingFrom returns when this worker starts warming (ok false: it does
// not, being no deputy of the assigner row's owner, or the row unowned or
// its own): when the row's version has stood still, in its view, for a
// renewal interval plus the deputies' read interval and a fortieth of the
// lease duration (past the longest gap between two versions a live
// assigner's renewals show to a deputy).
func (w *Worker) warmingFrom() (time.Duration, bool) {
	o := w.asgObs
	if o == nil || o.row.Owner == "" || o.row.Owner == w.cfg.Owner || !w.deputy(o.row.Owner) {
		return 0, false
	}
	return o.seenAt + w.cfg.RenewInterval + w.cfg.PendingPollInterval + w.cfg.LeaseDuration/40, true
}

// advanceAssigned does what time demands of a worker in assigned mode.
func (w *Worker) advanceAssigned() {
	now := w.now.Mono
	a := &w.asg
	w.advanceSession()
	if !a.resumed && !w.scanInFlight && now >= w.nextScan && w.sessionHeld() {
		// Once, at start: a process restarted under its owner id resumes
		// the leases its predecessor held.
		w.startScan()
	}
	if !a.pollInFlight && now >= a.nextPoll && a.watch.polls() {
		a.pollInFlight = true
		a.watch.owed = false
		a.nextPoll = now + w.jitter(w.cfg.PendingPollInterval)
		if w.bug("poll-every-lease-duration") {
			a.nextPoll = now + w.jitter(w.cfg.LeaseDuration)
		}
		w.call(Call{Op: OpListPending, Key: w.cfg.Owner}, pendingCall{purpose: forPoll})
	}
	w.readNotified()
	if !a.indexOK {
		return // nothing else until the index answered (or is found missing)
	}
	if a.as == nil && !a.monitorInFlight && now >= a.nextMonitor {
		a.monitorInFlight = true
		w.call(Call{Op: OpGetLease, Key: AssignerKey}, pendingCall{purpose: forMonitor})
	}
	if a.as == nil && now >= a.nextHello && !w.shutdown && (!w.member() || w.leases() == 0) {
		a.nextHello = now + w.jitter(w.cfg.LeaseDuration)
		w.hello()
	}
	if a.as == nil && a.resumed && !w.scanInFlight && now >= w.nextScan && (w.warming() || w.bug("every-worker-scans")) {
		w.scanInFlight = true
		w.scanSentAt = now
		w.nextScan = now + w.jitter(w.cfg.AssignerScanInterval)
		w.call(Call{Op: OpListLeases, Consistent: true}, pendingCall{purpose: forScan})
	}
	if a.as != nil {
		w.advanceAssigner()
	} else if w.sync.asked && !w.sync.inFlight() && now >= w.sync.next {
		// A non-assigner syncs only when it must learn the listing (the
		// children of a shard it ended); it creates and deletes nothing.
		w.sync.asked = false
		w.startSync()
	}
}

// wakeAssigned reports to min every time at which assigned mode needs the
// worker.
func (w *Worker) wakeAssigned(min func(time.Duration)) {
	a := &w.asg
	if !a.pollInFlight && a.watch.polls() {
		min(a.nextPoll)
	}
	w.wakeWatches(min)
	if !a.indexOK {
		return
	}
	if a.as == nil && !a.monitorInFlight {
		min(a.nextMonitor)
	}
	if a.as == nil && (!w.member() || w.leases() == 0) {
		min(a.nextHello)
	}
	if !a.resumed && !w.scanInFlight {
		min(w.nextScan)
	}
	if w.sessionMode() && w.sess.held == nil && !w.sess.reading {
		min(w.sess.nextTry)
	}
	if len(w.sess.orphans) > 0 && w.sess.orphanReads == 0 {
		min(w.sess.orphanNext)
	}
	if a.as == nil && a.resumed && !w.scanInFlight {
		if at, ok := w.warmingFrom(); ok {
			min(max(at, w.nextScan))
		}
	}
	if a.as != nil {
		w.wakeAssigner(min)
	} else if w.sync.asked && !w.sync.inFlight() {
		min(w.sync.next)
	}
}

// fallBack leaves assigned mode for good: the store has no pending index.
func (w *Worker) fallBack(err error) {
	if !w.asg.on {
		return
	}
	w.asg.on = false
	w.emit(TraceEvent{Kind: TraceModeFallback, Reason: err.Error()})
	if h := w.heldAssignerRow(); h != nil {
		w.loseLease(h, "assignment by an assigner is off: "+err.Error())
	}
	w.asg.as = nil
	w.nextScan = w.now.Mono
	w.sync.next = w.now.Mono
}

// onPoll handles the rows the pending index shows waiting for this worker.
func (w *Worker) onPoll(r *Result) {
	w.asg.pollInFlight = false
	if errors.Is(r.Err, ErrNoIndex) {
		w.fallBack(r.Err)
		return
	}
	if r.Err != nil {
		// the next poll comes soon; with a watch up, the one it owes
		w.asg.watch.owed = w.asg.watch.up
		return
	}
	w.asg.indexOK = true
	for _, row := range r.Listing.Leases {
		w.confirm(row.Key)
	}
}

// confirm reads key strongly consistently before acting on what the index
// said of it.
func (w *Worker) confirm(key string) {
	if w.shutdown {
		return
	}
	rs := w.rows.get(key)
	if rs != nil && (rs.confirming || rs.write != nil) {
		if w.asg.watch.up && !w.bug("owed-poll-skips-busy-rows") {
			// it may not show what the index did, and with the watch up
			// nothing shows the row again: read once the call has ended
			// (as the assigner does, see onAssignerPoll)
			w.asg.watch.note([]PendingChange{{Key: key}}, w.now.Mono)
		}
		return
	}
	if h := rs.heldOrNil(); h != nil && (h.handing || h.write != nil) {
		return // already handing over, or a write of it in flight (its outcome will show the change)
	}
	if rs == nil {
		rs = w.rows.intern(key)
	}
	rs.confirming = true
	w.call(Call{Op: OpGetLease, Key: key}, pendingCall{purpose: forConfirm, key: key, rs: rs})
}

// onConfirm acts on a row that the index said waits for this worker, as a
// strongly consistent read shows it (rs: key's row, nil if none).
func (w *Worker) onConfirm(key string, rs *rowState, r *Result) {
	if rs != nil && rs.confirming {
		rs.confirming = false
		w.rows.tidy(rs)
	}
	if r.Err != nil && w.asg.watch.up {
		// no poll will show the row again: read it again later
		w.asg.watch.note([]PendingChange{{Key: key}}, w.now.Mono+w.cfg.PendingPollInterval)
	}
	if r.Err != nil || w.shutdown {
		return
	}
	row := r.Lease
	o := w.observeRow(row)
	rs = w.rows.get(key)
	if h := rs.heldOrNil(); h != nil {
		if !h.gone && h.write == nil && w.adoptable(h, row) {
			w.adopt(h, row)
		}
		return
	}
	if row.Pending != w.cfg.Owner || rs.writeOrNil() != nil || !o.ok || w.foreign(o) || row.Checkpoint.IsShardEnd() {
		return
	}
	if limit := w.cfg.MaxLeasesForWorker; limit > 0 && w.leases() >= limit && row.Owner != w.cfg.Owner {
		return // at its cap: declined; the assigner reassigns it
	}
	switch {
	case row.Owner == "":
		actFrom := w.now.Mono
		if row.HandoffFrom != "" || w.bug("receiver-waits-out-holder") {
			// released before its thief ever acted: its previous owner may
			// still act until its own view expires
			actFrom = o.seenAt + w.cfg.LeaseDuration
		}
		w.take(candidate{row: row, actFrom: actFrom, reason: "assigned"})
	case row.Owner == w.cfg.Owner:
		w.take(candidate{row: row, actFrom: w.resumeFrom(o), reason: "resumed"})
	}
}

// resumeFrom is when a process may act on a row its owner id holds: at
// once after a restart, unless the row still marks a handoff (a steal or a
// release its predecessor never waited out), when the previous owner may
// be acting until a lease duration after this process first saw the row.
// Scan mode's takes follow the same rule.
func (w *Worker) resumeFrom(o *observation) time.Duration {
	if o.row.HandoffFrom != "" {
		return w.stillSince(o) + w.cfg.LeaseDuration
	}
	return w.now.Mono
}

// adoptable reports whether row, read while this worker holds the lease h,
// is the assigner's change of it (a handoff request, or its cancellation)
// rather than another worker's take: the owner and the checkpoint are
// still this worker's, the version moved on, and another process wrote it.
func (w *Worker) adoptable(h *holding, row Lease) bool {
	return row.Owner == w.cfg.Owner && row.Counter > h.row.Counter && row.Writer != w.writer &&
		row.Checkpoint == h.row.Checkpoint && row.Key == h.key
}

// adopt makes the assigner's version of a held lease the one this worker's
// next write expects, and starts handing the lease over if it asks so. The
// lease's validity is unchanged: the assigner's write renews nothing.
func (w *Worker) adopt(h *holding, row Lease) {
	h.row = row.Clone()
	h.suspect = false
	if w.bug("adopt-renews-validity") {
		h.validFrom = w.now.Mono
	}
	if row.HandoffTo != "" && row.Pending == w.cfg.Owner && !h.handing {
		w.handOver(h, row.HandoffTo)
	}
}

// handOver starts a cooperative handoff of h to another worker: the
// processor finishes its batch and is asked to checkpoint, then the lease
// is released with Pending naming the receiver, which takes it at once. A
// handoff that the processor does not let finish within half a lease
// duration is released anyway (its later checkpoints are refused).
func (w *Worker) handOver(h *holding, to string) {
	h.handing = true
	h.handoffTo = to
	h.handOverBy = w.now.Mono + w.cfg.LeaseDuration/2
	h.c.shutdown = true
	w.emit(TraceEvent{Kind: TraceHandingOver, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Reason: "to " + to})
	w.dueq.set(h, w.now.Mono)
}

// hello announces this worker to the assigner.
func (w *Worker) hello() {
	w.writeWorkerRow(HelloPrefix + w.cfg.Owner)
}

// writeWorkerRow creates this worker's hello or leaving row (key), which
// waits for the assigner (Pending AssignerPending), unless a write of it
// is in flight.
func (w *Worker) writeWorkerRow(key string) {
	rs := w.rows.intern(key)
	if rs.write != nil {
		return
	}
	row := Lease{Key: key, Counter: 1, Checkpoint: SentinelCheckpoint(ShardEnd), Pending: AssignerPending}
	wr := &write{kind: wHello, key: key, row: row}
	w.setWrite(rs, wr)
	w.sendWrite(wr)
}

// goodbye tells the assigner that this worker, shutting down and holding
// nothing, is leaving (LeavingPrefix). One attempt: a worker that cannot
// write it leaves the members as before, when its last hello or renewal
// is old enough. The assigner itself leaves by releasing its row.
func (w *Worker) goodbye() {
	a := &w.asg
	if !a.on || !a.indexOK || a.saidGoodbye || a.as != nil || len(w.held) > 0 || w.bug("goodbye-unsaid") {
		return
	}
	a.saidGoodbye = true
	w.writeWorkerRow(LeavingPrefix + w.cfg.Owner)
}

// onMonitor handles a read of the assigner row by a worker that does not
// hold it: it notes the members and takes the row over if it is unowned,
// or has stood still for a lease duration in this worker's view.
func (w *Worker) onMonitor(r *Result) {
	a := &w.asg
	a.monitorInFlight = false
	now := w.now.Mono
	next := now + w.jitter(2*w.cfg.LeaseDuration)
	defer func() { a.nextMonitor = next }()
	if w.shutdown || w.asgHeld != nil || w.writeOf(AssignerKey) != nil {
		return
	}
	switch {
	case errors.Is(r.Err, ErrNotFound):
		// No assigner yet: become it.
		row := Lease{Key: AssignerKey, Owner: w.cfg.Owner, Counter: 1, Checkpoint: SentinelCheckpoint(ShardEnd)}
		wr := &write{kind: wTake, create: true, key: AssignerKey, row: row, actFrom: now, reason: "assigner"}
		w.setWrite(w.rows.intern(AssignerKey), wr)
		w.sendWrite(wr)
		return
	case r.Err != nil:
		next = now + w.jitter(w.cfg.PendingPollInterval)
		return
	}
	row := r.Lease
	o := w.observeRow(row)
	a.members = slices.Clone(row.Children)
	a.depKnown = false
	_, a.isMember = slices.BinarySearch(a.members, w.cfg.Owner)
	dep := w.deputy(row.Owner) && !w.bug("deputies-read-slowly")
	if _, ghost := w.assignerGhost(); dep || ghost {
		next = now + w.jitter(w.cfg.PendingPollInterval)
	}
	switch {
	case row.Owner == "" || row.Owner == w.cfg.Owner || w.bug("assigner-takes-over-at-once"):
		w.take(candidate{row: row, actFrom: now, reason: "assigner"})
	case now-o.seenAt >= w.cfg.LeaseDuration:
		w.take(candidate{row: o.row, actFrom: o.seenAt + w.cfg.LeaseDuration, reason: "assigner"})
	case o.seenAt < now || dep:
		// The version has stood still since an earlier read (or this is
		// a deputy): look again when it would expire, if that comes
		// before the next read. A version first seen now shows a live
		// assigner; a non-deputy then waits its full interval, so the
		// reads of the assigner row do not grow with the fleet.
		next = min(next, o.seenAt+w.cfg.LeaseDuration)
	}
}

// resumeOwn takes, from the start-up scan of a worker in assigned mode,
// the rows its owner id holds: a process restarted under the same id goes
// on at once. Everything else reaches it from the assigner.
func (w *Worker) resumeOwn(rows []*rowState) {
	w.asg.resumed = true
	for _, rs := range rows {
		if !rs.observed {
			continue
		}
		o := &rs.obs
		if !o.ok || o.row.Owner != w.cfg.Owner || o.row.Checkpoint.IsShardEnd() || rs.held != nil ||
			rs.write != nil || w.foreign(o) || w.gated(o) || o.row.HandoffTo != "" {
			continue
		}
		w.take(candidate{row: o.row, actFrom: w.resumeFrom(o), reason: "resumed"})
	}
}
