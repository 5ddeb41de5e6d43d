package kinesisstream_test

// The enhanced fan-out contract suite runs here through the real adapter
// (the SDK client, its event-stream decoding over HTTP/2 and TLS) against
// internal/efoserver, backed by the simulation's fake stream (always) and
// by kinesalite (when the local servers run).

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/engine/streamtest"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/internal/efoserver"
	"github.com/shardlease/shardlease/internal/localaws"
)

// serverClock is the efoserver's clock: it moves only when a test says.
type serverClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *serverClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *serverClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// serverTimes are the efoserver timings the suites run with: Kinesis's
// rules, and a consumer activation delay.
var serverTimes = streamtest.FanOutTimes{Activation: 2 * time.Second, Lifetime: 5 * time.Minute, InUseWindow: 5 * time.Second, MinSubscribeInterval: time.Second}

func serverOptions(clk *serverClock) efoserver.Options {
	return efoserver.Options{Now: clk.Now, Activation: serverTimes.Activation, Lifetime: serverTimes.Lifetime,
		InUseWindow: serverTimes.InUseWindow, MinSubscribeInterval: serverTimes.MinSubscribeInterval, Poll: 5 * time.Millisecond}
}

// clientFor returns a Kinesis client for srv: its HTTP/2 client, a region
// and dummy credentials, the SDK's retries at millisecond backoff.
func clientFor(srv *efoserver.Server) *kinesis.Client {
	cfg := localaws.FastRetries(aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		HTTPClient:   srv.Client,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "test"}, nil
		}),
	})
	return kinesis.NewFromConfig(cfg)
}

// fakeBacked is the FanOutHarness of the adapter on an efoserver backed by
// fakes.Kinesis. The fake is used under mu (the server holds it around
// its reads).
type fakeBacked struct {
	mu      sync.Mutex
	k       *fakes.Kinesis
	clock   *fakes.ManualClock
	srvClk  *serverClock
	srv     *efoserver.Server
	adapter *kinesisstream.Stream
	streams int
	puts    int
}

func newFakeBacked(t *testing.T) *fakeBacked {
	h := &fakeBacked{clock: fakes.NewManualClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		srvClk: &serverClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}}
	h.k = fakes.NewKinesis(fakes.KinesisOptions{Clock: h.clock})
	opts := serverOptions(h.srvClk)
	opts.Backend, opts.Lock = h.k, &h.mu
	h.srv = efoserver.New(t, opts)
	h.adapter = kinesisstream.New(clientFor(h.srv))
	t.Cleanup(func() { _ = h.adapter.Close() })
	return h
}

func (h *fakeBacked) Stream() engine.Stream         { return lockedStream{h} }
func (h *fakeBacked) FanOut() engine.FanOutStream   { return h.adapter }
func (h *fakeBacked) Times() streamtest.FanOutTimes { return serverTimes }
func (h *fakeBacked) Elapse(_ *testing.T, d time.Duration) {
	h.srvClk.advance(d)
	h.mu.Lock()
	h.clock.Advance(d)
	h.mu.Unlock()
}

func (h *fakeBacked) CreateStream(t *testing.T, shards int) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.streams++
	name := fmt.Sprintf("stream-%d", h.streams)
	if err := h.k.CreateStream(name, shards); err != nil {
		t.Fatal(err)
	}
	return name
}

func (h *fakeBacked) Put(t *testing.T, stream, hashKey string, data []byte) streamtest.Written {
	t.Helper()
	n, ok := new(big.Int).SetString(hashKey, 10)
	if !ok {
		t.Fatalf("bad hash key %q", hashKey)
	}
	lo := new(big.Int).And(n, new(big.Int).SetUint64(^uint64(0))).Uint64()
	hi := new(big.Int).Rsh(n, 64).Uint64()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.puts++
	h.clock.Advance(time.Millisecond)
	pk := fmt.Sprintf("pk-%d", h.puts)
	shard, seq, err := h.k.PutRecordWithHash(stream, pk, hi, lo, data)
	if err != nil {
		t.Fatal(err)
	}
	return streamtest.Written{PartitionKey: pk, Shard: shard, Sequence: seq}
}

func (h *fakeBacked) Split(t *testing.T, stream, shard, key string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.k.SplitShard(stream, shard, key); err != nil {
		t.Fatal(err)
	}
}

func (h *fakeBacked) Merge(t *testing.T, stream, shard, adjacent string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.k.MergeShards(stream, shard, adjacent); err != nil {
		t.Fatal(err)
	}
}

// lockedStream reads the fake under the harness's lock.
type lockedStream struct{ h *fakeBacked }

func (l lockedStream) ListShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.k.ListShards(ctx, stream)
}

func (l lockedStream) GetShardIterator(ctx context.Context, stream, shard string, pos engine.Position) (string, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.k.GetShardIterator(ctx, stream, shard, pos)
}

func (l lockedStream) DescribeStream(ctx context.Context, stream string) (engine.StreamInfo, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.k.DescribeStream(ctx, stream)
}

func (l lockedStream) GetRecords(ctx context.Context, it string, limit int) (engine.RecordsPage, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.k.GetRecords(ctx, it, limit)
}

// TestFanOutContractOnFake runs the fan-out contract through the adapter and
// the SDK against the event-stream server backed by the fake, over HTTP/2.
func TestFanOutContractOnFake(t *testing.T) {
	h := newFakeBacked(t)
	streamtest.RunFanOut(t, h)
	if p := h.srv.Protocols(); p["HTTP/2.0"] == 0 || len(p) != 1 {
		t.Fatalf("SubscribeToShard requests by protocol %v, want all over HTTP/2", p)
	}
}

// TestFanOutContractOnKinesalite runs the fan-out contract through the
// adapter against the event-stream server backed by kinesalite (every
// other call is forwarded to kinesalite), and the polling contract through
// the same server.
func TestFanOutContractOnKinesalite(t *testing.T) {
	c, tg := client(t)
	clk := &serverClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts := serverOptions(clk)
	opts.Backend, opts.Upstream = kinesisstream.New(c), tg.Endpoint
	srv := efoserver.New(t, opts)
	adapter := kinesisstream.New(clientFor(srv), kinesisstream.WithShardPageSize(2))
	t.Cleanup(func() { _ = adapter.Close() })
	h := &kinesaliteFanOut{harness: harness{c: c, stream: adapter}, clk: clk}
	t.Run("fan-out", func(t *testing.T) { streamtest.RunFanOut(t, h) })
	t.Run("polling_through_the_server", func(t *testing.T) { streamtest.Run(t, &h.harness) })
}

type kinesaliteFanOut struct {
	harness
	clk *serverClock
}

func (h *kinesaliteFanOut) FanOut() engine.FanOutStream          { return h.stream }
func (h *kinesaliteFanOut) Times() streamtest.FanOutTimes        { return serverTimes }
func (h *kinesaliteFanOut) Elapse(_ *testing.T, d time.Duration) { h.clk.advance(d) }

// TestSubscriptionErrors: what the event stream ends with is mapped to
// the engine's sentinels, and a refused SubscribeToShard too.
func TestSubscriptionErrors(t *testing.T) {
	h := newFakeBacked(t)
	stream := h.CreateStream(t, 1)
	const shard = "shardId-000000000000"
	s := h.adapter
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := s.EnsureConsumer(short, stream, "app")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		// The consumer stays CREATING until the server's clock moves.
		t.Fatalf("EnsureConsumer with the server clock still = %+v, %v; want it to wait for ACTIVE until the deadline", c, err)
	}
	h.Elapse(t, serverTimes.Activation)
	if c, err = s.EnsureConsumer(localaws.Context(t), stream, "app"); err != nil || c.Status != engine.ConsumerActive {
		t.Fatalf("EnsureConsumer = %+v, %v", c, err)
	}
	th := engine.Position{Type: engine.IterTrimHorizon}
	for _, tc := range []struct {
		exc   string
		inUse bool
	}{{"InternalFailureException", false}, {"ResourceInUseException", true}, {"", false}} {
		t.Run("ended_by_"+tc.exc, func(t *testing.T) {
			h.Elapse(t, serverTimes.InUseWindow)
			sub, err := s.Subscribe(localaws.Context(t), c.ARN, stream, shard, th)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.NextEvent(localaws.Context(t), sub, 10*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if n := h.srv.Drop(shard, tc.exc); n != 1 {
				t.Fatalf("dropped %d subscriptions", n)
			}
			var evErr error
			for i := 0; i < 100 && evErr == nil; i++ {
				_, evErr = s.NextEvent(localaws.Context(t), sub, time.Second)
			}
			if !errors.Is(evErr, engine.ErrSubscriptionEnded) || errors.Is(evErr, engine.ErrResourceInUse) != tc.inUse {
				t.Fatalf("NextEvent after the server ended the stream with %q = %v", tc.exc, evErr)
			}
			if s.Subscriptions() != 0 {
				t.Fatalf("%d subscriptions still held after the end", s.Subscriptions())
			}
		})
	}
	_, err = s.Subscribe(localaws.Context(t), c.ARN, stream, shard, th)
	if !errors.Is(err, engine.ErrThrottled) && !errors.Is(err, engine.ErrResourceInUse) {
		t.Fatalf("Subscribe at once again = %v, want ErrResourceInUse (or ErrThrottled)", err)
	}
	_, err = s.RegisterConsumer(localaws.Context(t), stream, "app")
	if !errors.Is(err, engine.ErrResourceInUse) {
		t.Fatalf("RegisterConsumer of a registered name = %v, want ErrResourceInUse", err)
	}
	_, err = s.DescribeConsumer(localaws.Context(t), "no-such-stream", "app")
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("DescribeConsumer on a missing stream = %v, want ErrNotFound", err)
	}
	// A call whose context ends before the subscription opens leaves none.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.Elapse(t, serverTimes.InUseWindow)
	if _, err := s.Subscribe(cctx, c.ARN, stream, shard, th); !errors.Is(err, context.Canceled) || s.Subscriptions() != 0 {
		t.Fatalf("Subscribe with a cancelled context = %v, %d subscriptions held", err, s.Subscriptions())
	}
}
