package history

import (
	"context"
	"errors"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// tapFanOut is a tapStream of a stream with enhanced fan-out: it stays an
// engine.FanOutStream, and records every SubscribeToShard reply as it
// records GetShardIterator replies (they say where a LATEST start began
// reading). Metrics count subscriptions in package metrics.
type tapFanOut struct {
	*tapStream
	fo engine.FanOutStream
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

func (s *tapFanOut) Subscribe(ctx context.Context, arn, stream, shard string, pos engine.Position) (string, error) {
	sent := s.t.now()
	h, err := s.fo.Subscribe(ctx, arn, stream, shard, pos)
	if s.t.rec != nil {
		out := Outcome(err)
		if errors.Is(err, engine.ErrResourceInUse) {
			out = trace.OutcomeInUse
		}
		now := s.t.now()
		s.t.rec.Write(trace.Record{T: Stamp(now), Wall: now.UnixNano(), Kind: trace.KindReply, Op: engine.OpSubscribe,
			Call: s.t.calls.Add(1), Key: shard, Reason: string(pos.Type), First: pos.Sequence, Sent: Stamp(sent), Outcome: out})
	}
	return h, err
}

func (s *tapFanOut) NextEvent(ctx context.Context, h string, wait time.Duration) (engine.SubscriptionEvent, error) {
	return s.fo.NextEvent(ctx, h, wait)
}

func (s *tapFanOut) Unsubscribe(ctx context.Context, h string) error { return s.fo.Unsubscribe(ctx, h) }
