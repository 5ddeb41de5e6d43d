package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// lockedFanOut is a lockedStream with tStream's fan-out, whose NextEvent
// waits, as a real subscription does, until records come or wait passes on
// the mock clock.
type lockedFanOut struct {
	lockedStream
	clk    *clock.Mock
	notify chan struct{}
}

func newLockedFanOut(shards int, clk *clock.Mock) *lockedFanOut {
	return &lockedFanOut{lockedStream: lockedStream{s: newTStream(shards)}, clk: clk, notify: make(chan struct{})}
}

var _ FanOutStream = (*lockedFanOut)(nil)

func (l *lockedFanOut) put(shard string, n int) []string {
	seqs := l.lockedStream.put(shard, n)
	l.mu.Lock()
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
	return seqs
}

func (l *lockedFanOut) DescribeConsumer(ctx context.Context, stream, name string) (StreamConsumer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.DescribeConsumer(ctx, stream, name)
}

func (l *lockedFanOut) RegisterConsumer(ctx context.Context, stream, name string) (StreamConsumer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.RegisterConsumer(ctx, stream, name)
}

func (l *lockedFanOut) DeregisterConsumer(ctx context.Context, stream, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.DeregisterConsumer(ctx, stream, name)
}

func (l *lockedFanOut) Subscribe(ctx context.Context, arn, stream, shard string, pos Position) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Subscribe(ctx, arn, stream, shard, pos)
}

func (l *lockedFanOut) Unsubscribe(ctx context.Context, h string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Unsubscribe(ctx, h)
}

func (l *lockedFanOut) NextEvent(ctx context.Context, h string, wait time.Duration) (SubscriptionEvent, error) {
	timeout := l.clk.After(wait)
	for {
		l.mu.Lock()
		ev, err := l.s.NextEvent(ctx, h, wait)
		notify := l.notify
		l.mu.Unlock()
		if err != nil || len(ev.Records) > 0 || ev.End {
			return ev, err
		}
		select {
		case <-notify:
		case <-timeout:
			return SubscriptionEvent{}, nil
		case <-ctx.Done():
			return SubscriptionEvent{}, ctx.Err()
		}
	}
}

// The driver runs the fan-out path end to end, and a subscription's wait
// takes none of the stream-call slots: with a single slot, four held shards
// all get their records promptly although each has a NextEvent waiting.
func TestConsumerFanOut(t *testing.T) {
	clk := clock.NewMock()
	store := NewMemStore()
	stream := newLockedFanOut(4, clk)
	for i := 0; i < 4; i++ {
		stream.put(shardKey(i), 2)
	}
	rec := newRecorder()
	c, err := NewConsumer(ConsumerOptions{
		Config: Config{Owner: "A", Streams: []StreamConfig{{Name: "s", InitialPosition: TrimHorizon}},
			Consumer: FanOut, ConsumerName: "app"},
		Store: store, Stream: stream, Processor: rec.factory, Clock: clk, MaxStreamCalls: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &running{cancel: cancel, err: make(chan error, 1)}
	go func() { run.err <- c.Run(ctx) }()
	advance(t, clk, time.Minute, "first records", func() bool { return rec.total() == 8 })
	// Every shard has a NextEvent waiting (up to EventWait) by now; a
	// record on one of them must not wait for another's wait to end.
	for i := 0; i < 4; i++ {
		stream.put(shardKey(i), 1)
		advance(t, clk, 2*time.Second, "a record pushed to "+shardKey(i)+" (a waiting NextEvent must not hold a stream slot)",
			func() bool { return rec.total() == 9+i })
	}
	if err := run.stop(t, clk); err != nil {
		t.Fatalf("Run: %v", err)
	}
	l, _ := store.ListLeases(context.Background(), true)
	for _, row := range l.Leases {
		if row.Owner != "" || row.Checkpoint.IsStart() {
			t.Errorf("row %v after shutdown: want released and checkpointed", row)
		}
	}
}

// A FanOut consumer needs a stream that can subscribe.
func TestConsumerFanOutNeedsFanOutStream(t *testing.T) {
	_, err := NewConsumer(ConsumerOptions{
		Config: Config{Owner: "A", Streams: []StreamConfig{{Name: "s"}}, Consumer: FanOut, ConsumerName: "app"},
		Stream: &lockedStream{s: newTStream(1)}, Processor: newRecorder().factory,
	})
	if err == nil || !strings.Contains(err.Error(), "FanOutStream") {
		t.Fatalf("NewConsumer = %v, want an error naming engine.FanOutStream", err)
	}
}
