package history

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/sim/trace"
)

// scriptedFanOut answers the fan-out calls from a script.
type scriptedFanOut struct {
	engine.Stream
	subErr   error
	eventErr error
}

func (s *scriptedFanOut) DescribeConsumer(context.Context, string, string) (engine.StreamConsumer, error) {
	return engine.StreamConsumer{}, nil
}
func (s *scriptedFanOut) RegisterConsumer(context.Context, string, string) (engine.StreamConsumer, error) {
	return engine.StreamConsumer{}, nil
}
func (s *scriptedFanOut) DeregisterConsumer(context.Context, string, string) error { return nil }
func (s *scriptedFanOut) Subscribe(_ context.Context, _, _, shard string, _ engine.Position) (string, error) {
	return "h-" + shard, s.subErr
}
func (s *scriptedFanOut) NextEvent(context.Context, string, time.Duration) (engine.SubscriptionEvent, error) {
	if s.eventErr != nil {
		return engine.SubscriptionEvent{}, s.eventErr
	}
	return engine.SubscriptionEvent{Records: make([]engine.Record, 2), Continuation: "1", MillisBehind: 9}, nil
}
func (s *scriptedFanOut) Unsubscribe(context.Context, string) error { return nil }

type fanOutCounts struct {
	subscribed []string
	ended      []string
	events     int
}

func (c *fanOutCounts) Trace(engine.TraceEvent)                            {}
func (c *fanOutCounts) StoreCall(engine.Op, string, time.Duration, string) {}
func (c *fanOutCounts) Processed(engine.ShardRef, int, int64)              {}
func (c *fanOutCounts) SubscriptionEnded(_ engine.ShardRef, cause string) {
	c.ended = append(c.ended, cause)
}
func (c *fanOutCounts) Event(engine.ShardRef, int, int64) { c.events++ }
func (c *fanOutCounts) Subscribed(_ engine.ShardRef, out string, renewal bool) {
	c.subscribed = append(c.subscribed, fmt.Sprintf("%s/%v", out, renewal))
}

// A tapped fan-out stream stays a fan-out stream, records subscriptions as
// the replies that say where reading began, and classifies their ends.
func TestTapFanOut(t *testing.T) {
	rec, err := Create(t.TempDir(), Options{Role: "worker", Owner: "w", Worker: 0})
	if err != nil {
		t.Fatal(err)
	}
	obs := &fanOutCounts{}
	next := &scriptedFanOut{}
	s, ok := NewTap(rec, obs).Stream(next).(engine.FanOutStream)
	if !ok {
		t.Fatal("the tapped stream lost engine.FanOutStream")
	}
	ctx := context.Background()
	pos := engine.Position{Type: engine.IterLatest}
	h, _ := s.Subscribe(ctx, "arn", "s", "sh0", pos)
	_, _ = s.NextEvent(ctx, h, time.Second)
	for _, end := range []error{
		fmt.Errorf("x: %w: %w", engine.ErrSubscriptionEnded, kinesisstream.ErrLifetimeOver),
		fmt.Errorf("x: %w: %w", engine.ErrSubscriptionEnded, engine.ErrResourceInUse),
		fmt.Errorf("x: %w: %w", engine.ErrSubscriptionEnded, errors.New("reset")),
	} {
		next.eventErr = end
		_, _ = s.NextEvent(ctx, h, time.Second)
	}
	next.subErr = fmt.Errorf("x: %w", engine.ErrResourceInUse)
	_, _ = s.Subscribe(ctx, "arn", "s", "sh0", pos)
	next.subErr = nil
	_, _ = s.Subscribe(ctx, "arn", "s", "sh0", pos)
	if fmt.Sprint(obs.subscribed) != "[ok/false in-use/false ok/true]" || fmt.Sprint(obs.ended) != "[lifetime taken-over error]" || obs.events != 1 {
		t.Fatalf("observed subscriptions %v, ends %v, %d events", obs.subscribed, obs.ended, obs.events)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range readBack(t, rec) {
		if r.Kind == trace.KindReply && r.Op == engine.OpSubscribe && r.Reason == "LATEST" && r.Key == "sh0" {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d subscription replies recorded, want 3", n)
	}
}
