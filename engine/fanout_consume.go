package engine

import (
	"errors"
	"time"
)

// EventWait is how long one NextEvent call waits for an event before it
// answers that none came. The driver gives the call CallTimeout on top.
const EventWait = 5 * time.Second

// minEventGap is the least time between two NextEvent calls of a
// subscription when the first brought nothing: a stream that answers an
// empty event at once must not make the worker spin.
const minEventGap = 100 * time.Millisecond

// minResubscribeGap is the least time between two SubscribeToShard calls of
// one shard (Kinesis allows one per second per consumer and shard).
const minResubscribeGap = time.Second

// subState is the subscription of one held lease in FanOut mode. The
// consume phases are those of polling: cIter subscribes (instead of getting
// an iterator) and cFetch asks for the next event (instead of GetRecords).
// The next event is asked for only once the processor has finished the
// previous batch: that is the backpressure, and the stream holds back what
// has not been asked for.
type subState struct {
	handle       string // the subscription read, "" if none
	cont         string // the last ContinuationSequenceNumber
	subscribedAt time.Duration
	askedAt      time.Duration
	inUse        int // ErrResourceInUse answers in a row
	// notFound: the last subscriptions were refused as not found, the
	// first of them sent at notFoundSince
	notFound      bool
	notFoundSince time.Duration
}

// subscribe sends SubscribeToShard for h, from after the last continuation
// sequence number, or from the lease's position before the first event.
// It subscribes only while the worker acts on the lease, so that a holder
// near the end of its lease never takes the subscription from the next.
func (w *Worker) subscribe(h *holding) {
	c := &h.c
	if !w.isActing(h) {
		return
	}
	arn, ok := w.consumerARN(h.ref.Stream)
	if !ok {
		// The consumer is being registered again: look once it may be.
		c.nextAt = w.now.Mono + w.jitter(consumerPoll)
		return
	}
	c.phase = cIterWait
	c.fo.subscribedAt = w.now.Mono
	w.call(Call{Op: OpSubscribe, Stream: h.ref.Stream, Shard: h.ref.Shard, ConsumerARN: arn, Position: w.subscribePosition(h)},
		pendingCall{purpose: forSubscribe, key: h.key, gen: h.gen, rs: h.rs})
}

// subscribePosition returns where a subscription of h starts.
func (w *Worker) subscribePosition(h *holding) Position {
	if cont := h.c.fo.cont; cont != "" {
		if w.bug("resubscribe-at-latest") {
			return Position{Type: IterLatest}
		}
		return Position{Type: IterAfterSequenceNumber, Sequence: cont}
	}
	return w.positionAfter(h)
}

func (w *Worker) onSubscribed(pc pendingCall, r *Result) {
	h := w.heldFor(pc)
	if h == nil || h.gen != pc.gen || h.c.phase != cIterWait {
		if r.Err == nil && r.Subscription != "" {
			// Not wanted any more (the lease was lost or given up).
			w.unsubscribe(pc.key, r.Subscription)
		}
		return
	}
	c := &h.c
	now := w.now.Mono
	if r.Err != nil {
		switch {
		case errors.Is(r.Err, ErrResourceInUse):
			// Another subscription of this consumer and shard began less
			// than 5 s ago (the previous holder's, in a hand-off), or the
			// consumer is not ACTIVE: wait, then try again.
			c.backoff = w.inUseBackoff(c.backoff)
			if c.fo.inUse++; c.fo.inUse >= 4 {
				c.fo.inUse = 0
				w.recheckConsumer(h.ref.Stream)
			}
		case errors.Is(r.Err, ErrNotFound):
			// The shard is gone, or the consumer (a worker that shut down
			// with DeregisterConsumer deregistered it). Only a listing
			// that began after this subscription was sent tells them
			// apart: one from before it may predate the shard (a child of
			// a split the worker has not listed yet).
			if !c.fo.notFound {
				c.fo.notFound, c.fo.notFoundSince = true, c.fo.subscribedAt
			}
			if w.provenGone(h) && w.sync.listedAt[h.ref.Stream] > c.fo.notFoundSince {
				// The shard has left the stream (see onIterator).
				c.gone = true
				c.end = true
				c.phase = cShardEnd
				w.tickConsumer(h)
				return
			}
			// The shard is listed: the consumer may be gone.
			w.recheckConsumer(h.ref.Stream)
			c.backoff = w.nextBackoff(c.backoff)
			w.sync.soon(now)
		default:
			c.backoff = w.nextBackoff(c.backoff)
		}
		c.phase = cIter
		c.nextAt = w.resubscribeAt(h, c.backoff)
		return
	}
	c.backoff = 0
	c.fo.inUse = 0
	c.fo.notFound = false
	c.fo.handle = r.Subscription
	c.phase = cFetch
	c.nextAt = now
	w.tickConsumer(h)
}

// inUseBackoff is the wait after ErrResourceInUse: about a second,
// doubling to 5 s (past which the other subscription can be taken over).
func (w *Worker) inUseBackoff(prev time.Duration) time.Duration {
	d := min(max(2*prev, time.Second), 5*time.Second)
	return w.jitter(d)
}

// resubscribeAt returns when h may subscribe again after a wait of
// backoff: never sooner than minResubscribeGap after its last
// SubscribeToShard (Kinesis refuses a second call within a second).
func (w *Worker) resubscribeAt(h *holding, backoff time.Duration) time.Duration {
	return max(w.now.Mono+backoff, h.c.fo.subscribedAt+minResubscribeGap+minResubscribeGap/20)
}

// askEvent sends NextEvent for h's subscription, while the worker acts on
// the lease.
func (w *Worker) askEvent(h *holding) {
	c := &h.c
	if !w.isActing(h) {
		return
	}
	if c.fo.handle == "" {
		c.phase = cIter
		c.nextAt = w.now.Mono
		w.tickConsumer(h)
		return
	}
	c.phase = cFetchWait
	c.fo.askedAt = w.now.Mono
	w.call(Call{Op: OpNextEvent, Stream: h.ref.Stream, Shard: h.ref.Shard, Subscription: c.fo.handle, Wait: EventWait},
		pendingCall{purpose: forEvent, key: h.key, gen: h.gen, rs: h.rs})
}

func (w *Worker) onEvent(pc pendingCall, r *Result) {
	h := w.heldFor(pc)
	if h == nil || h.gen != pc.gen || h.c.phase != cFetchWait {
		return
	}
	c := &h.c
	now := w.now.Mono
	if r.Err != nil {
		w.dropSubscription(h)
		switch {
		case errors.Is(r.Err, ErrResourceInUse):
			// Taken over by a newer subscription: if another worker now
			// holds the lease, this one will soon see it; wait before
			// taking the subscription back.
			c.backoff = w.inUseBackoff(c.backoff)
		case errors.Is(r.Err, ErrSubscriptionEnded):
			// The lifetime ended (every 5 minutes): subscribe again from
			// the continuation, at once but no more than once a second.
			c.backoff = 0
		default:
			c.backoff = w.nextBackoff(c.backoff)
		}
		c.phase = cIter
		c.nextAt = w.resubscribeAt(h, c.backoff)
		w.tickConsumer(h)
		return
	}
	c.backoff = 0
	ev := r.Event
	recs := w.userRecords(h, ev.Records)
	for len(recs) > 0 && w.order(Checkpoint{Sequence: recs[0].Sequence, SubSequence: recs[0].SubSequence}, c.position) <= 0 {
		recs = recs[1:]
	}
	if ev.Continuation != "" {
		c.fo.cont = ev.Continuation
	}
	if ev.End {
		c.end = true
		for _, s := range ev.ChildShards {
			c.children = appendUnique(c.children, s.ID)
		}
		w.dropSubscription(h)
	}
	c.millisBehind = ev.MillisBehind
	switch {
	case len(recs) > 0:
		c.records = recs
		last := recs[len(recs)-1]
		c.position = Checkpoint{Sequence: last.Sequence, SubSequence: last.SubSequence}
		c.phase = cDeliver
		c.nextAt = now
	case c.end:
		c.phase = cShardEnd
	case len(ev.Records) > 0:
		// Only what was delivered before (or dropped aggregates): go on.
		c.phase = cFetch
		c.nextAt = now
	default:
		// Nothing came: ask again (the stream waited for an event).
		c.phase = cFetch
		c.nextAt = max(now, c.fo.askedAt+minEventGap)
	}
	w.tickConsumer(h)
}

// dropSubscription gives up h's subscription, if any.
func (w *Worker) dropSubscription(h *holding) {
	if h.c.fo.handle != "" {
		w.unsubscribe(h.key, h.c.fo.handle)
		h.c.fo.handle = ""
	}
}

func (w *Worker) unsubscribe(key, handle string) {
	ref := w.refOf(key)
	w.call(Call{Op: OpUnsubscribe, Stream: ref.Stream, Shard: ref.Shard, Subscription: handle},
		pendingCall{purpose: forUnsubscribe, key: key})
}
