package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// scriptedFanOut answers the fan-out calls from a script.
type scriptedFanOut struct {
	engine.Stream
	subErr error
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
	return engine.SubscriptionEvent{}, nil
}
func (s *scriptedFanOut) Unsubscribe(context.Context, string) error { return nil }

// A tapped fan-out stream stays a fan-out stream and records subscriptions
// as the replies that say where reading began.
func TestTapFanOut(t *testing.T) {
	rec, err := Create(t.TempDir(), Options{Role: "worker", Owner: "w", Worker: 0})
	if err != nil {
		t.Fatal(err)
	}
	next := &scriptedFanOut{}
	s, ok := NewTap(rec, nil).Stream(next).(engine.FanOutStream)
	if !ok {
		t.Fatal("the tapped stream lost engine.FanOutStream")
	}
	ctx := context.Background()
	pos := engine.Position{Type: engine.IterLatest}
	_, _ = s.Subscribe(ctx, "arn", "s", "sh0", pos)
	next.subErr = fmt.Errorf("x: %w", engine.ErrResourceInUse)
	_, _ = s.Subscribe(ctx, "arn", "s", "sh0", pos)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range readBack(t, rec) {
		if r.Kind == trace.KindReply && r.Op == engine.OpSubscribe && r.Reason == "LATEST" && r.Key == "sh0" {
			got = append(got, r.Outcome)
		}
	}
	if fmt.Sprint(got) != "[ok in-use]" {
		t.Fatalf("subscription replies recorded: %v, want [ok in-use]", got)
	}
}
