package streamtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// FanOutHarness drives an engine.FanOutStream for RunFanOut: the Harness's
// producer and administrator sides, plus the stream's fan-out timings and a
// way to let its time pass.
type FanOutHarness interface {
	Harness
	// FanOut returns the engine.FanOutStream under test.
	FanOut() engine.FanOutStream
	// Times returns the stream's fan-out timings.
	Times() FanOutTimes
	// Elapse lets d of the stream's time pass (a fake clock advances; a
	// server with an injected clock is moved on).
	Elapse(t *testing.T, d time.Duration)
}

// FanOutTimes are the timings of a stream's enhanced fan-out (Kinesis: 0-30
// s, 5 minutes, 5 s, 1 s).
type FanOutTimes struct {
	// Activation is how long a new consumer stays CREATING.
	Activation time.Duration
	// Lifetime is how long a subscription delivers events.
	Lifetime time.Duration
	// InUseWindow: a second subscription of a consumer and shard within it
	// of a successful one fails with engine.ErrResourceInUse.
	InUseWindow time.Duration
	// MinSubscribeInterval: the least time between two subscriptions of a
	// consumer and shard (sooner: engine.ErrThrottled).
	MinSubscribeInterval time.Duration
}

// eventWait is what the suite asks NextEvent to wait for an event; a
// stream answers as soon as one comes.
const eventWait = 3 * time.Second

// RunFanOut runs the enhanced fan-out contract suite against h: consumer
// registration, subscriptions from every position, continuation,
// ResourceInUse and take-over, the lifetime, the end of a closed shard with
// ChildShards, missing shards and consumers, and a slow reader that loses
// nothing.
func RunFanOut(t *testing.T, h FanOutHarness) {
	for _, tc := range fanOutCases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(&fsuite{suite: suite{t: t, h: h, s: h.Stream()}, fh: h, f: h.FanOut()})
		})
	}
}

type fsuite struct {
	suite
	fh FanOutHarness
	f  engine.FanOutStream
}

type fanOutCase struct {
	name string
	run  func(x *fsuite)
}

func (x *fsuite) sub(t *testing.T, f func(y *fsuite)) func(t *testing.T) {
	return func(t *testing.T) {
		f(&fsuite{suite: suite{t: t, h: x.h, s: x.s}, fh: x.fh, f: x.f})
	}
}

// consumer registers a consumer on stream and waits until it is ACTIVE.
func (x *fsuite) consumer(stream, name string) engine.StreamConsumer {
	x.t.Helper()
	ctx, cancel := x.ctx()
	defer cancel()
	c, err := x.f.RegisterConsumer(ctx, stream, name)
	if err != nil {
		x.t.Fatalf("RegisterConsumer(%s, %s): %v", stream, name, err)
	}
	if c.Status != engine.ConsumerActive {
		x.fh.Elapse(x.t, x.fh.Times().Activation)
		c = x.describe(stream, name)
	}
	if c.Status != engine.ConsumerActive || c.ARN == "" {
		x.t.Fatalf("consumer %+v after the activation time, want ACTIVE with an ARN", c)
	}
	return c
}

func (x *fsuite) describe(stream, name string) engine.StreamConsumer {
	x.t.Helper()
	ctx, cancel := x.ctx()
	defer cancel()
	c, err := x.f.DescribeConsumer(ctx, stream, name)
	if err != nil {
		x.t.Fatalf("DescribeConsumer(%s, %s): %v", stream, name, err)
	}
	return c
}

func (x *fsuite) subscribe(arn, stream, shard string, pos engine.Position) (string, error) {
	ctx, cancel := x.ctx()
	defer cancel()
	return x.f.Subscribe(ctx, arn, stream, shard, pos)
}

func (x *fsuite) mustSubscribe(arn, stream, shard string, pos engine.Position) string {
	x.t.Helper()
	h, err := x.subscribe(arn, stream, shard, pos)
	if err != nil {
		x.t.Fatalf("Subscribe(%s, %+v): %v", shard, pos, err)
	}
	if h == "" {
		x.t.Fatalf("Subscribe(%s, %+v) returned an empty handle", shard, pos)
	}
	return h
}

func (x *fsuite) next(h string) (engine.SubscriptionEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout+eventWait)
	defer cancel()
	return x.f.NextEvent(ctx, h, eventWait)
}

func (x *fsuite) unsubscribe(h string) {
	x.t.Helper()
	ctx, cancel := x.ctx()
	defer cancel()
	if err := x.f.Unsubscribe(ctx, h); err != nil {
		x.t.Fatalf("Unsubscribe(%s): %v", h, err)
	}
}

// readEvents reads events of h until n records have come (or, with
// toEnd, until the shard's end), checking each event's continuation. It
// returns the records and the last event.
func (x *fsuite) readEvents(h string, n int, toEnd bool) ([]engine.Record, engine.SubscriptionEvent) {
	x.t.Helper()
	var got []engine.Record
	var last engine.SubscriptionEvent
	for i := 0; toEnd || len(got) < n; i++ {
		if i == maxPolls {
			x.t.Fatalf("read %d of %d records in %d events (end: %v)", len(got), n, i, last.End)
		}
		ev, err := x.next(h)
		if err != nil {
			x.t.Fatalf("NextEvent after %d records: %v", len(got), err)
		}
		switch {
		case ev.End && ev.Continuation != "":
			x.t.Fatalf("the end event has a continuation %s", ev.Continuation)
		case !ev.End && len(ev.Records) > 0 && ev.Continuation == "":
			x.t.Fatalf("an event with %d records has no continuation", len(ev.Records))
		case len(ev.Records) > 0 && engine.CompareSequences(ev.Continuation, ev.Records[len(ev.Records)-1].Sequence) < 0 && !ev.End:
			x.t.Fatalf("continuation %s before the event's last record %s", ev.Continuation, ev.Records[len(ev.Records)-1].Sequence)
		case ev.MillisBehind < 0:
			x.t.Fatalf("MillisBehind %d", ev.MillisBehind)
		}
		got = append(got, ev.Records...)
		last = ev
		if ev.End {
			if !toEnd && len(got) < n {
				x.t.Fatalf("the shard ended after %d of %d records", len(got), n)
			}
			break
		}
	}
	if !toEnd && len(got) > n {
		x.t.Fatalf("read %d records, want %d", len(got), n)
	}
	return got, last
}

// wantEnded asserts that the next event of h fails with
// engine.ErrSubscriptionEnded, wrapping engine.ErrResourceInUse or not as
// inUse says.
func (x *fsuite) wantEnded(h string, inUse bool) {
	x.t.Helper()
	var err error
	for i := 0; i < maxPolls; i++ {
		var ev engine.SubscriptionEvent
		if ev, err = x.next(h); err != nil {
			break
		}
		if len(ev.Records) > 0 || ev.End {
			x.t.Fatalf("an ended subscription delivered %d records (end %v)", len(ev.Records), ev.End)
		}
	}
	if !errors.Is(err, engine.ErrSubscriptionEnded) || errors.Is(err, engine.ErrResourceInUse) != inUse {
		x.t.Fatalf("NextEvent of an ended subscription = %v; want one wrapping ErrSubscriptionEnded (and ErrResourceInUse: %v)", err, inUse)
	}
}

// quiet waits out the in-use window and the rate limit of a consumer and
// shard.
func (x *fsuite) quiet() {
	tm := x.fh.Times()
	x.fh.Elapse(x.t, max(tm.InUseWindow, tm.MinSubscribeInterval)+10*time.Millisecond)
}
