package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardlease/shardlease/engine"
)

// fanOutMetrics are the metrics of enhanced fan-out, fed by the wrapper
// Stream returns for an engine.FanOutStream.
type fanOutMetrics struct {
	subscriptions *prometheus.CounterVec
	renewals      prometheus.Counter
	ends          *prometheus.CounterVec
	events        prometheus.Counter

	mu     sync.Mutex
	seen   map[engine.ShardRef]bool   // shards subscribed to before
	shards map[string]engine.ShardRef // by subscription handle
}

func newFanOutMetrics(cl prometheus.Labels) *fanOutMetrics {
	f := &fanOutMetrics{seen: map[engine.ShardRef]bool{}, shards: map[string]engine.ShardRef{}}
	f.subscriptions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardlease_subscriptions_total", ConstLabels: cl,
		Help: "SubscribeToShard calls (enhanced fan-out) by outcome: ok, in-use (ResourceInUse: another subscription of the consumer and shard less than 5 s old, or a consumer not ACTIVE), throttled (LimitExceeded), not-found, timeout, error."},
		[]string{"outcome"})
	f.renewals = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_subscription_renewals_total", ConstLabels: cl,
		Help: "Successful SubscribeToShard calls for a shard this worker had subscribed to before: subscriptions renewed after their 5-minute lifetime, a take-over or an error."})
	f.ends = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardlease_subscription_ends_total", ConstLabels: cl,
		Help: "Subscriptions that ended while read, by cause: lifetime (the 5 minutes are over), taken-over (a newer subscription of the consumer and shard), error."},
		[]string{"cause"})
	f.events = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_subscription_events_total", ConstLabels: cl,
		Help: "SubscribeToShard events received, with or without records."})
	for _, o := range []string{OutcomeOK, OutcomeInUse, OutcomeThrottled, OutcomeNotFound, OutcomeTimeout, OutcomeError} {
		f.subscriptions.WithLabelValues(o)
	}
	for _, c := range []string{"lifetime", "taken-over", "error"} {
		f.ends.WithLabelValues(c)
	}
	return f
}

func (f *fanOutMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.subscriptions, f.renewals, f.ends, f.events}
}

// fanOutStream is the wrapper of a stream with enhanced fan-out: it stays
// an engine.FanOutStream.
type fanOutStream struct {
	*stream
	fo engine.FanOutStream
}

func (s *fanOutStream) DescribeConsumer(ctx context.Context, name, consumer string) (engine.StreamConsumer, error) {
	start := time.Now()
	c, err := s.fo.DescribeConsumer(ctx, name, consumer)
	s.observe(engine.OpDescribeConsumer, start, err)
	return c, err
}

func (s *fanOutStream) RegisterConsumer(ctx context.Context, name, consumer string) (engine.StreamConsumer, error) {
	start := time.Now()
	c, err := s.fo.RegisterConsumer(ctx, name, consumer)
	s.observe(engine.OpRegisterConsumer, start, err)
	return c, err
}

func (s *fanOutStream) DeregisterConsumer(ctx context.Context, name, consumer string) error {
	start := time.Now()
	err := s.fo.DeregisterConsumer(ctx, name, consumer)
	s.observe(engine.OpDeregisterConsumer, start, err)
	return err
}

func (s *fanOutStream) Subscribe(ctx context.Context, arn, name, shard string, pos engine.Position) (string, error) {
	start := time.Now()
	h, err := s.fo.Subscribe(ctx, arn, name, shard, pos)
	s.observe(engine.OpSubscribe, start, err)
	f, ref := s.m.fo, engine.ShardRef{Stream: name, Shard: shard}
	f.subscriptions.WithLabelValues(Outcome(err)).Inc()
	if err == nil {
		f.mu.Lock()
		renewal := f.seen[ref]
		f.seen[ref] = true
		f.shards[h] = ref
		f.mu.Unlock()
		if renewal {
			f.renewals.Inc()
		}
	}
	return h, err
}

// NextEvent counts events and ends, and sets the shard's
// MillisBehindLatest from every event, with records or not. Its duration is
// a wait for the service to push, not a latency: it is not timed.
func (s *fanOutStream) NextEvent(ctx context.Context, h string, wait time.Duration) (engine.SubscriptionEvent, error) {
	ev, err := s.fo.NextEvent(ctx, h, wait)
	f := s.m.fo
	f.mu.Lock()
	ref, ok := f.shards[h]
	f.mu.Unlock()
	switch {
	case !ok:
	case err == nil && (len(ev.Records) > 0 || ev.Continuation != "" || ev.End):
		f.events.Inc()
		s.m.setMillisBehind(ref, ev.MillisBehind)
		if len(ev.Records) == 0 {
			s.m.firstRead(ref, s.m.now())
		}
	case errors.Is(err, engine.ErrResourceInUse):
		f.ends.WithLabelValues("taken-over").Inc()
	case errors.Is(err, engine.ErrSubscriptionExpired):
		f.ends.WithLabelValues("lifetime").Inc()
	case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		f.ends.WithLabelValues("error").Inc()
	}
	return ev, err
}

func (s *fanOutStream) Unsubscribe(ctx context.Context, h string) error {
	f := s.m.fo
	f.mu.Lock()
	delete(f.shards, h)
	f.mu.Unlock()
	return s.fo.Unsubscribe(ctx, h)
}

// setMillisBehind sets the MillisBehindLatest of a held shard.
func (m *Metrics) setMillisBehind(ref engine.ShardRef, ms int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.keys {
		if r == ref {
			m.millisBehind.WithLabelValues(ref.Stream, ref.Shard).Set(float64(ms))
			return
		}
	}
}
