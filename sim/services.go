package sim

import (
	"errors"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// services is the fault state of the lease table and the stream that the
// scheduled actions set: throttling windows and scripted SDK retries. The
// per-call fault rates are the world's (World.Rates), drawn with the
// network's source.
type services struct {
	retryKind      string // ActSDKRetry in force until retryUntil
	retryChance    float64
	retryUntil     time.Duration
	tableThrottle  float64
	tableThrUntil  time.Duration
	streamThrottle float64
	streamThrUntil time.Duration
}

// scriptedRetry reports whether an ActSDKRetry in force makes the SDK
// retry an applied write of kind reason. It draws only inside the
// action's window, so runs without it draw as before.
func (s *simulator) scriptedRetry(reason string) bool {
	if s.healed || s.now >= s.svc.retryUntil || (s.svc.retryKind != "" && s.svc.retryKind != reason) {
		return false
	}
	return s.net.rng.chance(s.svc.retryChance)
}

// onApply is a call (or an SDK retry of a write) reaching the table or the
// stream: it is faulted or executed, and its reply sent back (or lost).
func (s *simulator) onApply(i int, retry bool) {
	f := s.net.calls[i]
	f.pending--
	p := s.cl.procs[f.proc]
	c := &f.call
	if !retry {
		if s.aimApply(i, f) {
			return // dropped or held by an aimed fault (aim.go)
		}
		if t, ok := s.heldApply(p, i, f); ok {
			f.held = true // a boundary knob holds it back (boundary.go)
			if t >= 0 {
				s.schedCall(i, t, evApply)
			}
			return
		}
	}
	rn := s.net.rng
	res := &f.in.Result // built in place: the reply delivers it
	*res = engine.Result{ID: c.ID}
	applied := false
	var execErr error
	transient := false
	if c.Op.IsStore() {
		if s.w.Etcd.On && c.Op.IsWrite() && f.applied < 0 {
			s.etcdApplied(f, true) // a cut aimed at the write's watchers (etcd.go)
		}
		switch {
		case f.aim.throttle && !retry:
			f.aim.throttle = false
			res.Err = errThrottled
			f.fault = f.aim.name("throttled")
		case f.aim.transient && !retry:
			// a targeted 500 (targeted.go): a write applied half the time
			f.aim.transient = false
			f.fault = f.aim.name("transient")
			transient = true
			if s.aim.trng.chance(0.5) {
				applied = s.execStore(p, f, res)
			} else {
				res.Err = errTransient
			}
			execErr = res.Err
			*res = engine.Result{ID: c.ID, Err: errTransient}
		case s.inElection():
			applied, execErr = s.electionCall(p, f, res) // etcd.go
			transient = true
		case rn.chance(s.rate(s.w.Rates.TableThrottle)) || (s.now < s.svc.tableThrUntil && rn.chance(s.svc.tableThrottle)):
			res.Err = errThrottled
			f.fault = "throttled"
			if retry {
				// the first attempt applied: a store may not call this
				// throttled (not applied); dynamostore reports it so
				res.Err = errRetryThrottled
				f.fault = "sdk-retry-throttled"
			}
		case !retry && s.syncRaceThrottle(c): // syncrace.go
			res.Err = errThrottled
			f.fault = "sync-race-throttled"
		case c.Op == engine.OpListLeases && c.Consistent && s.cl.slots[p.slot].throttleScans > 0:
			s.cl.slots[p.slot].throttleScans-- // ActCrashAfterRenew
			res.Err = errThrottled
			f.fault = "throttled"
		case rn.chance(s.rate(s.w.Rates.TableTransient)):
			f.fault = "transient"
			transient = true
			if rn.chance(0.5) {
				applied = s.execStore(p, f, res)
			} else {
				res.Err = errTransient
			}
			execErr = res.Err
			*res = engine.Result{ID: c.ID, Err: errTransient}
		default:
			applied = s.execStore(p, f, res)
		}
	} else {
		switch {
		case c.Op.IsFanOut():
			if s.applyFanOut(i, f, res) {
				return // parked: answered when an event comes (see fanout.go)
			}
		case c.Op == engine.OpGetRecords && (rn.chance(s.rate(s.w.Rates.StreamThrottle)) || (s.now < s.svc.streamThrUntil && rn.chance(s.svc.streamThrottle))):
			res.Err = errThrottled
			f.fault = "throttled"
		case c.Op == engine.OpGetRecords && rn.chance(s.rate(s.w.Rates.ExpiredIterator)):
			res.Err = errExpiredIter
			f.fault = "expired-iterator"
		default:
			s.execStream(f, res)
		}
	}
	if f.fault != "" {
		s.opCallFault(f)
	}
	renewed := applied && f.applied < 0 && f.reason == trace.WriteRenew && p.alive
	took := applied && f.applied < 0 && f.reason == trace.WriteTake
	assigned := applied && f.applied < 0 && f.reason == trace.WriteAssign
	if applied && s.w.Etcd.On {
		s.etcdApplied(f, false) // the index's change, to the watches (etcd.go)
	}
	if applied && f.applied < 0 {
		f.applied = s.now
	}
	if c.Op.IsWrite() {
		if !transient {
			execErr = res.Err
		}
		s.emitApply(p, f, execErr, retry)
	}
	if renewed {
		s.renewApplied(p, f)  // an armed boundary action (boundary.go)
		s.strikeRenewed(p, f) // strike.go
	}
	if took {
		s.takeApplied(f) // boundary.go
	}
	if assigned {
		s.assignApplied(f) // boundary.go
	}
	if applied {
		s.rowWritten(f) // boundary.go
	}
	s.strikeApplied(p, f, applied && f.applied == s.now) // strike.go
	s.stealApplied(p, f, applied && f.applied == s.now)  // combos_steal.go
	if !retry && len(f.ops) > 0 {
		s.opDone(p, i, f, applied) // a step of its operations (ops.go)
	}
	if applied && c.Op == engine.OpCreateLease && s.latestWorld() {
		s.latestCreated(c.Lease.Key) // config.go
	}
	// an SDK retry of a write: the first reply is lost, the retry lands later
	if !retry && c.Op.IsWrite() && (rn.chance(s.rate(s.w.Rates.Dup)) || s.scriptedRetry(f.reason)) {
		f.fault = "sdk-retry"
		f.retried = true
		s.schedCall(i, s.now+s.latency(s.linkOf(p, c.Op))+rn.between(10*time.Millisecond, 300*time.Millisecond), evRetry)
		return
	}
	l := s.linkOf(p, c.Op)
	deadline := f.sent + s.timeoutOf(c)
	if retry {
		deadline += s.w.CallTimeout
	}
	if f.answered {
		s.release(i)
		return
	}
	if aimed := f.aim.reply == aimReplyLost; aimed || l.cutRep || rn.chance(s.rate(s.w.Rates.ReplyLoss)) {
		switch {
		case aimed:
			f.fault = f.aim.name("reply-lost")
		case l.cutRep:
			f.fault = "partition-reply"
		default:
			f.fault = "reply-lost"
		}
		s.opCallFault(f)
		if s.now < deadline {
			s.schedCall(i, deadline, evTimeout)
		} else {
			s.schedCall(i, s.now, evTimeout)
		}
		return
	}
	normal := s.now + s.latency(l)
	at := s.replyAt(p, f, normal, deadline)
	if f.aim.reply == aimReplyLate {
		at = max(at, deadline-s.aim.rng.between(0, 2*time.Millisecond))
	}
	if at != normal {
		s.opCallFault(f) // held back (boundary.go, aim.go)
	}
	if at <= deadline {
		s.schedCall(i, at, evReply)
	} else if s.now < deadline {
		s.schedCall(i, deadline, evTimeout)
	} else {
		s.schedCall(i, s.now, evTimeout)
	}
}

// execStore executes a store call against the lease table; it reports
// whether a write applied.
func (s *simulator) execStore(p *proc, f *inflight, res *engine.Result) bool {
	if s.w.Etcd.On {
		return s.execStoreCall(p, f, res)
	}
	c := &f.call
	if !c.Op.IsWrite() {
		applied := s.execStoreCall(p, f, res)
		s.costRead(c, res)
		return applied
	}
	key := leaseKey(c)
	before, _, pending := s.rowBytes(key)
	applied := s.execStoreCall(p, f, res)
	if applied || errors.Is(res.Err, engine.ErrConditionFailed) {
		s.costWrite(f.reason, key, before, pending) // a refused condition is billed too
	}
	return applied
}

// execStoreCall is execStore without the cost.
func (s *simulator) execStoreCall(p *proc, f *inflight, res *engine.Result) bool {
	c := &f.call
	switch c.Op {
	case engine.OpListLeases:
		if sl := s.cl.slots[p.slot]; !c.Consistent && s.w.Etcd.On {
			s.serializableScan(p, f, res) // etcd.go
		} else if !c.Consistent && sl.staleScans > 0 {
			// a restarted process's first scans, as stale as the table
			// allows (ActCrashAfterRenew)
			sl.staleScans--
			f.fault = "stale-read"
			res.Listing, res.Err = s.tbl.ListLeasesEventual(s.ctx, func(k string) time.Duration {
				if k == sl.staleKey {
					// as of just before the renewal its predecessor
					// crashed after: the version that renewal replaced
					return s.now - sl.staleAt + time.Microsecond
				}
				return s.w.Rates.StaleLag
			})
		} else if !c.Consistent && s.bchance(s.w.Boundary.StaleMix) {
			// the worst mix one eventually consistent scan may show
			// (boundary.go)
			f.fault = "stale-read"
			res.Listing, res.Err = s.tbl.ListLeasesEventual(s.ctx, s.worstLag())
		} else if !c.Consistent && s.net.rng.chance(s.rate(s.w.Rates.StaleRead)) {
			// eventually consistent, row by row (see staleLag)
			f.fault = "stale-read"
			res.Listing, res.Err = s.tbl.ListLeasesEventual(s.ctx, s.staleLag)
		} else {
			res.Listing, res.Err = s.tbl.ListLeases(s.ctx, true)
		}
		return false
	case engine.OpGetLease:
		res.Lease, res.Err = s.tbl.GetLease(s.ctx, c.Key)
		return false
	case engine.OpListPending:
		// the index lags its rows key by key (see indexLag)
		lag := s.indexLag
		if f.freshIndex {
			lag = func(string) time.Duration { return 0 }
		}
		res.Listing.Leases, res.Err = s.tbl.ListPendingEventual(s.ctx, c.Key, lag)
		return false
	}
	unconditional := false
	switch s.o.Mutation {
	case "unfenced-checkpoint":
		unconditional = f.reason == trace.WriteCheckpoint
	case "unfenced-take":
		unconditional = f.reason == trace.WriteTake
	case "unfenced-assign":
		unconditional = f.reason == trace.WriteAssign
	}
	var err error
	switch {
	case unconditional && c.Op != engine.OpCreateLease:
		err = s.writeUnconditional(c)
	case s.o.Mutation == "etcd-owner-only-compare" && s.w.Etcd.On && c.Op != engine.OpCreateLease:
		err = s.ownerOnlyWrite(c) // etcd.go
	case c.Op == engine.OpCreateLease:
		err = s.tbl.CreateLease(s.ctx, c.Lease)
	case c.Op == engine.OpUpdateLease:
		err = s.tbl.UpdateLease(s.ctx, c.Expect, c.Lease)
	case c.Op == engine.OpDeleteLease:
		err = s.tbl.DeleteLease(s.ctx, c.Key, c.Expect)
	}
	res.Err = err
	return err == nil
}

// staleLag draws how stale one row of an eventually consistent scan is,
// as DynamoDB's consistency is per item: fresh half the time, else up to
// the world's StaleLag, and exactly at it for a fifth of the stale rows.
// One scan thus mixes rows of different ages, shows rows deleted since,
// misses rows created since, and may show an older version than the scan
// before it did.
func (s *simulator) staleLag(string) time.Duration {
	r := s.net.rng
	switch x := r.Float64(); {
	case x < 0.5:
		return 0
	case x < 0.6:
		return s.w.Rates.StaleLag
	}
	return r.between(0, s.w.Rates.StaleLag)
}

// indexLag draws how far one key's entry of the pending index lags its
// row: anything up to the world's IndexLag, exactly it a third of the
// time (after healing the index still lags: it is how the index is).
func (s *simulator) indexLag(string) time.Duration {
	r := s.net.rng
	if r.chance(1.0 / 3) {
		return s.w.Assignment.IndexLag
	}
	return r.between(0, s.w.Assignment.IndexLag)
}

// writeUnconditional applies an update or delete without its condition
// (a planted bug), as an operator with direct table access would; the row
// must exist.
func (s *simulator) writeUnconditional(c *engine.Call) error {
	key := leaseKey(c)
	if _, err := s.tbl.GetLease(s.ctx, key); err != nil {
		return errUnfencedMissing
	}
	if c.Op == engine.OpDeleteLease {
		s.tbl.Remove(key)
		return nil
	}
	return s.tbl.Put(c.Lease)
}

// emitApply records a write reaching the table, with its outcome there.
func (s *simulator) emitApply(p *proc, f *inflight, err error, retry bool) {
	c := &f.call
	r := trace.Record{Kind: trace.KindApply, Key: leaseKey(c), Call: c.ID, Op: c.Op, Reason: f.reason, Sent: f.sent,
		ExpOwner: c.Expect.Owner, ExpCounter: c.Expect.Counter, RowOwner: c.Lease.Owner, Counter: c.Lease.Counter,
		Checkpoint: c.Lease.Checkpoint, Outcome: outcome(err), Fault: f.fault, Applied: -1}
	if err == nil {
		r.Applied = s.now
	}
	if retry {
		r.Fault = "sdk-retry"
	}
	switch s.o.Mutation {
	case "unfenced-checkpoint":
		r.Unconditional = f.reason == trace.WriteCheckpoint
	case "unfenced-take":
		r.Unconditional = f.reason == trace.WriteTake
	case "unfenced-assign":
		r.Unconditional = f.reason == trace.WriteAssign
	}
	s.emit(s.procRec(p, &r))
}

// execStream executes a stream call against the stream.
func (s *simulator) execStream(f *inflight, res *engine.Result) {
	c := &f.call
	s.expireShards()
	switch c.Op {
	case engine.OpListShards:
		res.Shards, res.Err = s.st.ListShards(s.ctx, c.Stream)
		for i := range res.Shards {
			s.tamperShard(&res.Shards[i])
		}
	case engine.OpGetIterator:
		res.Iterator, res.Err = s.st.GetShardIterator(s.ctx, c.Stream, c.Shard, s.resumePosition(c.Stream, c.Shard, c.Position))
		if res.Err == nil {
			s.notOwed(s.cl.procs[f.proc], c) // config.go
		}
	case engine.OpDescribeStream:
		res.Stream, res.Err = s.st.DescribeStream(s.ctx, c.Stream)
	case engine.OpGetRecords:
		res.Page, res.Err = s.st.GetRecords(s.ctx, c.Iterator, c.Limit)
		if len(res.Page.ChildShards) > 0 && (s.o.Mutation == "orphan-children" || s.o.Mutation == "ignore-second-parent") {
			cs := append([]engine.Shard(nil), res.Page.ChildShards...)
			for i := range cs {
				s.tamperShard(&cs[i])
			}
			res.Page.ChildShards = cs
		}
	}
}

// resumePosition is where a read of shard starts from pos: pos itself, or,
// under the planted bug skip-on-resume, one record past an AT_ or
// AFTER_SEQUENCE_NUMBER position.
func (s *simulator) resumePosition(stream, shard string, pos engine.Position) engine.Position {
	if s.o.Mutation == "skip-on-resume" && (pos.Type == engine.IterAfterSequenceNumber || pos.Type == engine.IterAtSequenceNumber) {
		if next, ok, err := s.st.RecordAfter(stream, shard, pos.Sequence); err == nil && ok {
			pos = engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: next.Sequence}
		}
	}
	return pos
}

func (s *simulator) tamperShard(sh *engine.Shard) {
	switch s.o.Mutation {
	case "orphan-children":
		sh.Parent, sh.AdjacentParent = "", ""
	case "ignore-second-parent":
		sh.AdjacentParent = ""
	}
}
