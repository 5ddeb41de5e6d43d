package fakes

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// ksub is one subscription of a consumer to a shard.
type ksub struct {
	handle   string
	consumer *kconsumer
	pair     *kpair
	stream   *kstream
	shard    *kshard
	pos      int // index of the next record
	started  time.Time
	cont     string
	ended    error // why it ended; nil while it delivers
}

// kpair is what the fake remembers of one consumer and shard: when it was
// last subscribed (for the in-use window and the rate limit) and its
// current subscription.
type kpair struct {
	lastAttempt time.Time
	lastSuccess time.Time
	current     *ksub
}

// Subscribe subscribes consumer consumerARN to shard of stream from pos
// (the positions of GetShardIterator) and returns the subscription's
// handle. It fails with an error wrapping
//
//   - engine.ErrNotFound: no such consumer (or it is gone), stream or shard,
//     or a closed shard past retention;
//   - engine.ErrResourceInUse: the consumer is not ACTIVE, or a
//     subscription of the same consumer and shard succeeded less than
//     InUseWindow ago;
//   - engine.ErrThrottled: a Subscribe of the same consumer and shard less
//     than MinSubscribeInterval ago (LimitExceededException);
//   - ErrInvalidArgument: an invalid position.
//
// A subscription made InUseWindow or more after the previous one of the
// consumer and shard takes over: the previous one ends with an error
// wrapping engine.ErrSubscriptionEnded and engine.ErrResourceInUse.
func (k *Kinesis) Subscribe(ctx context.Context, consumerARN, stream, shard string, pos engine.Position) (string, error) {
	const op = engine.OpSubscribe
	now := k.clock.Now()
	if err := k.begin(ctx, op, stream, shard, now); err != nil {
		return "", err
	}
	h, err := k.subscribe(consumerARN, stream, shard, pos, now)
	if err = k.end(op, stream, shard, err); err != nil {
		return "", err
	}
	return h, nil
}

func (k *Kinesis) subscribe(arn, stream, shard string, pos engine.Position, now time.Time) (string, error) {
	const op = engine.OpSubscribe
	f := k.fanOutState()
	c := f.consumers[arn]
	if c != nil && f.live(c.stream, c.name, now) == nil {
		c = nil
	}
	switch {
	case c == nil || c.stream != stream:
		return "", &callError{op: op, subject: stream, sub: shard, msg: "no consumer " + arn + " on the stream", err: engine.ErrNotFound}
	case f.status(c, now) != engine.ConsumerActive:
		return "", &callError{op: op, subject: stream, sub: shard, msg: "consumer is " + string(f.status(c, now)), err: engine.ErrResourceInUse}
	}
	s, sh, err := k.lookup(op, stream, shard)
	if err != nil {
		return "", err
	}
	if !k.listed(sh, now) {
		return "", &callError{op: op, subject: stream, sub: shard, msg: "shard closed beyond retention", err: engine.ErrNotFound}
	}
	key := arn + " " + shard
	p := f.pairs[key]
	if p == nil {
		p = &kpair{}
		f.pairs[key] = p
	}
	last := p.lastAttempt
	p.lastAttempt = now
	if f.opts.MinSubscribeInterval > 0 && !last.IsZero() && now.Sub(last) < f.opts.MinSubscribeInterval {
		return "", &callError{op: op, subject: stream, sub: shard, msg: "LimitExceeded: one SubscribeToShard per second per consumer and shard", err: engine.ErrThrottled}
	}
	if !p.lastSuccess.IsZero() && now.Sub(p.lastSuccess) < f.opts.InUseWindow {
		return "", &callError{op: op, subject: stream, sub: shard, msg: "subscribed " + now.Sub(p.lastSuccess).String() + " ago", err: engine.ErrResourceInUse}
	}
	it, err := k.iteratorAt(stream, shard, pos, now)
	if err != nil {
		return "", err
	}
	st, _ := k.decodeIterator(it)
	if old := p.current; old != nil && old.ended == nil {
		old.ended = &callError{op: engine.OpNextEvent, subject: stream, sub: shard, msg: "taken over by a newer subscription",
			err: fmt.Errorf("%w: %w", engine.ErrSubscriptionEnded, engine.ErrResourceInUse)}
	}
	f.serial++
	sub := &ksub{
		handle:   "SUB" + strconv.FormatUint(k.tag, 36) + "." + strconv.FormatUint(f.serial, 36),
		consumer: c, pair: p, stream: s, shard: sh, pos: st.pos, started: now,
	}
	p.lastSuccess = now
	p.current = sub
	f.subs[sub.handle] = sub
	return sub.handle, nil
}

// NextEvent returns the event subscription sub has now: the records after
// the previous event (up to MaxEventRecords), its continuation and
// MillisBehind, and at the end of a closed shard End with ChildShards. The
// fake never waits: with nothing new it answers an empty event at once,
// whose Continuation covers everything the shard holds; a simulator decides
// when its reply arrives (see SubscriptionReady).
//
// Once the subscription has ended (its Lifetime passed, it was taken over,
// dropped, unsubscribed, its consumer deregistered, or the shard's end was
// sent) it fails with an error wrapping engine.ErrSubscriptionEnded (and
// engine.ErrResourceInUse when taken over). The event's Records belong to
// the caller; their Data is shared with the fake and must not be modified.
func (k *Kinesis) NextEvent(ctx context.Context, sub string, wait time.Duration) (engine.SubscriptionEvent, error) {
	const op = engine.OpNextEvent
	now := k.clock.Now()
	f := k.fanOutState()
	s := f.subs[sub]
	stream, shard := "", ""
	if s != nil {
		stream, shard = s.stream.name, s.shard.info.ID
	}
	if err := k.begin(ctx, op, stream, shard, now); err != nil {
		return engine.SubscriptionEvent{}, err
	}
	var ev engine.SubscriptionEvent
	var err error
	if s == nil {
		err = &callError{op: op, subject: sub, msg: "unknown or given-up subscription", err: engine.ErrSubscriptionEnded}
	} else if err = k.endedAt(s, now); err == nil {
		ev = k.event(s, now)
	}
	if err = k.end(op, stream, shard, err); err != nil {
		return engine.SubscriptionEvent{}, err
	}
	return ev, nil
}

// endedAt returns why s has ended by now, or nil.
func (k *Kinesis) endedAt(s *ksub, now time.Time) error {
	f := k.fanOutState()
	if s.ended == nil {
		switch st := f.status(s.consumer, now); {
		case st != engine.ConsumerActive:
			s.ended = &callError{op: engine.OpNextEvent, subject: s.stream.name, sub: s.shard.info.ID, msg: "the consumer was deregistered", err: engine.ErrSubscriptionEnded}
		case !now.Before(s.started.Add(f.opts.Lifetime)):
			s.ended = &callError{op: engine.OpNextEvent, subject: s.stream.name, sub: s.shard.info.ID, msg: "lifetime of " + f.opts.Lifetime.String() + " over",
				err: fmt.Errorf("%w: %w", engine.ErrSubscriptionEnded, engine.ErrSubscriptionExpired)}
		}
	}
	return s.ended
}

func (k *Kinesis) event(s *ksub, now time.Time) engine.SubscriptionEvent {
	sh := s.shard
	pos := max(s.pos, k.trim(sh, now))
	n := sh.count()
	end := min(pos+k.fanOutState().opts.MaxEventRecords, n)
	var ev engine.SubscriptionEvent
	if end > pos {
		ev.Records = k.records(s.stream, sh, pos, end)
	}
	if end < n { // then end > pos
		ev.MillisBehind = max(now.Sub(ev.Records[len(ev.Records)-1].Arrival).Milliseconds(), 0)
	}
	s.pos = end
	switch {
	case !sh.closed.IsZero() && end == n:
		ev.End = true
		ev.ChildShards = s.stream.childInfos(sh)
		s.ended = &callError{op: engine.OpNextEvent, subject: s.stream.name, sub: sh.info.ID, msg: "the shard's end was sent", err: engine.ErrSubscriptionEnded}
		return ev
	case end > pos:
		s.cont = ev.Records[len(ev.Records)-1].Sequence
	case end == n:
		// Caught up on an open shard: everything numbered so far is
		// covered (a stored stream's sequence numbers are stream-wide and
		// increasing; a generated shard's its own).
		s.cont = sh.seq.format(sh.lastNumber())
	}
	ev.Continuation = s.cont
	return ev
}

// Unsubscribe ends subscription sub and forgets it. An unknown handle is
// not an error. The in-use window of its consumer and shard still runs.
func (k *Kinesis) Unsubscribe(ctx context.Context, sub string) error {
	const op = engine.OpUnsubscribe
	now := k.clock.Now()
	f := k.fanOutState()
	s := f.subs[sub]
	stream, shard := "", ""
	if s != nil {
		stream, shard = s.stream.name, s.shard.info.ID
	}
	if err := k.begin(ctx, op, stream, shard, now); err != nil {
		return err
	}
	if s != nil {
		k.forget(s)
	}
	return k.end(op, stream, shard, nil)
}

func (k *Kinesis) forget(s *ksub) {
	f := k.fanOutState()
	delete(f.subs, s.handle)
	if s.pair.current == s {
		s.pair.current = nil
	}
	if s.ended == nil {
		s.ended = &callError{op: engine.OpNextEvent, subject: s.stream.name, sub: s.shard.info.ID, msg: "unsubscribed", err: engine.ErrSubscriptionEnded}
	}
}

// DropSubscription ends subscription sub with an error wrapping cause and
// engine.ErrSubscriptionEnded, as a connection lost mid-stream does. It
// reports whether sub was open.
func (k *Kinesis) DropSubscription(sub string, cause error) bool {
	s := k.fanOutState().subs[sub]
	if s == nil || k.endedAt(s, k.clock.Now()) != nil {
		return false
	}
	s.ended = &callError{op: engine.OpNextEvent, subject: s.stream.name, sub: s.shard.info.ID, msg: "dropped",
		err: fmt.Errorf("%w: %w", engine.ErrSubscriptionEnded, cause)}
	return true
}

// SubscriptionReady reports, for a simulator, what NextEvent of sub would
// answer now: ready is true when it brings records, the shard's end or an
// error, false when it would be an empty event; endsAt is when the
// subscription's lifetime ends. ok is false for an unknown handle.
func (k *Kinesis) SubscriptionReady(sub string) (ready bool, endsAt time.Time, ok bool) {
	s := k.fanOutState().subs[sub]
	if s == nil {
		return false, time.Time{}, false
	}
	now := k.clock.Now()
	endsAt = s.started.Add(k.fanOutState().opts.Lifetime)
	if k.endedAt(s, now) != nil {
		return true, endsAt, true
	}
	sh := s.shard
	return max(s.pos, k.trim(sh, now)) < sh.count() || !sh.closed.IsZero(), endsAt, true
}

// OpenSubscriptions returns how many subscriptions are held and not
// given up (ended ones count until Unsubscribe): a consumer that forgets
// to give subscriptions up shows here.
func (k *Kinesis) OpenSubscriptions() int { return len(k.fanOutState().subs) }
