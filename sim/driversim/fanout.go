package driversim

import (
	"context"
	"errors"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/sim/trace"
)

// Enhanced fan-out. In a fan-out world (World.FanOut) every consumer reads
// with Config.Consumer FanOut through its stream, which is then an
// engine.FanOutStream over the fake's consumers and subscriptions. The
// driver runs NextEvent and Unsubscribe outside its stream-call pool, with
// the call timeout plus the event's wait: a NextEvent whose subscription
// has nothing to push waits at the service, as an HTTP/2 stream does,
// until a record is put, a shard closes, its wait runs out or the
// subscription's lifetime ends.

// consumerName is the stream consumer of fan-out worlds.
const consumerName = "driversim-app"

// errSubDropped is what a subscription dropped mid-stream ends with.
var errSubDropped = errors.New("driversim: the HTTP/2 stream was reset (injected)")

var _ engine.FanOutStream = (*nodeStream)(nil)

// wake wakes every NextEvent waiting at the service; the caller holds
// w.mu.
func (w *world) wake() {
	if w.woken != nil {
		close(w.woken)
	}
	w.woken = make(chan struct{})
}

func (s *nodeStream) DescribeConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	var c engine.StreamConsumer
	err := s.n.call(ctx, &callSpec{op: engine.OpDescribeConsumer}, func(ctx context.Context) (err error) {
		c, err = s.n.w.kin.DescribeConsumer(ctx, stream, name)
		return err
	}, nil)
	return c, err
}

func (s *nodeStream) RegisterConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	var c engine.StreamConsumer
	err := s.n.call(ctx, &callSpec{op: engine.OpRegisterConsumer}, func(ctx context.Context) (err error) {
		c, err = s.n.w.kin.RegisterConsumer(ctx, stream, name)
		return err
	}, nil)
	return c, err
}

func (s *nodeStream) DeregisterConsumer(ctx context.Context, stream, name string) error {
	return s.n.call(ctx, &callSpec{op: engine.OpDeregisterConsumer}, func(ctx context.Context) error {
		return s.n.w.kin.DeregisterConsumer(ctx, stream, name)
	}, nil)
}

func (s *nodeStream) Subscribe(ctx context.Context, consumerARN, stream, shard string, pos engine.Position) (string, error) {
	var sub string
	err := s.n.call(ctx, &callSpec{op: engine.OpSubscribe, key: shard}, func(ctx context.Context) (err error) {
		sub, err = s.n.w.kin.Subscribe(ctx, consumerARN, stream, shard, pos)
		return err
	}, func(r *trace.Record) { r.First = pos.Sequence; r.Previous = string(pos.Type) })
	return sub, err
}

func (s *nodeStream) Unsubscribe(ctx context.Context, sub string) error {
	return s.n.call(ctx, &callSpec{op: engine.OpUnsubscribe, draw: sub}, func(ctx context.Context) error {
		return s.n.w.kin.Unsubscribe(ctx, sub)
	}, nil)
}

func (s *nodeStream) NextEvent(ctx context.Context, sub string, wait time.Duration) (engine.SubscriptionEvent, error) {
	var ev engine.SubscriptionEvent
	err := s.n.call(ctx, &callSpec{op: engine.OpNextEvent, draw: sub, park: func(ctx context.Context) { s.park(ctx, sub, wait) }},
		func(ctx context.Context) (err error) {
			w := s.n.w
			if !w.healed && w.w.FanOut.Drop > 0 && s.n.dropRNG.chance(w.w.FanOut.Drop) && w.kin.DropSubscription(sub, errSubDropped) {
				w.stats.SubscriptionsDropped++
			}
			ev, err = w.kin.NextEvent(ctx, sub, 0)
			return err
		}, nil)
	return ev, err
}

// park holds a NextEvent at the service until its subscription has
// something to push (records, the shard's end, an end of its own), its
// wait runs out, or its lifetime ends.
func (s *nodeStream) park(ctx context.Context, sub string, wait time.Duration) {
	w := s.n.w
	deadline := time.Now().Add(wait)
	for {
		w.mu.Lock()
		ready, endsAt, ok := w.kin.SubscriptionReady(sub)
		woken := w.woken
		w.mu.Unlock()
		until := deadline
		if endsAt.Before(until) {
			until = endsAt
		}
		d := time.Until(until)
		if ready || !ok || d <= 0 {
			return
		}
		t := time.NewTimer(d)
		select {
		case <-woken:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// setupFanOut configures the fake's fan-out for a fan-out world.
func (w *world) setupFanOut() {
	if !w.w.FanOut.On {
		return
	}
	w.kin.SetFanOutOptions(fakes.FanOutOptions{Activation: w.w.FanOut.Activation, Lifetime: w.w.FanOut.Lifetime,
		MaxEventRecords: max(w.w.Engine.GetRecordsLimit, 100)})
}
