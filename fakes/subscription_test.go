package fakes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

func fanOutFixture(t *testing.T, opts FanOutOptions) (*Kinesis, *ManualClock, string) {
	t.Helper()
	clock := NewManualClock(defaultStart)
	k := NewKinesis(KinesisOptions{Clock: clock, Seed: 3})
	k.SetFanOutOptions(opts)
	if err := k.CreateStream("s", 1); err != nil {
		t.Fatal(err)
	}
	c, err := k.RegisterConsumer(context.Background(), "s", "app")
	if err != nil {
		t.Fatal(err)
	}
	return k, clock, c.ARN
}

// The rules a simulator leans on beyond the contract suite: the rate limit,
// dropped subscriptions, readiness, deregistration, and injected faults.
func TestSubscriptionRules(t *testing.T) {
	ctx := context.Background()
	th := engine.Position{Type: engine.IterTrimHorizon}
	const shard = "shardId-000000000000"

	t.Run("rate_limit", func(t *testing.T) {
		k, clock, arn := fanOutFixture(t, FanOutOptions{})
		if _, err := k.Subscribe(ctx, arn, "s", shard, th); err != nil {
			t.Fatal(err)
		}
		clock.Advance(500 * time.Millisecond)
		if _, err := k.Subscribe(ctx, arn, "s", shard, th); !errors.Is(err, engine.ErrThrottled) {
			t.Fatalf("second Subscribe within a second = %v, want ErrThrottled", err)
		}
		clock.Advance(1100 * time.Millisecond) // a second after the refused call, 1.6 s after the success
		if _, err := k.Subscribe(ctx, arn, "s", shard, th); !errors.Is(err, engine.ErrResourceInUse) {
			t.Fatalf("Subscribe 1.6 s after a success = %v, want ErrResourceInUse", err)
		}
	})
	t.Run("dropped_and_readiness", func(t *testing.T) {
		k, clock, arn := fanOutFixture(t, FanOutOptions{Lifetime: time.Minute})
		h, err := k.Subscribe(ctx, arn, "s", shard, th)
		if err != nil {
			t.Fatal(err)
		}
		if ready, ends, ok := k.SubscriptionReady(h); ready || !ok || !ends.Equal(clock.Now().Add(time.Minute)) {
			t.Fatalf("ready %v ends %v ok %v, want an idle subscription ending in a minute", ready, ends, ok)
		}
		ev, err := k.NextEvent(ctx, h, 0)
		if err != nil || len(ev.Records) != 0 || ev.Continuation == "" || ev.End {
			t.Fatalf("idle event %+v, %v: want no records and a continuation", ev, err)
		}
		if _, _, err := k.PutRecord("s", "pk", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if ready, _, _ := k.SubscriptionReady(h); !ready {
			t.Fatal("not ready with a record waiting")
		}
		cause := errors.New("connection reset")
		if !k.DropSubscription(h, cause) || k.DropSubscription(h, cause) {
			t.Fatal("DropSubscription should report an open subscription once")
		}
		if _, err := k.NextEvent(ctx, h, 0); !errors.Is(err, engine.ErrSubscriptionEnded) || !errors.Is(err, cause) || errors.Is(err, engine.ErrResourceInUse) {
			t.Fatalf("NextEvent of a dropped subscription = %v", err)
		}
		if k.OpenSubscriptions() != 1 {
			t.Fatalf("%d subscriptions held, want the dropped one until Unsubscribe", k.OpenSubscriptions())
		}
		if err := k.Unsubscribe(ctx, h); err != nil || k.OpenSubscriptions() != 0 {
			t.Fatalf("Unsubscribe = %v, %d left", err, k.OpenSubscriptions())
		}
		if err := k.Unsubscribe(ctx, h); err != nil {
			t.Fatalf("Unsubscribe twice = %v", err)
		}
	})
	t.Run("deregistration_ends_subscriptions", func(t *testing.T) {
		k, _, arn := fanOutFixture(t, FanOutOptions{})
		h, err := k.Subscribe(ctx, arn, "s", shard, th)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.DeregisterConsumer(ctx, "s", "app"); err != nil {
			t.Fatal(err)
		}
		if _, err := k.NextEvent(ctx, h, 0); !errors.Is(err, engine.ErrSubscriptionEnded) {
			t.Fatalf("NextEvent after deregistration = %v", err)
		}
		if _, err := k.Subscribe(ctx, arn, "s", shard, th); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("Subscribe with a deregistered consumer = %v, want ErrNotFound", err)
		}
	})
	t.Run("creating_consumer_in_use", func(t *testing.T) {
		k, clock, arn := fanOutFixture(t, FanOutOptions{Activation: 10 * time.Second})
		if _, err := k.Subscribe(ctx, arn, "s", shard, th); !errors.Is(err, engine.ErrResourceInUse) {
			t.Fatalf("Subscribe with a CREATING consumer = %v, want ErrResourceInUse", err)
		}
		clock.Advance(10 * time.Second)
		if _, err := k.Subscribe(ctx, arn, "s", shard, th); err != nil {
			t.Fatalf("Subscribe once ACTIVE = %v", err)
		}
	})
	t.Run("faults_and_stats", func(t *testing.T) {
		k, _, arn := fanOutFixture(t, FanOutOptions{})
		k.FailNext(engine.OpSubscribe, engine.ErrResourceInUse)
		if _, err := k.Subscribe(ctx, arn, "s", shard, th); !errors.Is(err, engine.ErrResourceInUse) {
			t.Fatalf("injected ResourceInUse = %v", err)
		}
		var keys []string
		k.SetHook(func(op engine.Op, key string) error { keys = append(keys, op.String()+" "+key); return nil })
		h, err := k.Subscribe(ctx, arn, "s", shard, th)
		if err != nil {
			t.Fatalf("Subscribe after the injected fault (not counted as an attempt) = %v", err)
		}
		if _, err := k.NextEvent(ctx, h, 0); err != nil {
			t.Fatal(err)
		}
		want := []string{"SubscribeToShard s/" + shard, "NextEvent s/" + shard}
		if len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] {
			t.Fatalf("hook keys %v, want %v", keys, want)
		}
		if s := k.Stats().Of(engine.OpSubscribe); s.Calls != 2 || s.Injected != 1 {
			t.Fatalf("Subscribe stats %+v", s)
		}
	})
}
