// Package metrics exports a worker's Prometheus metrics, derived from the
// engine's trace events, the timed lease-table calls and the record
// processors (it implements history.Observer).
package metrics

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Metrics holds a worker's metrics on its own registry.
type Metrics struct {
	reg *prometheus.Registry

	held         prometheus.Gauge
	taken        *prometheus.CounterVec
	stolen       prometheus.Counter
	lost         *prometheus.CounterVec
	released     prometheus.Counter
	renew        prometheus.Histogram
	storeCalls   *prometheus.HistogramVec
	checkpoints  *prometheus.CounterVec
	records      prometheus.Counter
	batches      prometheus.Counter
	millisBehind *prometheus.GaugeVec
	fo           *fanOutMetrics

	mu   sync.Mutex
	keys map[string]engine.ShardRef // leases held
}

// New returns the metrics of a worker whose owner id is owner (a constant
// label).
func New(owner string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	cl := prometheus.Labels{"owner": owner}
	m := &Metrics{reg: reg, keys: map[string]engine.ShardRef{}}
	m.held = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shardlease_leases_held", Help: "Leases this worker holds.", ConstLabels: cl})
	m.taken = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardlease_leases_taken_total",
		Help: "Leases taken, by reason: unowned, expired, stolen (balancing), resumed (restart under the same owner id).", ConstLabels: cl}, []string{"reason"})
	m.stolen = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_leases_stolen_total", Help: "Leases this worker stole from another for balance.", ConstLabels: cl})
	m.lost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardlease_leases_lost_total",
		Help: "Leases lost, by cause: expired (no renewal applied in time), superseded (another worker changed the row), other.", ConstLabels: cl}, []string{"cause"})
	m.released = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_leases_released_total", Help: "Leases given up on purpose (shutdown, shard end).", ConstLabels: cl})
	m.renew = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shardlease_renew_duration_seconds",
		Help: "Latency of lease renewals (conditional writes to the lease table), any outcome.", ConstLabels: cl,
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}})
	m.storeCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardlease_store_call_duration_seconds",
		Help: "Latency of lease-table calls by operation, write class and outcome.", ConstLabels: cl,
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}, []string{"op", "write", "outcome"})
	m.checkpoints = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardlease_checkpoints_total",
		Help: "Checkpoint writes by result: written (landed in the table) or rejected (refused by the engine: lease lost, not acting, out of range).", ConstLabels: cl}, []string{"result"})
	m.records = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_records_processed_total", Help: "Records the processors handled without error.", ConstLabels: cl})
	m.batches = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardlease_batches_processed_total", Help: "Batches the processors handled without error.", ConstLabels: cl})
	m.millisBehind = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shardlease_millis_behind_latest",
		Help: "MillisBehindLatest of the last batch of each held shard.", ConstLabels: cl}, []string{"stream", "shard"})
	for _, c := range []prometheus.Collector{m.held, m.taken, m.stolen, m.lost, m.released, m.renew, m.storeCalls, m.checkpoints, m.records, m.batches, m.millisBehind} {
		f(c)
	}
	m.fo = newFanOutMetrics(cl)
	for _, c := range m.fo.collectors() {
		f(c)
	}
	// Show the zero series from the start.
	for _, r := range []string{"unowned", "expired", "stolen", "resumed"} {
		m.taken.WithLabelValues(r)
	}
	for _, c := range []string{"expired", "superseded", "other"} {
		m.lost.WithLabelValues(c)
	}
	m.checkpoints.WithLabelValues("written")
	m.checkpoints.WithLabelValues("rejected")
	return m
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// LostCause classifies the Reason of a TraceLeaseLost event.
func LostCause(reason string) string {
	switch {
	case strings.HasPrefix(reason, "expired"):
		return "expired"
	case strings.HasPrefix(reason, "condition failed"):
		return "superseded"
	}
	return "other"
}

// Trace implements history.Observer.
func (m *Metrics) Trace(e engine.TraceEvent) {
	switch e.Kind {
	case engine.TraceLeaseAcquired:
		m.taken.WithLabelValues(e.Reason).Inc()
		if e.Reason == "stolen" {
			m.stolen.Inc()
		}
		m.mu.Lock()
		m.keys[e.Key] = e.Shard
		m.held.Set(float64(len(m.keys)))
		m.mu.Unlock()
	case engine.TraceLeaseLost, engine.TraceLeaseReleased:
		if e.Kind == engine.TraceLeaseLost {
			m.lost.WithLabelValues(LostCause(e.Reason)).Inc()
		} else {
			m.released.Inc()
		}
		m.mu.Lock()
		if ref, ok := m.keys[e.Key]; ok {
			m.millisBehind.DeleteLabelValues(ref.Stream, ref.Shard)
		}
		delete(m.keys, e.Key)
		m.held.Set(float64(len(m.keys)))
		m.mu.Unlock()
	case engine.TraceCheckpointWritten:
		m.checkpoints.WithLabelValues("written").Inc()
	case engine.TraceCheckpointRejected:
		m.checkpoints.WithLabelValues("rejected").Inc()
	}
}

// StoreCall implements history.Observer.
func (m *Metrics) StoreCall(op engine.Op, class string, d time.Duration, outcome string) {
	m.storeCalls.WithLabelValues(op.String(), class, outcome).Observe(d.Seconds())
	if class == trace.WriteRenew {
		m.renew.Observe(d.Seconds())
	}
}

// Processed implements history.Observer.
func (m *Metrics) Processed(shard engine.ShardRef, records int, millisBehind int64) {
	m.records.Add(float64(records))
	m.batches.Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ref := range m.keys {
		if ref == shard {
			m.millisBehind.WithLabelValues(shard.Stream, shard.Shard).Set(float64(millisBehind))
			return
		}
	}
}
