package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// fakeFanOut answers the fan-out calls from a script.
type fakeFanOut struct {
	fakeStream
	subErr   []error
	eventErr []error
}

func (f *fakeFanOut) DescribeConsumer(context.Context, string, string) (engine.StreamConsumer, error) {
	return engine.StreamConsumer{Status: engine.ConsumerActive}, nil
}
func (f *fakeFanOut) RegisterConsumer(context.Context, string, string) (engine.StreamConsumer, error) {
	return engine.StreamConsumer{}, fmt.Errorf("exists: %w", engine.ErrResourceInUse)
}
func (f *fakeFanOut) DeregisterConsumer(context.Context, string, string) error { return nil }
func (f *fakeFanOut) Subscribe(_ context.Context, _, _, shard string, _ engine.Position) (string, error) {
	err := f.subErr[0]
	f.subErr = f.subErr[1:]
	return "h-" + shard, err
}
func (f *fakeFanOut) NextEvent(context.Context, string, time.Duration) (engine.SubscriptionEvent, error) {
	err := f.eventErr[0]
	f.eventErr = f.eventErr[1:]
	if err != nil {
		return engine.SubscriptionEvent{}, err
	}
	return engine.SubscriptionEvent{Continuation: "1", MillisBehind: 40}, nil
}
func (f *fakeFanOut) Unsubscribe(context.Context, string) error { return nil }

// A fan-out stream wrapped by the metrics stays one, and its subscriptions,
// renewals, ends, events and MillisBehindLatest (from events without
// records too) are counted.
func TestFanOutMetrics(t *testing.T) {
	m, err := New(Options{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	ref := engine.ShardRef{Stream: "s", Shard: "sh0"}
	m.trace(engine.TraceEvent{Kind: engine.TraceLeaseAcquired, Key: "sh0", Shard: ref, Reason: "unowned"})
	next := &fakeFanOut{
		subErr: []error{nil, fmt.Errorf("x: %w", engine.ErrResourceInUse), fmt.Errorf("x: %w", engine.ErrThrottled), nil},
		eventErr: []error{nil, fmt.Errorf("x: %w: %w", engine.ErrSubscriptionEnded, engine.ErrSubscriptionExpired),
			fmt.Errorf("x: %w: %w", engine.ErrSubscriptionEnded, engine.ErrResourceInUse),
			fmt.Errorf("x: %w: %w", engine.ErrSubscriptionEnded, errors.New("reset")), context.DeadlineExceeded},
	}
	s, ok := m.Stream(next).(engine.FanOutStream)
	if !ok {
		t.Fatal("the wrapped stream lost engine.FanOutStream")
	}
	ctx := context.Background()
	if _, err := s.RegisterConsumer(ctx, "s", "app"); !errors.Is(err, engine.ErrResourceInUse) {
		t.Fatalf("RegisterConsumer = %v", err)
	}
	for i := 0; i < 4; i++ {
		_, _ = s.Subscribe(ctx, "arn", "s", "sh0", engine.Position{Type: engine.IterLatest})
	}
	for i := 0; i < 5; i++ {
		_, _ = s.NextEvent(ctx, "h-sh0", time.Second)
	}
	wantLines(t, scrape(t, m),
		`shardlease_subscriptions_total{outcome="ok",owner="w1"} 2`,
		`shardlease_subscriptions_total{outcome="in-use",owner="w1"} 1`,
		`shardlease_subscriptions_total{outcome="throttled",owner="w1"} 1`,
		`shardlease_subscriptions_total{outcome="error",owner="w1"} 0`,
		`shardlease_subscription_renewals_total{owner="w1"} 1`,
		`shardlease_subscription_ends_total{cause="lifetime",owner="w1"} 1`,
		`shardlease_subscription_ends_total{cause="taken-over",owner="w1"} 1`,
		`shardlease_subscription_ends_total{cause="error",owner="w1"} 1`,
		`shardlease_subscription_events_total{owner="w1"} 1`,
		`shardlease_millis_behind_latest{owner="w1",shard="sh0",stream="s"} 40`,
		`shardlease_stream_call_duration_seconds_count{op="RegisterStreamConsumer",outcome="in-use",owner="w1"} 1`,
		`shardlease_stream_call_duration_seconds_count{op="SubscribeToShard",outcome="ok",owner="w1"} 2`,
	)
	if got := Outcome(fmt.Errorf("x: %w", engine.ErrSubscriptionEnded)); got != OutcomeEnded {
		t.Errorf("Outcome(ended) = %s", got)
	}
}
