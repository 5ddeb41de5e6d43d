package engine

import (
	"cmp"
	"errors"
	"slices"
	"time"
)

// holding is a lease this worker holds.
//
// Validity: the lease is valid until validFrom + LeaseDuration, where
// validFrom is the send time of the last write of the row that is known to
// have applied (take, renew, checkpoint). The worker acts (delivers records,
// writes checkpoints) only in [actFrom, validFrom + LeaseDuration -
// SafetyMargin) and not while a write's failed condition is being resolved.
// At most one conditional write per lease is in flight, so the row version
// (Counter) the next write expects is always known.
type holding struct {
	key  string
	rs   *rowState // key's row
	ref  ShardRef
	gen  uint64
	due  time.Duration // when it next needs the worker (in Worker.dueq)
	qidx int           // its index in Worker.dueq, -1 if not queued

	row       Lease // the row as last written by this worker
	validFrom time.Duration
	actFrom   time.Duration
	suspect   bool

	write        *write
	retryWriteAt time.Duration
	writeBackoff time.Duration

	actingTraced  bool
	stoppedTraced bool

	cps []cpRequest // checkpoint requests waiting for the write slot

	// release is set once the lease should be given up: after a shutdown
	// notice was answered (wRelease) or after the shard end was handled
	// (wShardEnd, with the shard's children).
	release  writeKind
	children []string
	gone     bool // released or lost: remove at the end of the step
	taken    bool // lost because another writer changed the row

	// control: the assigner row, held like a lease but read by no
	// consumer; handing: a cooperative handoff to handoffTo is under way,
	// to be released by handOverBy at the latest.
	control    bool
	session    bool // the worker's session row (session.go), held like the assigner row
	handing    bool
	handoffTo  string
	handOverBy time.Duration

	// rate: bytes delivered since rateFrom, for ThroughputKBps.
	rateBytes int64
	rateFrom  time.Duration
	kbps      float64

	c consumer
}

type cpRequest struct {
	cp    Checkpoint
	token uint64
}

// validUntil is the end of h's validity in this worker's view: a lease
// duration after the send of the last write of its row known to have
// applied, or, for a lease bound to the session (session.go), of the
// session row's alone: the writes of the lease's own row (its take, its
// checkpoints) do not extend it, so an observer times it by the session
// row alone.
func (w *Worker) validUntil(h *holding) time.Duration {
	from := h.validFrom
	if s := w.sess.held; s != nil && !s.gone && w.bound(h) {
		from = s.validFrom
	}
	return from + w.cfg.LeaseDuration
}

// actUntil is when the worker stops acting on h: a safety margin before its
// own view of expiry, and, while it holds the assigner row, no later than
// on that row (the assigner's leases are bound to it: see assign.go). A
// take of the assigner row whose outcome is not known yet binds them too:
// it may have applied, and then a worker that takes the row over once it
// expires (a lease duration after the take at the earliest) reassigns them
// at once.
func (w *Worker) actUntil(h *holding) time.Duration {
	until := w.validUntil(h) - w.cfg.SafetyMargin
	if w.bug("no-safety-margin") || w.bug("session-margin-ignored") && w.bound(h) {
		until = w.validUntil(h)
	}
	if c := w.heldAssignerRow(); c != nil && c != h && !c.gone && !w.bug("assigner-leases-unbound") {
		until = min(until, w.actUntil(c))
	}
	if h.key == AssignerKey {
		return until
	}
	if wr := w.writeOf(AssignerKey); wr != nil && wr.kind == wTake {
		until = min(until, wr.sentAt+w.cfg.LeaseDuration-w.cfg.SafetyMargin)
	}
	if w.heldAssignerRow() == nil {
		if t, ok := w.assignerGhost(); ok {
			until = min(until, t)
		}
	}
	return until
}

// assignerGhost reports whether a take of the assigner row by this worker
// that a re-read found not applied may still land (a ghost, see ghost):
// the row as last seen is still at the version the take is conditioned
// on, or is the take's own row. If it lands, a worker that takes the row
// over once it expires reassigns at once every lease written under this
// worker's writer as the previous assigner's (assignFrom), and this worker
// never knew it held the row: so its leases are bound as by a take of
// unknown outcome, and it acts on none of them past the ghost's send and a
// lease duration less the margin (t), unless it holds the assigner row by
// then. It reads the row at the pace of a deputy meanwhile (onMonitor),
// and takes back a ghost that landed (swarm seed 8060 with -renewal
// session: S1, the ghost's successor reassigned a lease its holder went on
// acting on).
func (w *Worker) assignerGhost() (t time.Duration, ok bool) {
	rs := w.rows.get(AssignerKey)
	if rs == nil || len(rs.ghosts) == 0 || w.bug("assigner-ghost-ignored") {
		return 0, false
	}
	for _, g := range rs.ghosts {
		if g.row.Owner != w.cfg.Owner {
			continue
		}
		if rs.observed && rs.obs.row.Counter > g.expect.Counter && !rs.obs.row.Equal(g.row) {
			continue // the row moved on: the ghost's condition can hold no more
		}
		if u := g.sentAt + w.cfg.LeaseDuration - w.cfg.SafetyMargin; !ok || u < t {
			t, ok = u, true
		}
	}
	return t, ok
}

// validFromOf returns when the validity of an applied write starts: its
// send time (the rule), or the reply's time under the planted bug.
func (w *Worker) validFromOf(sentAt time.Duration) time.Duration {
	if w.bug("validity-from-reply") {
		return w.now.Mono
	}
	return sentAt
}

// renewalInFlight reports whether h's write in flight (or being
// resolved) renews the lease and would still make it valid now if it
// applied: its validity runs from its own send. Past the validity of the
// last write known to have applied the worker no longer acts (actUntil),
// but it keeps the lease until that write's outcome is known: a renewal
// that applied and whose reply comes after the older validity ran out
// keeps the lease, where losing it at once would leave the row renewed
// by a worker that no longer holds it, for others to wait out a whole
// lease duration (explorer world, seed 7: a failover of 2.23 lease
// durations).
//
// Not while handing the lease over or shutting down: a planned move past
// its holder's own-view expiry is better given up (the lease is then
// reassigned) than finished late, behind renewals that each wait for a
// slow reply (swarm seeds 251 and 280: T2, the release 2-3 lease
// durations after the handoff began).
func (w *Worker) renewalInFlight(h *holding) bool {
	wr := h.write
	return wr != nil && !h.handing && !w.shutdown && wr.kind != wRelease && wr.kind != wShardEnd &&
		w.now.Mono < w.validFromOf(wr.sentAt)+w.cfg.LeaseDuration && !w.bug("expiry-drops-renewal-in-flight")
}

func (w *Worker) isActing(h *holding) bool {
	now := w.now.Mono
	return !h.suspect && !h.gone && now >= h.actFrom && now < w.actUntil(h)
}

// acquired turns a successful take into a holding.
func (w *Worker) acquired(wr *write) {
	w.nextBatch++
	rs := w.rows.intern(wr.key)
	h := &holding{
		key:       wr.key,
		rs:        rs,
		ref:       w.refOfRow(rs),
		gen:       w.nextBatch,
		row:       wr.row,
		validFrom: w.validFromOf(wr.sentAt),
		actFrom:   wr.actFrom,
	}
	w.addHeld(h)
	w.emit(TraceEvent{Kind: TraceLeaseAcquired, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Reason: wr.reason, Previous: wr.previous})
	if h.key == AssignerKey {
		w.becomeAssigner(h, wr)
	}
	if h.session && w.sess.repoll {
		// an assignment read before it could take anything
		// (sessionReady) waits: read what waits for it again now
		w.repollNow()
	}

	if w.shutdown {
		h.c.shutdown = true
	}
	if wr.deposed {
		w.loseLease(h, "the "+cmp.Or(wr.deposedBy, "assigner row")+" was lost before this take came back")
		w.dueq.set(h, w.now.Mono)
	}
}

// tickHolding does what time demands of one held lease.
func (w *Worker) tickHolding(h *holding) {
	if h.gone {
		// Released or lost earlier in this step: the worker no longer
		// holds the row and must write nothing more to it (a renew or a
		// second release built on the row it gave up would land).
		return
	}
	now := w.now.Mono
	if now >= w.validUntil(h) && !w.renewalInFlight(h) && !w.sessionRenewing(h) {
		w.loseLease(h, "expired: no renewal applied within the lease duration")
		return
	}
	if h.handing && now >= h.handOverBy && h.write == nil && (h.release == 0 || h.release == wRelease && len(h.cps) > 0 && !w.isActing(h)) && !w.bug("handoff-timeout-ignored") {
		// The processor did not let the handoff finish in time, or its
		// final checkpoints cannot be written (the worker may not act:
		// an assigner whose row's renewal is late, swarm seed 449 with
		// session renewal): release anyway (its later checkpoints are
		// refused).
		w.refuseCheckpoints(h, "the lease is being handed over")
		h.c.phase, h.release = cFinished, wRelease
		if !w.bug("handoff-release-waits-backoff") {
			// The release goes now, not after the backoff of a throttled
			// checkpoint: the processor has let go, and the receiver
			// waits (swarm seed 9588 with -renewal session, T2: a row
			// whose writes were throttled was released half a second past
			// the handoff's deadline).
			h.retryWriteAt = min(h.retryWriteAt, now)
		}
	}
	if h.handing && now >= h.handOverBy && h.write == nil && h.release == wRelease && len(h.cps) > 0 && h.retryWriteAt > now && !w.bug("final-checkpoint-waits-backoff") {
		// The processor let go in time, but its final checkpoint waits
		// out the backoff of a failed write of the row: at the deadline it
		// goes now, and the release after it (soak seed 91 of d8f57de with
		// -renewal session, T2: a 4.5 s backoff held the release past the
		// deadline).
		h.retryWriteAt = now
	}
	if h.control && w.shutdown && h.release == 0 && w.onlyControlLeft() {
		h.release = wRelease // the assigner row goes last but for the session
	}
	if h.session && w.shutdown && h.release == 0 && len(w.held) == 1 {
		h.release = wRelease // the session row goes last
	}
	if h.actingTraced && !h.stoppedTraced && now >= w.actUntil(h) {
		h.stoppedTraced = true
		w.emit(TraceEvent{Kind: TraceStoppedActing, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Reason: "safety margin before own-view expiry"})
	}
	if h.write != nil && !(h.write.resolving && w.bug("write-while-resolving")) {
		w.retryResolve(h.write)
	} else if now >= h.retryWriteAt {
		w.nextWrite(h)
	}
	if !h.gone && !h.control && !h.session {
		w.tickConsumer(h)
	}
	if h.write == nil && !h.gone && h.release != 0 && now >= h.retryWriteAt {
		w.nextWrite(h)
	}
}

// nextWrite sends the write the lease needs most, if any: pending
// checkpoints first, then the release or shard end, then a renewal.
func (w *Worker) nextWrite(h *holding) {
	now := w.now.Mono
	// A release waits for the processor's checkpoints to land (KCL's
	// contract: a checkpoint made at ShutdownRequested lands first).
	releaseNow := h.release == wRelease && (len(h.cps) == 0 || w.bug("release-before-final-checkpoint"))
	switch {
	case len(h.cps) > 0 && w.isActing(h) && !releaseNow:
		target := h.cps[0].cp
		for _, r := range h.cps[1:] {
			if w.order(r.cp, target) > 0 {
				target = r.cp
			}
		}
		row := h.row.Clone()
		row.Checkpoint = target
		row.OwnerSwitches = 0
		row.Counter++
		h.write = w.newWrite()
		*h.write = write{kind: wCheckpoint, key: h.key, rs: h.rs, expect: ExpectOf(h.row), row: row, target: target}
	case h.release == wShardEnd && len(h.cps) == 0 && w.isActing(h):
		row := h.row.Clone()
		row.Checkpoint = SentinelCheckpoint(ShardEnd)
		row.OwnerSwitches = 0
		row.Owner, row.Session = "", ""
		row.Children = h.children
		row.Counter++
		h.write = w.newWrite()
		*h.write = write{kind: wShardEnd, key: h.key, rs: h.rs, expect: ExpectOf(h.row), row: row}
	case releaseNow:
		row := h.row.Clone()
		row.Owner, row.Session = "", ""
		row.Counter++
		row.HandoffTo, row.Pending = "", ""
		switch {
		case h.handing && !w.bug("handoff-release-to-assigner"):
			row.Pending = h.handoffTo // its receiver takes it at once
		case w.asg.on && !h.control && !h.session:
			row.Pending = w.releaseTo(h) // the assigner, or a member when the assigner leaves
		}
		if h.control && !w.bug("leaving-assigner-listed") {
			// the assigner row, released for this worker's shutdown: its
			// successor inherits the members, but not this one
			row.Children = slices.DeleteFunc(slices.Clone(row.Children), func(m string) bool { return m == w.cfg.Owner })
		}
		h.write = w.newWrite()
		*h.write = write{kind: wRelease, key: h.key, rs: h.rs, expect: ExpectOf(h.row), row: row}
	case now >= h.validFrom+w.cfg.RenewInterval && !w.bound(h) || (h.row.HandoffFrom != "" && now >= h.actFrom && w.isActing(h)):
		row := h.row.Clone()
		row.Counter++
		if h.control {
			row.Children = w.sortedMembers()
		}
		h.write = w.newWrite()
		*h.write = write{kind: wRenew, key: h.key, rs: h.rs, expect: ExpectOf(h.row), row: row}
	default:
		return
	}
	if now >= h.actFrom {
		// The previous owner has been waited out: the handoff is over.
		h.write.row.HandoffFrom = ""
	}
	if h.write.kind != wRelease && h.write.kind != wShardEnd && !h.control && !h.session {
		h.write.row.ThroughputKBps = w.throughput(h)
	}
	w.sendWrite(h.write)
}

// throughput returns the rate, in KB per second, at which h's records
// were delivered since the last write that reported it, smoothed.
func (w *Worker) throughput(h *holding) float64 {
	now := w.now.Mono
	if el := now - h.rateFrom; el >= w.cfg.RenewInterval/2 && h.rateFrom > 0 {
		kbps := float64(h.rateBytes) / 1024 / el.Seconds()
		h.kbps = (h.kbps + kbps) / 2
		h.rateBytes = 0
		h.rateFrom = now
	} else if h.rateFrom == 0 {
		h.rateFrom = now
	}
	return float64(int64(h.kbps*100)) / 100
}

func (w *Worker) holderWriteApplied(h *holding, wr *write) {
	h.write = nil
	h.suspect = false
	h.writeBackoff = 0
	h.row = wr.row
	w.observe(h.rs, wr.row)
	if wr.kind != wRelease && wr.kind != wShardEnd {
		h.validFrom = w.validFromOf(wr.sentAt)
		if h.stoppedTraced && w.now.Mono < w.actUntil(h) {
			// A late renewal extended the lease past the margin again: the
			// worker acts again, and says so.
			h.stoppedTraced = false
			if h.actingTraced {
				w.emit(TraceEvent{Kind: TraceActing, Key: h.key, Shard: h.ref, Counter: wr.row.Counter, Checkpoint: wr.row.Checkpoint, Reason: "renewed after the margin"})
			}
		}
	}
	if h.session {
		w.sessionApplied(wr)
	}
	switch wr.kind {
	case wRenew:
		w.emit(TraceEvent{Kind: TraceLeaseRenewed, Key: h.key, Shard: h.ref, Counter: h.row.Counter})
	case wCheckpoint:
		w.emit(TraceEvent{Kind: TraceCheckpointWritten, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Checkpoint: wr.target})
		kept := h.cps[:0]
		for _, r := range h.cps {
			if w.order(r.cp, wr.target) <= 0 {
				w.notice(Notice{Kind: NoticeCheckpointDone, Key: h.key, Shard: h.ref, Token: r.token, Checkpoint: r.cp})
			} else {
				kept = append(kept, r)
			}
		}
		h.cps = kept
	case wShardEnd:
		why := ""
		if h.c.gone {
			why = "the shard left the stream (retention) before it was read to its end"
		}
		w.emit(TraceEvent{Kind: TraceShardEnded, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Checkpoint: h.row.Checkpoint, Reason: why})
		w.emit(TraceEvent{Kind: TraceLeaseReleased, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Reason: "shard end"})
		h.gone = true
		if w.shutdown {
			w.down.released = append(w.down.released, h.key)
		}
		// The children's leases are created by shard sync: run it soon.
		w.sync.soon(w.now.Mono)
	case wRelease:
		why := "shutdown"
		if h.handing {
			why = "handed over to " + h.handoffTo
		}
		w.emit(TraceEvent{Kind: TraceLeaseReleased, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Reason: why})
		h.gone = true
		w.refuseCheckpoints(h, "the lease was released") // none: a release waits for them
		if w.shutdown && !h.control && !h.session {
			w.down.released = append(w.down.released, h.key)
		}
	}
	w.freeWrite(wr) // nothing refers to it any more
}

// ErrLeaseLost is the error of a checkpoint refused because the lease was
// lost, expired, or is not held by this worker.
var ErrLeaseLost = errors.New("lease not held")

// ErrCheckpointRejected is the error of a checkpoint that is invalid: lower
// than the stored one, beyond the records delivered, or malformed.
var ErrCheckpointRejected = errors.New("checkpoint rejected")

// loseLease drops h: the processor is told, pending checkpoints are
// refused, and every reply still in flight for it is ignored.
func (w *Worker) loseLease(h *holding, reason string) {
	if h.gone {
		return
	}
	h.gone = true
	if w.shutdown && !h.taken && !h.control && !h.session {
		// Not taken by another worker: it expires.
		w.down.left = append(w.down.left, h.key)
	}
	if h.write != nil {
		// Its outcome is unknown and will never be learnt: it may land.
		w.addGhost(h.write)
	}
	w.emit(TraceEvent{Kind: TraceLeaseLost, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Reason: reason})
	if w.bound(h) && !w.shutdown {
		w.noteOrphan(h.key) // its row may still name this worker's session
	}
	w.refuseCheckpoints(h, "")
	if h.c.initialized {
		w.notice(Notice{Kind: NoticeLeaseLost, Key: h.key, Shard: h.ref})
	}
	if h.session {
		w.sessionLost(h, reason)
	}
	if h.control {
		w.assignerRowLost(h, reason)
	}
}

// assignerRowLost drops every lease this worker holds but h: they are
// bound to the assigner row, which it has lost (h), or which a take of
// unknown outcome may have written before another worker took it over (h
// nil: see onResolveResult).
func (w *Worker) assignerRowLost(h *holding, reason string) {
	// The assigner's leases are bound to its row (see assign.go): a
	// worker that took the row over may reassign them at once. It
	// tells them by their writer, the one of the assigner row it took
	// over: from now on this worker writes under a new one, so that
	// leases it takes as an ordinary worker before the takeover are
	// not taken for bound ones (swarm seed 57 with boundary seeking:
	// S1, a deposed assigner's later lease reassigned at once).
	// Takes in flight under the old writer are bound too: one whose
	// reply comes later must not be acted on (soak seed 16892: S1, a
	// deposed assigner acted on a take sent before it lost its row,
	// which its successor had reassigned at once).
	old := w.writer
	if !w.bug("deposed-take-acted") {
		w.deposeTakes("assigner row", func(wr *write) bool { return wr.row.Writer == old })
	}
	w.newWriter()
	w.asg.as = nil
	for _, o := range slices.Clone(w.held) {
		if o != h && !o.gone {
			w.loseLease(o, "the assigner row was lost: "+reason)
			w.dueq.set(o, w.now.Mono)
		}
	}
}

// deposeTakes marks every take of a lease in flight for which bound
// holds as deposed: when its reply (or resolving read) comes, the lease
// is not acted on, since the row or session it was bound to (by, for the
// trace) was lost meanwhile.
func (w *Worker) deposeTakes(by string, bound func(wr *write) bool) {
	for _, rs := range w.writing {
		if wr := rs.write; wr.kind == wTake && !IsReserved(wr.key) && bound(wr) {
			wr.deposed, wr.deposedBy = true, by
		}
	}
}

// newWriter takes a new writer nonce (Lease.Writer of every write from
// now on): a new session identity in session renewal.
func (w *Worker) newWriter() {
	w.writerEpoch++
	w.writer = writerOf(w.cfg.Seed + w.writerEpoch*0x632be59bd9b4e019)
}

// refuseCheckpoints answers every checkpoint request of h waiting for the
// write slot with ErrLeaseLost.
func (w *Worker) refuseCheckpoints(h *holding, why string) {
	for _, r := range h.cps {
		if why != "" {
			w.emit(TraceEvent{Kind: TraceCheckpointRejected, Key: h.key, Shard: h.ref, Checkpoint: r.cp, Reason: why})
		}
		w.notice(Notice{Kind: NoticeCheckpointDone, Key: h.key, Shard: h.ref, Token: r.token, Checkpoint: r.cp, Err: ErrLeaseLost})
	}
	h.cps = nil
}

func (w *Worker) beginShutdown() {
	if w.shutdown {
		return
	}
	w.shutdown = true
	w.down.held = len(w.held)
	for _, h := range w.held {
		h.c.shutdown = !h.control && !h.session
		w.dueq.set(h, w.now.Mono)
	}
}

func (w *Worker) onCheckpointRequest(key string, rs *rowState, cp Checkpoint, token uint64) {
	var h *holding
	if rs != nil {
		h = rs.held
	}
	var ref ShardRef
	if h != nil {
		ref = h.ref // refOf(key), which a holding keeps from its start
	} else {
		ref = w.refOf(key)
	}
	w.emit(TraceEvent{Kind: TraceCheckpointRequested, Key: key, Shard: ref, Checkpoint: cp})
	reject := func(err error, why string) {
		w.emit(TraceEvent{Kind: TraceCheckpointRejected, Key: key, Shard: ref, Checkpoint: cp, Reason: why})
		w.notice(Notice{Kind: NoticeCheckpointDone, Key: key, Shard: ref, Token: token, Checkpoint: cp, Err: err})
	}
	switch {
	case h == nil || h.gone:
		reject(ErrLeaseLost, "lease not held")
	case h.write != nil && (h.write.kind == wRelease || h.write.kind == wShardEnd):
		// The lease is being given up: a checkpoint queued now could only
		// be written after the release, and would never be answered.
		reject(ErrLeaseLost, "the lease is being released")
	case h.handing && w.bug("handoff-refuses-checkpoints"):
		reject(ErrLeaseLost, "the lease is being handed over")
	case !w.isActing(h):
		reject(ErrLeaseLost, "not acting: the lease is near its own-view expiry or not yet safe to use")
	case cp.Validate() != nil:
		reject(ErrCheckpointRejected, cp.Validate().Error())
	case cp.IsSentinel():
		reject(ErrCheckpointRejected, "only sequence numbers can be checkpointed; the engine writes SHARD_END itself")
	case w.order(cp, h.c.position) > 0:
		reject(ErrCheckpointRejected, "beyond the last record delivered")
	case w.order(cp, h.row.Checkpoint) < 0:
		reject(ErrCheckpointRejected, "lower than the stored checkpoint "+h.row.Checkpoint.String())
	case w.order(cp, h.row.Checkpoint) == 0 && len(h.cps) == 0:
		w.notice(Notice{Kind: NoticeCheckpointDone, Key: key, Shard: ref, Token: token, Checkpoint: cp})
	default:
		h.cps = append(h.cps, cpRequest{cp: cp, token: token})
	}
}

// nextDue returns the next time after now at which h needs the worker.
func (h *holding) nextDue(w *Worker) time.Duration {
	t := time.Duration(1<<63 - 1)
	h.wakeTimes(w, func(d time.Duration) {
		if d > w.now.Mono && d < t {
			t = d
		}
	})
	return t
}

// wakeTimes reports to min every time at which h needs the worker.
func (h *holding) wakeTimes(w *Worker, min func(time.Duration)) {
	min(w.validUntil(h))
	if h.actingTraced && !h.stoppedTraced {
		min(w.actUntil(h))
	}
	min(h.actFrom)
	if h.handing && (h.release == 0 || h.release == wRelease && len(h.cps) > 0 && !w.isActing(h)) {
		min(h.handOverBy) // the handoff's deadline: release anyway
	} else if h.handing && h.release == wRelease && len(h.cps) > 0 && h.retryWriteAt > h.handOverBy && w.now.Mono < h.handOverBy {
		min(h.handOverBy) // the deadline: the final checkpoint goes, backoff or not
	}
	if h.write == nil {
		if !w.bound(h) {
			min(h.validFrom + w.cfg.RenewInterval)
		}
		min(h.retryWriteAt)
	} else {
		if h.write.resolving && h.write.id == 0 {
			min(h.write.retryAt)
		}
		if w.renewalInFlight(h) {
			min(w.validFromOf(h.write.sentAt) + w.cfg.LeaseDuration) // its own expiry, had it applied
		}
	}
	if w.sessionRenewing(h) {
		min(w.validFromOf(w.sess.held.write.sentAt) + w.cfg.LeaseDuration) // the session's, had its renewal applied
	}
	if h.c.waitingForTime() {
		min(h.c.nextAt)
	}
}

// shutdownReport is what a graceful shutdown did with the leases held.
type shutdownReport struct {
	held     int      // leases held when it began
	released []string // released (or ended): others take them at once
	left     []string // dropped at own-view expiry instead: they expire
}

// ShutdownResult returns, after a shutdown, the leases the worker released
// and those it dropped at their own-view expiry because their release
// could not be written: those are left to expire. Leases another worker
// took meanwhile, and leases still held, are in neither.
func (w *Worker) ShutdownResult() (released, left []string) {
	return slices.Clone(w.down.released), slices.Clone(w.down.left)
}
