package fakes_test

// The engine's contract suites (engine/storetest, engine/streamtest) run
// here against the fakes, as they run against dynalite and kinesalite in
// engine/dynamostore and engine/kinesisstream: the simulation's fakes and
// the production adapters answer the engine alike.

import (
	"context"
	"crypto/md5"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/storetest"
	"github.com/shardlease/shardlease/engine/streamtest"
	"github.com/shardlease/shardlease/fakes"
)

func TestLeaseTableContract(t *testing.T) {
	malform := storetest.WithMalformed(func(t *testing.T, s engine.LeaseStore, key string) {
		s.(*fakes.LeaseTable).InjectMalformed(key, "attribute leaseCounter: want type N, got S")
	})
	for _, tc := range []struct {
		name string
		opts fakes.LeaseTableOptions
	}{
		{"strongly_consistent", fakes.LeaseTableOptions{}},
		{"stale_lag", fakes.LeaseTableOptions{StaleLag: 5 * time.Second, Seed: 7}},
		// the table of the simulator's etcd worlds (sim/run.go): the watch
		// log kept, serializable scans lagging; etcdstore runs the suite
		// against a real cluster
		{"etcd_watch_log", fakes.LeaseTableOptions{Watch: true, StaleLag: 2 * time.Second, Seed: 11}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) engine.LeaseStore { return fakes.NewLeaseTable(tc.opts) }, malform)
		})
	}
}

func TestKinesisContract(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      fakes.KinesisOptions
		generated bool
	}{
		{"default", fakes.KinesisOptions{}, false},
		{"omit_child_shards", fakes.KinesisOptions{OmitChildShards: true}, false},
		{"separate_end_page", fakes.KinesisOptions{SeparateEndPage: true}, false},
		// a generated stream at rate 0 holds the records put explicitly
		// only, each in a segment of its own, numbered by its shard
		{"generated_stream", fakes.KinesisOptions{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakes.NewManualClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			tc.opts.Clock = clock
			streamtest.Run(t, &kinesisHarness{k: fakes.NewKinesis(tc.opts), clock: clock, generated: tc.generated})
		})
	}
}

// kinesisHarness drives fakes.Kinesis for streamtest. The fake routes
// records by the MD5 of their partition key only, so Put searches for a
// partition key that lands on the wanted shard.
type kinesisHarness struct {
	k         *fakes.Kinesis
	clock     *fakes.ManualClock
	streams   int
	puts      int
	generated bool // streams made by CreateGeneratedStream (at rate 0)
}

var _ streamtest.Expirer = (*kinesisHarness)(nil)

func (h *kinesisHarness) Stream() engine.Stream { return h.k }

func (h *kinesisHarness) CreateStream(t *testing.T, shards int) string {
	t.Helper()
	h.streams++
	name := fmt.Sprintf("stream-%d", h.streams)
	create := h.k.CreateStream
	if h.generated {
		create = func(name string, shards int) error {
			return h.k.CreateGeneratedStream(name, shards, fakes.GeneratedRecords{})
		}
	}
	if err := create(name, shards); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	return name
}

func (h *kinesisHarness) Put(t *testing.T, stream, hashKey string, data []byte) streamtest.Written {
	t.Helper()
	want, ok := new(big.Int).SetString(hashKey, 10)
	if !ok {
		t.Fatalf("bad hash key %q", hashKey)
	}
	shards, err := h.k.ListShards(context.Background(), stream)
	if err != nil {
		t.Fatalf("ListShards: %v", err)
	}
	var lo, hi *big.Int
	for _, sh := range shards {
		a, _ := new(big.Int).SetString(sh.StartingHashKey, 10)
		b, _ := new(big.Int).SetString(sh.EndingHashKey, 10)
		if !sh.Closed() && a.Cmp(want) <= 0 && want.Cmp(b) <= 0 {
			lo, hi = a, b
		}
	}
	if lo == nil {
		t.Fatalf("no open shard of %s holds hash key %s", stream, hashKey)
	}
	h.puts++
	for i := 0; i < 1<<20; i++ {
		pk := fmt.Sprintf("pk-%d-%d", h.puts, i)
		sum := md5.Sum([]byte(pk))
		if hk := new(big.Int).SetBytes(sum[:]); lo.Cmp(hk) <= 0 && hk.Cmp(hi) <= 0 {
			h.clock.Advance(time.Millisecond) // later records arrive later
			shard, seq, err := h.k.PutRecord(stream, pk, data)
			if err != nil {
				t.Fatalf("PutRecord: %v", err)
			}
			return streamtest.Written{PartitionKey: pk, Shard: shard, Sequence: seq}
		}
	}
	t.Fatalf("no partition key found for hash range %s..%s", lo, hi)
	return streamtest.Written{}
}

func (h *kinesisHarness) Split(t *testing.T, stream, shard, newStartingHashKey string) {
	t.Helper()
	if _, err := h.k.SplitShard(stream, shard, newStartingHashKey); err != nil {
		t.Fatalf("SplitShard: %v", err)
	}
}

func (h *kinesisHarness) Merge(t *testing.T, stream, shard, adjacent string) {
	t.Helper()
	if _, err := h.k.MergeShards(stream, shard, adjacent); err != nil {
		t.Fatalf("MergeShards: %v", err)
	}
}

func (h *kinesisHarness) ExpireIterators(t *testing.T) { h.k.ExpireIterators() }

// TestKinesisFanOutContract runs the enhanced fan-out contract suite
// against the fake's consumers and subscriptions, with Kinesis's timings
// and with a consumer activation delay.
func TestKinesisFanOutContract(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      fakes.FanOutOptions
		generated bool
	}{
		{"service_timings", fakes.FanOutOptions{}, false},
		{"slow_activation_small_events", fakes.FanOutOptions{Activation: 20 * time.Second, MaxEventRecords: 3}, false},
		{"generated_stream", fakes.FanOutOptions{MaxEventRecords: 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakes.NewManualClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			k := fakes.NewKinesis(fakes.KinesisOptions{Clock: clock})
			k.SetFanOutOptions(tc.opts)
			streamtest.RunFanOut(t, &fanOutHarness{kinesisHarness: kinesisHarness{k: k, clock: clock, generated: tc.generated}, opts: tc.opts})
			if n := k.OpenSubscriptions(); n == 0 {
				t.Fatal("no subscription left open: the suite gives some up, not all")
			}
		})
	}
}

type fanOutHarness struct {
	kinesisHarness
	opts fakes.FanOutOptions
}

func (h *fanOutHarness) FanOut() engine.FanOutStream { return h.k }

func (h *fanOutHarness) Times() streamtest.FanOutTimes {
	return streamtest.FanOutTimes{Activation: h.opts.Activation, Lifetime: fakes.DefaultSubscriptionLifetime,
		InUseWindow: fakes.DefaultInUseWindow, MinSubscribeInterval: time.Second}
}

func (h *fanOutHarness) Elapse(t *testing.T, d time.Duration) { h.clock.Advance(d) }
