package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/internal/localaws"
)

func TestProduceAggregateFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-stream", "s", "-aggregate", "0"}, "-aggregate 0"},
		{[]string{"-stream", "s", "-aggregate", "20000", "-size", "100"}, "a Kinesis record holds"},
	} {
		var out, errb bytes.Buffer
		if code := runProduce(context.Background(), tc.args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("produce %v: exit %d, %q; want exit %d saying %q", tc.args, code, errb.String(), exitUsage, tc.want)
		}
	}
}

// collector is a processor that keeps every record it gets, and closes
// full once it has want of them.
type collector struct {
	mu   *sync.Mutex
	recs map[string][]engine.Record
	n    *int
	want int
	full chan struct{}
}

func (c collector) Initialize(context.Context, engine.InitInput) error { return nil }
func (c collector) ProcessRecords(_ context.Context, in engine.RecordsInput) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs[in.Shard.Shard] = append(c.recs[in.Shard.Shard], in.Records...)
	if *c.n < c.want && *c.n+len(in.Records) >= c.want {
		close(c.full)
	}
	*c.n += len(in.Records)
	return nil
}
func (c collector) ShardEnded(context.Context, engine.ShardEndedInput) error      { return nil }
func (c collector) ShutdownRequested(context.Context, engine.ShutdownInput) error { return nil }
func (c collector) LeaseLost(context.Context, engine.LeaseLostInput)              {}

// `live produce -aggregate 4` writes KPL aggregates that kinesalite stores
// and the engine de-aggregates: every user record reaches the processor
// once, in order, with its aggregate's sequence number and its index.
func TestProduceAggregatedReachesProcessor(t *testing.T) {
	kin := localaws.Kinesis(t)
	ctx := localaws.Context(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", kin.Config.Region)
	api := kinesis.NewFromConfig(kin.Config)
	stream := localaws.UniqueName(t, "kpl")
	if err := kinesisstream.CreateStream(ctx, api, stream, 2); err != nil {
		t.Fatal(err)
	}
	if err := kinesisstream.WaitActive(ctx, api, stream); err != nil {
		t.Fatal(err)
	}
	const users, per = 42, 4
	var out, errb bytes.Buffer
	args := []string{"-stream", stream, "-kinesis-endpoint", kin.Endpoint, "-aggregate", fmt.Sprint(per), "-count", fmt.Sprint(users),
		"-rate", "1000", "-tick", "10ms", "-log-level", "error"}
	if code := runProduce(ctx, args, &out, &errb); code != exitOK {
		t.Fatalf("produce: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("produced %d user records (aggregated by up to %d)", users, per)) {
		t.Errorf("produce said %q", out.String())
	}

	c := collector{mu: &sync.Mutex{}, recs: map[string][]engine.Record{}, n: new(int), want: users, full: make(chan struct{})}
	cons, err := engine.NewConsumer(engine.ConsumerOptions{
		Config:    engine.Config{Owner: "w", Streams: []engine.StreamConfig{{Name: stream, InitialPosition: engine.TrimHorizon}}, IdleTimeBetweenReads: 50 * time.Millisecond},
		Stream:    kinesisstream.New(api),
		Processor: func(engine.ShardRef) engine.Processor { return c },
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cons.Run(rctx) }()
	select {
	case <-c.full:
	case <-time.After(30 * time.Second): // a bound on a hang, not a timed assertion
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var seen []string
	perAggregate := map[string]int{}
	for shard, recs := range c.recs {
		for i, r := range recs {
			if !r.Aggregated || r.ExplicitHashKey == "" {
				t.Errorf("%s: record %d is not a user record of an aggregate: %+v", shard, i, r)
			}
			perAggregate[r.Sequence]++
			if i > 0 {
				prev := recs[i-1]
				next := engine.Checkpoint{Sequence: r.Sequence, SubSequence: r.SubSequence}
				if next.Compare(engine.Checkpoint{Sequence: prev.Sequence, SubSequence: prev.SubSequence}) <= 0 {
					t.Errorf("%s: %v after %s.%d", shard, next, prev.Sequence, prev.SubSequence)
				}
				if r.Sequence == prev.Sequence && r.SubSequence != prev.SubSequence+1 {
					t.Errorf("%s: sub-sequence %d after %d", shard, r.SubSequence, prev.SubSequence)
				}
			}
			seen = append(seen, strings.Fields(string(r.Data))[0])
		}
	}
	slices.Sort(seen)
	if len(seen) != users || len(slices.Compact(slices.Clone(seen))) != users {
		t.Errorf("delivered %d user records (%d distinct), want %d once each", len(seen), len(slices.Compact(slices.Clone(seen))), users)
	}
	// Each tick puts what the rate allows, so the last aggregate of a
	// tick may be short, as a KPL flushing on its timer.
	if len(perAggregate) < (users+per-1)/per || len(perAggregate) == users {
		t.Errorf("%d aggregates for %d user records by %d", len(perAggregate), users, per)
	}
	for seq, n := range perAggregate {
		if n > per {
			t.Errorf("aggregate %s holds %d user records, more than %d", seq, n, per)
		}
	}
}
