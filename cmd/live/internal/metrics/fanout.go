package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardlease/shardlease/engine"
)

// fanOutMetrics are the metrics of enhanced fan-out (history.FanOutObserver).
type fanOutMetrics struct {
	subscriptions *prometheus.CounterVec
	renewals      prometheus.Counter
	ends          *prometheus.CounterVec
	events        prometheus.Counter
}

func newFanOutMetrics(cl prometheus.Labels) *fanOutMetrics {
	f := &fanOutMetrics{
		subscriptions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardlease_subscriptions_total",
			Help: "SubscribeToShard calls (enhanced fan-out) by outcome: ok, in-use (ResourceInUse: another subscription of the consumer and shard less than 5 s old), throttled, not-found, timeout, error.", ConstLabels: cl}, []string{"outcome"}),
		renewals: prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_subscription_renewals_total",
			Help: "Successful SubscribeToShard calls for a shard this process had subscribed to before (a subscription renewed after its 5-minute lifetime, a take-over or an error).", ConstLabels: cl}),
		ends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardlease_subscription_ends_total",
			Help: "Subscriptions that ended while being read, by cause: lifetime (the 5 minutes are over), taken-over (a newer subscription of the consumer and shard), error.", ConstLabels: cl}, []string{"cause"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_subscription_events_total",
			Help: "SubscribeToShard events received, with or without records.", ConstLabels: cl}),
	}
	for _, o := range []string{"ok", "in-use", "throttled", "not-found", "timeout", "error"} {
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

// Subscribed implements history.FanOutObserver.
func (m *Metrics) Subscribed(shard engine.ShardRef, outcome string, renewal bool) {
	switch outcome {
	case "ok", "in-use", "throttled", "not-found", "timeout":
	default:
		outcome = "error"
	}
	m.fo.subscriptions.WithLabelValues(outcome).Inc()
	if renewal {
		m.fo.renewals.Inc()
	}
}

// SubscriptionEnded implements history.FanOutObserver.
func (m *Metrics) SubscriptionEnded(shard engine.ShardRef, cause string) {
	m.fo.ends.WithLabelValues(cause).Inc()
}

// Event implements history.FanOutObserver: it counts the event and sets
// the shard's MillisBehindLatest, also when the event brings no records.
func (m *Metrics) Event(shard engine.ShardRef, records int, millisBehind int64) {
	m.fo.events.Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ref := range m.keys {
		if ref == shard {
			m.millisBehind.WithLabelValues(shard.Stream, shard.Shard).Set(float64(millisBehind))
			return
		}
	}
}
