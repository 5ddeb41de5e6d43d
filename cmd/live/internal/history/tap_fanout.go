package history

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/sim/trace"
)

// FanOutObserver is the optional part of an Observer that receives what a
// Tap sees of enhanced fan-out. Its methods are called concurrently.
type FanOutObserver interface {
	// Subscribed gets every SubscribeToShard: the outcome (trace.Outcome*,
	// or "in-use") and whether it renews a subscription of the shard this
	// process had before.
	Subscribed(shard engine.ShardRef, outcome string, renewal bool)
	// SubscriptionEnded gets every end of a subscription: "lifetime",
	// "taken-over" or "error".
	SubscriptionEnded(shard engine.ShardRef, cause string)
	// Event gets every event pushed.
	Event(shard engine.ShardRef, records int, millisBehind int64)
}

// tapFanOut is a tapStream of a stream with enhanced fan-out.
type tapFanOut struct {
	*tapStream
	fo engine.FanOutStream

	mu     sync.Mutex
	seen   map[engine.ShardRef]bool   // shards subscribed to before
	shards map[string]engine.ShardRef // by subscription handle
}

func (t *Tap) fanOutObserver() FanOutObserver {
	o, _ := t.obs.(FanOutObserver)
	return o
}

func (s *tapFanOut) DescribeConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	return s.fo.DescribeConsumer(ctx, stream, name)
}

func (s *tapFanOut) RegisterConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	return s.fo.RegisterConsumer(ctx, stream, name)
}

func (s *tapFanOut) DeregisterConsumer(ctx context.Context, stream, name string) error {
	return s.fo.DeregisterConsumer(ctx, stream, name)
}

// Subscribe is recorded like a GetShardIterator reply (where a LATEST
// start began reading) and reported.
func (s *tapFanOut) Subscribe(ctx context.Context, arn, stream, shard string, pos engine.Position) (string, error) {
	sent := s.t.now()
	h, err := s.fo.Subscribe(ctx, arn, stream, shard, pos)
	ref := engine.ShardRef{Stream: stream, Shard: shard}
	out := Outcome(err)
	if errors.Is(err, engine.ErrResourceInUse) {
		out = "in-use"
	}
	if s.t.rec != nil {
		now := s.t.now()
		s.t.rec.Write(trace.Record{T: Stamp(now), Wall: now.UnixNano(), Kind: trace.KindReply, Op: engine.OpSubscribe,
			Call: s.t.calls.Add(1), Key: shard, Reason: string(pos.Type), First: pos.Sequence, Sent: Stamp(sent), Outcome: out})
	}
	s.mu.Lock()
	renewal := s.seen[ref]
	if err == nil {
		s.seen[ref] = true
		s.shards[h] = ref
	}
	s.mu.Unlock()
	if o := s.t.fanOutObserver(); o != nil {
		o.Subscribed(ref, out, renewal && err == nil)
	}
	return h, err
}

func (s *tapFanOut) NextEvent(ctx context.Context, h string, wait time.Duration) (engine.SubscriptionEvent, error) {
	ev, err := s.fo.NextEvent(ctx, h, wait)
	o := s.t.fanOutObserver()
	if o == nil {
		return ev, err
	}
	s.mu.Lock()
	ref, ok := s.shards[h]
	s.mu.Unlock()
	if !ok {
		return ev, err
	}
	switch {
	case err == nil && (len(ev.Records) > 0 || ev.Continuation != "" || ev.End):
		o.Event(ref, len(ev.Records), ev.MillisBehind)
	case errors.Is(err, engine.ErrResourceInUse):
		o.SubscriptionEnded(ref, "taken-over")
	case errors.Is(err, kinesisstream.ErrLifetimeOver):
		o.SubscriptionEnded(ref, "lifetime")
	case err != nil && !errors.Is(err, context.Canceled):
		o.SubscriptionEnded(ref, "error")
	}
	return ev, err
}

func (s *tapFanOut) Unsubscribe(ctx context.Context, h string) error {
	s.mu.Lock()
	delete(s.shards, h)
	s.mu.Unlock()
	return s.fo.Unsubscribe(ctx, h)
}
