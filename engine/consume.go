package engine

import (
	"errors"
	"time"
)

// phase is where the consumption of a held lease stands.
type phase uint8

const (
	cStart        phase = iota // waiting to act (a previous holder may still be acting)
	cParents                   // strongly consistent reads of the parents in flight
	cParentsWait               // a parent is not finished: check again at nextAt
	cInit                      // send Initialize when acting
	cInitWait                  // Initialize sent, waiting for Done
	cIter                      // get an iterator at nextAt
	cIterWait                  // GetShardIterator in flight
	cFetch                     // GetRecords at nextAt
	cFetchWait                 // GetRecords in flight
	cDeliver                   // records to hand over when acting (at nextAt after a failure)
	cDeliverWait               // records handed over, waiting for Done
	cShardEnd                  // tell the processor the shard ended
	cShardEndWait              // waiting for Done of ShardEnded
	cChildren                  // learn the children before writing SHARD_END
	cShutdownWait              // ShutdownRequested sent, waiting for Done
	cFinished                  // nothing more to read: release or shard end pending
)

// consumer reads one held shard and feeds its processor, in sequence order,
// one batch at a time.
type consumer struct {
	phase       phase
	initialized bool
	shutdown    bool
	batch       uint64
	nextAt      time.Duration
	backoff     time.Duration

	parentsLeft    int
	parentsBlocked bool

	iterator string
	// position is the last record handed to the processor, or the start
	// checkpoint before any.
	position     Checkpoint
	records      []Record
	millisBehind int64
	end          bool
	gone         bool // the shard left the stream (retention) before it was read to its end
	unverified   bool // the shard is not listed and the row is not proven the stream's (reported)
	children     []string

	// failures counts the failed deliveries in a row of records (reset
	// when a batch is processed or skipped).
	failures int

	fo subState // FanOut: the subscription
}

func (c *consumer) waitingForTime() bool {
	switch c.phase {
	case cParentsWait, cIter, cFetch, cDeliver, cChildren:
		return true
	}
	return false
}

// busyWithProcessor reports whether a notice waits for the processor's Done.
func (c *consumer) busyWithProcessor() bool {
	switch c.phase {
	case cInitWait, cDeliverWait, cShardEndWait, cShutdownWait:
		return true
	}
	return false
}

func (w *Worker) tickConsumer(h *holding) {
	c := &h.c
	now := w.now.Mono
	if c.shutdown && !c.busyWithProcessor() && c.phase < cShardEnd {
		w.stopConsuming(h)
		return
	}
	switch c.phase {
	case cStart:
		if !w.isActing(h) {
			return
		}
		h.actingTraced = true
		w.emit(TraceEvent{Kind: TraceActing, Key: h.key, Shard: h.ref, Counter: h.row.Counter, Checkpoint: h.row.Checkpoint})
		w.checkParents(h)
	case cParentsWait:
		if now >= c.nextAt {
			w.checkParents(h)
		}
	case cInit:
		if w.isActing(h) {
			c.position = h.row.Checkpoint
			c.batch = w.batchID()
			c.phase = cInitWait
			w.notice(Notice{Kind: NoticeInitialize, Key: h.key, Shard: h.ref, Batch: c.batch, Start: h.row.Checkpoint})
		}
	case cIter:
		if now >= c.nextAt && w.cfg.Consumer == FanOut {
			w.subscribe(h)
		} else if now >= c.nextAt {
			c.phase = cIterWait
			w.call(Call{Op: OpGetIterator, Stream: h.ref.Stream, Shard: h.ref.Shard, Position: w.positionAfter(h)},
				pendingCall{purpose: forIterator, key: h.key, gen: h.gen, rs: h.rs})
		}
	case cFetch:
		if now >= c.nextAt && w.cfg.Consumer == FanOut {
			w.askEvent(h)
		} else if now >= c.nextAt {
			c.phase = cFetchWait
			w.call(Call{Op: OpGetRecords, Iterator: c.iterator, Limit: w.cfg.GetRecordsLimit},
				pendingCall{purpose: forRecords, key: h.key, gen: h.gen, rs: h.rs})
		}
	case cDeliver:
		if now >= c.nextAt && w.isActing(h) {
			c.batch = w.batchID()
			c.phase = cDeliverWait
			for i := range c.records {
				h.rateBytes += int64(len(c.records[i].Data))
			}
			first, last := c.records[0], c.records[len(c.records)-1]
			w.notice(Notice{Kind: NoticeRecords, Key: h.key, Shard: h.ref, Batch: c.batch, Records: c.records, MillisBehind: c.millisBehind,
				Attempt: c.failures + 1})
			if w.trace != nil {
				w.emit(TraceEvent{Kind: TraceDelivered, Key: h.key, Shard: h.ref, Counter: h.row.Counter, First: first.Sequence, Last: last.Sequence,
					FirstSub: first.SubSequence, LastSub: last.SubSequence, Count: len(c.records)})
			}
		}
	case cShardEnd:
		if w.isActing(h) {
			c.batch = w.batchID()
			c.phase = cShardEndWait
			w.notice(Notice{Kind: NoticeShardEnded, Key: h.key, Shard: h.ref, Batch: c.batch})
		}
	case cChildren:
		if now >= c.nextAt {
			w.learnChildren(h)
		}
	}
}

// stopConsuming ends consumption for a shutdown: the processor, if it was
// initialized, is asked to checkpoint, then the lease is released.
func (w *Worker) stopConsuming(h *holding) {
	c := &h.c
	c.records = nil
	if c.initialized && !w.bug("release-without-shutdown-notice") {
		c.batch = w.batchID()
		c.phase = cShutdownWait
		n := Notice{Kind: NoticeShutdownRequested, Key: h.key, Shard: h.ref, Batch: c.batch, Reason: ShutdownWorker}
		if !w.shutdown && h.handing {
			n.Reason, n.To = ShutdownHandoff, h.handoffTo
		}
		w.notice(n)
		return
	}
	c.phase = cFinished
	h.release = wRelease
}

// checkPointParents reads every parent of h strongly consistently; the
// shard is processed only once each is gone or at SHARD_END.
func (w *Worker) checkParents(h *holding) {
	c := &h.c
	if len(h.row.Parents) == 0 || w.bug("parents-unchecked") {
		c.phase = cInit
		w.tickConsumer(h)
		return
	}
	c.phase = cParents
	c.parentsLeft = len(h.row.Parents)
	c.parentsBlocked = false
	for _, p := range h.row.Parents {
		w.call(Call{Op: OpGetLease, Key: w.keys.Key(ShardRef{Stream: h.ref.Stream, Shard: p})},
			pendingCall{purpose: forParentCheck, key: h.key, gen: h.gen, rs: h.rs})
	}
}

func (w *Worker) onParentCheck(pc pendingCall, r *Result) {
	h := w.heldFor(pc)
	if h == nil || h.gen != pc.gen || h.c.phase != cParents {
		return
	}
	c := &h.c
	switch {
	case r.Err == nil:
		if !r.Lease.Checkpoint.IsShardEnd() {
			c.parentsBlocked = true
		}
	case errors.Is(r.Err, ErrNotFound):
		// A parent without a row is finished (and cleaned up) or was never
		// consumed (a closed shard skipped by a LATEST start).
	default:
		c.parentsBlocked = true
	}
	c.parentsLeft--
	if c.parentsLeft > 0 {
		return
	}
	if c.parentsBlocked {
		c.phase = cParentsWait
		c.nextAt = w.now.Mono + w.jitter(w.cfg.RenewInterval)
		return
	}
	w.emit(TraceEvent{Kind: TraceChildStarted, Key: h.key, Shard: h.ref, Counter: h.row.Counter})
	c.phase = cInit
	w.tickConsumer(h)
}

// positionAfter returns where to read from: the last record delivered, or
// the lease's start checkpoint. A sequence number is read AT, not AFTER,
// as the KCL does, and what was delivered already is skipped (onRecords):
// a checkpoint (s, n) may name any user record of the aggregate s, even
// the first (n = 0, the same checkpoint as a record that is not
// aggregated), so reading after s could lose the rest of the aggregate.
func (w *Worker) positionAfter(h *holding) Position {
	p := h.c.position
	switch {
	case p.Sequence == TrimHorizon || p.Sequence == "":
		return Position{Type: IterTrimHorizon}
	case p.Sequence == Latest:
		return Position{Type: IterLatest}
	case p.Sequence == AtTimestamp:
		var ts time.Time
		if s := w.streams[h.ref.Stream]; s != nil {
			ts = s.Timestamp
		}
		return Position{Type: IterAtTimestamp, Timestamp: ts}
	case p.SubSequence == 0 && w.bug("resume-after-sequence"):
		return Position{Type: IterAfterSequenceNumber, Sequence: p.Sequence}
	}
	return Position{Type: IterAtSequenceNumber, Sequence: p.Sequence}
}

func (w *Worker) onIterator(pc pendingCall, r *Result) {
	h := w.heldFor(pc)
	if h == nil || h.gen != pc.gen || h.c.phase != cIterWait {
		return
	}
	c := &h.c
	if r.Err != nil {
		c.backoff = w.nextBackoff(c.backoff)
		if errors.Is(r.Err, ErrNotFound) {
			if w.provenGone(h) {
				// The shard has left the stream: it was closed and its
				// retention has passed, so nothing is left to read. End it,
				// so that its children can start.
				c.gone = true
				c.end = true
				c.phase = cShardEnd
				w.tickConsumer(h)
				return
			}
			if listed, known := w.shardListed(h.ref); known && !listed && !c.unverified {
				// Not listed, and nothing proves the row is this stream's
				// (it may be another stream's that shares the table): leave
				// it as it is, and look again after each sync.
				c.unverified = true
				w.emit(TraceEvent{Kind: TraceShardUnverified, Key: h.key, Shard: h.ref, Counter: h.row.Counter,
					Reason: "GetShardIterator: not found; the stream does not list the shard and the row carries no proof that it is the stream's"})
			}
			// Look again after a fresh listing.
			c.backoff = w.cfg.ShardSyncInterval
			w.sync.soon(w.now.Mono)
		}
		c.phase = cIter
		c.nextAt = w.now.Mono + c.backoff
		return
	}
	c.backoff = 0
	c.iterator = r.Iterator
	c.phase = cFetch
	c.nextAt = w.now.Mono
	w.tickConsumer(h)
}

func (w *Worker) onRecords(pc pendingCall, r *Result) {
	h := w.heldFor(pc)
	if h == nil || h.gen != pc.gen || h.c.phase != cFetchWait {
		return
	}
	c := &h.c
	now := w.now.Mono
	switch {
	case r.Err == nil:
	case errors.Is(r.Err, ErrExpiredIterator), errors.Is(r.Err, ErrNotFound):
		// A new iterator after the last record delivered; if the shard is
		// gone, getting it says so.
		if w.bug("expired-iterator-restarts-at-checkpoint") {
			c.position = h.row.Checkpoint
		}
		c.phase = cIter
		c.nextAt = now
		w.tickConsumer(h)
		return
	default:
		c.backoff = w.nextBackoff(c.backoff)
		c.phase = cFetch
		c.nextAt = now + c.backoff
		return
	}
	c.backoff = 0
	recs := w.userRecords(h, r.Page.Records)
	// Drop what was already delivered (the record at the position, read
	// again).
	for len(recs) > 0 && w.order(Checkpoint{Sequence: recs[0].Sequence, SubSequence: recs[0].SubSequence}, c.position) <= 0 && !w.bug("reread-not-dropped") {
		recs = recs[1:]
	}
	c.iterator = r.Page.NextIterator
	if c.iterator == "" {
		c.end = true
		for _, s := range r.Page.ChildShards {
			c.children = appendUnique(c.children, s.ID)
		}
	}
	switch {
	case len(recs) > 0:
		c.records = recs
		c.millisBehind = r.Page.MillisBehind
		last := recs[len(recs)-1]
		c.position = Checkpoint{Sequence: last.Sequence, SubSequence: last.SubSequence}
		c.phase = cDeliver
		c.nextAt = now
	case c.end:
		c.phase = cShardEnd
	case len(r.Page.Records) > 0:
		// Nothing new to deliver, but the stream was not idle: the page
		// held only what was delivered before, or dropped aggregates.
		c.phase = cFetch
		c.nextAt = now
	default:
		c.phase = cFetch
		c.nextAt = now + w.cfg.IdleTimeBetweenReads
	}
	w.tickConsumer(h)
}

func (w *Worker) onDone(in Input, rs *rowState) {
	batch := in.Batch
	if rs == nil {
		return
	}
	h := rs.held
	if h == nil || h.c.batch != batch || !h.c.busyWithProcessor() {
		return
	}
	c := &h.c
	now := w.now.Mono
	switch c.phase {
	case cInitWait:
		c.initialized = true
		c.phase = cIter
		c.nextAt = now
	case cDeliverWait:
		first, last := c.records[0].Sequence, c.records[len(c.records)-1].Sequence
		switch {
		case in.Failed && in.Skipped:
			// The driver's failure policy passed the batch over: go on as
			// if it had been processed (nothing is checkpointed for it).
			w.emit(TraceEvent{Kind: TraceBatchSkipped, Key: h.key, Shard: h.ref, Counter: h.row.Counter,
				First: first, Last: last, Count: c.failures + 1, Reason: in.Reason})
		case in.Failed && !w.bug("failed-batch-advances"):
			// Deliver the same records again, after a pause.
			c.failures++
			w.emit(TraceEvent{Kind: TraceBatchFailed, Key: h.key, Shard: h.ref, Counter: h.row.Counter,
				First: first, Last: last, Count: c.failures})
			c.backoff = w.nextBackoff(c.backoff)
			c.phase = cDeliver
			c.nextAt = now + c.backoff
			w.tickConsumer(h)
			return
		}
		c.failures = 0
		c.backoff = 0
		c.records = nil
		if c.end {
			c.phase = cShardEnd
		} else {
			c.phase = cFetch
			c.nextAt = now
		}
	case cShardEndWait:
		w.learnChildren(h)
	case cShutdownWait:
		c.phase = cFinished
		h.release = wRelease
	}
	w.tickConsumer(h)
}

// learnChildren finds the children of an ended shard (from GetRecords'
// ChildShards, or from shard sync's listing) and then asks for SHARD_END to
// be written.
func (w *Worker) learnChildren(h *holding) {
	c := &h.c
	for _, s := range w.sync.shards[h.ref.Stream] {
		if s.Parent == h.ref.Shard || s.AdjacentParent == h.ref.Shard {
			c.children = appendUnique(c.children, s.ID)
		}
	}
	if listed, known := w.shardListed(h.ref); len(c.children) == 0 && known && !listed && c.gone {
		// A shard gone from the stream whose children are gone too (or
		// never were seen): end it without them.
		c.phase = cFinished
		h.release = wShardEnd
		return
	}
	if len(c.children) == 0 {
		// The listing does not show the children yet: sync, then look
		// again.
		c.phase = cChildren
		c.nextAt = w.now.Mono + w.cfg.RenewInterval/2
		w.sync.soon(w.now.Mono)
		return
	}
	c.phase = cFinished
	h.children = c.children
	h.release = wShardEnd
}

// shardListed reports whether the latest listing of ref's stream shows the
// shard; known is false when there is no listing yet, or an empty one (a
// stream always has an open shard: an empty listing proves nothing).
func (w *Worker) shardListed(ref ShardRef) (listed, known bool) {
	shards := w.sync.shards[ref.Stream]
	known = len(shards) > 0
	for _, s := range shards {
		if s.ID == ref.Shard {
			return true, true
		}
	}
	return false, known
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
