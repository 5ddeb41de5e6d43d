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
)

// Options configure New.
type Options struct {
	// Owner is the worker's owner id, set as the constant label owner on
	// every metric ("": no owner label).
	Owner string
	// Registerer is where the metrics are registered. Nil: a registry of
	// their own, with the Go and process collectors, which Handler serves.
	Registerer prometheus.Registerer
	// LeaseDuration and SafetyMargin are the engine's (Config); zero: the
	// engine's defaults (engine.DefaultLeaseDuration, a tenth of the lease
	// duration). The fleet series judge by them whether a lease's owner
	// still acts.
	LeaseDuration, SafetyMargin time.Duration
}

// Metrics are one worker's metrics. Its wrappers and Tracer are safe for
// the concurrent use the engine makes of them.
type Metrics struct {
	reg      prometheus.Registerer
	gatherer prometheus.Gatherer

	held         prometheus.Gauge
	taken        *prometheus.CounterVec
	stolen       prometheus.Counter
	lost         *prometheus.CounterVec
	released     prometheus.Counter
	renew        prometheus.Histogram
	storeCalls   *prometheus.HistogramVec
	streamCalls  *prometheus.HistogramVec
	checkpoints  *prometheus.CounterVec
	records      prometheus.Counter
	batches      prometheus.Counter
	millisBehind *prometheus.GaugeVec
	malformed    prometheus.Gauge
	failed       prometheus.Counter
	inARow       *prometheus.GaugeVec
	skipped      *prometheus.CounterVec
	kplDropped   *prometheus.CounterVec
	renewFailed  *prometheus.CounterVec
	acquire      *prometheus.HistogramVec
	fo           *fanOutMetrics
	fleet        *fleet
	owner        string
	now          func() time.Time

	mu        sync.Mutex
	keys      map[string]engine.ShardRef // leases held
	classes   map[classKey][]string      // write class by (key, counter written), from TraceCallSent
	mayTakeAt map[string]time.Time       // lease key -> when this worker learned it may take it
	acquiring map[engine.ShardRef]acquiring
	iterators map[string]engine.ShardRef // shard iterator -> the shard it reads
}

var latency = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// acquireBuckets are the buckets of the acquire latency: from milliseconds
// (an assignment read, taken and read at once) to a minute.
var acquireBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New makes the metrics and registers them.
func New(o Options) (*Metrics, error) {
	m := &Metrics{reg: o.Registerer, owner: o.Owner, now: time.Now, keys: map[string]engine.ShardRef{}, classes: map[classKey][]string{},
		mayTakeAt: map[string]time.Time{}, acquiring: map[engine.ShardRef]acquiring{}, iterators: map[string]engine.ShardRef{}}
	lease, margin := o.LeaseDuration, o.SafetyMargin
	if lease <= 0 {
		lease = engine.DefaultLeaseDuration
	}
	if margin <= 0 {
		margin = lease / 10
	}
	if m.reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		m.reg, m.gatherer = r, r
	} else if g, ok := o.Registerer.(prometheus.Gatherer); ok {
		m.gatherer = g
	}
	var cl prometheus.Labels
	if o.Owner != "" {
		cl = prometheus.Labels{"owner": o.Owner}
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl})
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl}, labels)
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: cl})
	}
	gaugeVec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: cl}, labels)
	}
	histVec := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: cl, Buckets: latency}, labels)
	}
	m.held = gauge("shardlease_leases_held", "Leases this worker holds.")
	m.taken = counterVec("shardlease_leases_taken_total", "Leases taken, by reason: unowned, expired, stolen (balancing), resumed (restart under the same owner id).", "reason")
	m.stolen = counter("shardlease_leases_stolen_total", "Leases this worker stole from another for balance.")
	m.lost = counterVec("shardlease_leases_lost_total", "Leases lost, by cause: expired (no renewal applied in time), superseded (another worker changed the row), other.", "cause")
	m.released = counter("shardlease_leases_released_total", "Leases given up on purpose (shutdown, shard end).")
	m.renew = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shardlease_renew_duration_seconds",
		Help: "Latency of lease renewals (conditional writes to the lease table), any outcome.", ConstLabels: cl, Buckets: latency})
	m.storeCalls = histVec("shardlease_store_call_duration_seconds",
		"Latency of lease-table calls by operation, write class (take, renew, checkpoint, shard-end, release, create, delete; empty for reads) and outcome.", "op", "write", "outcome")
	m.streamCalls = histVec("shardlease_stream_call_duration_seconds",
		"Latency of Kinesis calls (DescribeStream, ListShards, GetShardIterator, GetRecords; with enhanced fan-out the consumer calls and SubscribeToShard) by operation and outcome.", "op", "outcome")
	m.checkpoints = counterVec("shardlease_checkpoints_total",
		"Checkpoint writes by result: written (landed in the table) or rejected (refused by the engine: lease lost, not acting, out of range).", "result")
	m.records = counter("shardlease_records_processed_total", "Records the processors handled without error.")
	m.batches = counter("shardlease_batches_processed_total", "Batches the processors handled without error.")
	m.millisBehind = gaugeVec("shardlease_millis_behind_latest", "MillisBehindLatest of the latest page (GetRecords) or event (enhanced fan-out) read from each held shard, with records or not.", "stream", "shard")
	m.malformed = gauge("shardlease_malformed_rows",
		"Rows of the lease table that are not leases (a missing or wrongly typed attribute), in the latest scan; they are skipped, never changed.")
	m.failed = counter("shardlease_batches_failed_total", "Deliveries of a batch that the processor failed (the batch is delivered again unless a failure policy skips it).")
	m.inARow = gaugeVec("shardlease_batch_failures_in_a_row",
		"Failed deliveries in a row of the batch each held shard is on (0 once a batch is processed or skipped): a shard stuck on a poison record shows here.", "stream", "shard")
	m.skipped = counterVec("shardlease_batches_skipped_total", "Failed batches a failure policy passed over, by decision: skipped, handed-off.", "decision")
	m.kplDropped = counterVec("shardlease_kpl_aggregates_dropped_total",
		"KPL-aggregated records read but not de-aggregated, by cause: corrupt (MD5 mismatch or malformed; delivered as read with DeliverCorruptAggregates, action=delivered) or hash-range (user records outside the shard's range, which the KPL puts again).",
		"cause", "action")
	m.renewFailed = counterVec("shardlease_renew_failures_total",
		"Lease renewals that did not succeed, by outcome (condition-failed: the lease was lost; throttled, timeout, error: the renewal may be retried until the lease expires). Renewals of any outcome are shardlease_renew_duration_seconds_count.", "outcome")
	m.acquire = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardlease_lease_acquire_duration_seconds", ConstLabels: cl, Buckets: acquireBuckets,
		Help: "Lease acquire latency: from when this worker may take a lease (it read the assignment naming it; taking leases itself, it sent the take of a free or expired lease) to its first delivery of the shard's records, or its first read of the shard that found none; by the take's reason (assigned, unowned, expired, stolen, resumed)."},
		[]string{"reason"})
	m.fo = newFanOutMetrics(cl)
	m.fleet = newFleet(cl, lease, margin, func() time.Time { return m.now() })
	for _, c := range append([]prometheus.Collector{m.held, m.taken, m.stolen, m.lost, m.released, m.renew, m.storeCalls, m.streamCalls,
		m.checkpoints, m.records, m.batches, m.millisBehind, m.malformed, m.failed, m.inARow, m.skipped, m.kplDropped,
		m.renewFailed, m.acquire, m.fleet}, m.fo.collectors()...) {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
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
	m.skipped.WithLabelValues("skipped")
	m.skipped.WithLabelValues("handed-off")
	m.kplDropped.WithLabelValues("corrupt", "dropped")
	m.kplDropped.WithLabelValues("hash-range", "dropped")
	for _, o := range []string{OutcomeCondition, OutcomeThrottled, OutcomeTimeout, OutcomeError} {
		m.renewFailed.WithLabelValues(o)
	}
	return m, nil
}

// Handler serves the metrics (and, with a registry of their own, the Go
// and process collectors) in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	if m.gatherer == nil {
		return promhttp.Handler()
	}
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// LostCause classifies the Reason of a TraceLeaseLost event: expired,
// superseded or other.
func LostCause(reason string) string {
	switch {
	case strings.HasPrefix(reason, "expired"):
		return "expired"
	case strings.HasPrefix(reason, "condition failed"):
		return "superseded"
	}
	return "other"
}

// Tracer returns the engine.Tracer to set as Config.Trace. It passes every
// event on to next (if not nil) after counting it.
func (m *Metrics) Tracer(next engine.Tracer) engine.Tracer {
	return func(e engine.TraceEvent) {
		m.trace(e)
		if next != nil {
			next(e)
		}
	}
}

func (m *Metrics) trace(e engine.TraceEvent) {
	if engine.IsReserved(e.Key) {
		// the assigner row is held like a lease, but it is not a shard's
		switch {
		case e.Key != engine.AssignerKey:
		case e.Kind == engine.TraceLeaseAcquired:
			m.fleet.setAssigner(true, m.owner, e.Previous)
		case e.Kind == engine.TraceLeaseLost, e.Kind == engine.TraceLeaseReleased:
			m.fleet.setAssigner(false, "", "")
		}
		return
	}
	switch e.Kind {
	case engine.TraceAssigned:
		if strings.HasSuffix(e.Reason, ": expired") {
			m.fleet.expiredMove(e.Key)
		}
	case engine.TraceCallSent:
		m.sent(e.Key, e.Counter, e.Reason)
		if e.Reason == "take" {
			m.mayTake(e.Key, m.now())
		}
	case engine.TraceLeaseAcquired:
		m.taken.WithLabelValues(e.Reason).Inc()
		if e.Reason == "stolen" {
			m.stolen.Inc()
		}
		m.mu.Lock()
		m.keys[e.Key] = e.Shard
		m.held.Set(float64(len(m.keys)))
		m.acquiredLocked(e, m.now())
		m.mu.Unlock()
	case engine.TraceDelivered:
		m.firstRead(e.Shard, m.now())
	case engine.TraceLeaseLost, engine.TraceLeaseReleased:
		if e.Kind == engine.TraceLeaseLost {
			m.lost.WithLabelValues(LostCause(e.Reason)).Inc()
		} else {
			m.released.Inc()
		}
		m.mu.Lock()
		if ref, ok := m.keys[e.Key]; ok {
			m.millisBehind.DeleteLabelValues(ref.Stream, ref.Shard)
			m.inARow.DeleteLabelValues(ref.Stream, ref.Shard)
			m.endAcquiringLocked(ref)
		}
		delete(m.keys, e.Key)
		m.held.Set(float64(len(m.keys)))
		m.mu.Unlock()
	case engine.TraceCheckpointWritten:
		m.checkpoints.WithLabelValues("written").Inc()
	case engine.TraceCheckpointRejected:
		m.checkpoints.WithLabelValues("rejected").Inc()
	case engine.TraceBatchFailed:
		m.failed.Inc()
		m.inARow.WithLabelValues(e.Shard.Stream, e.Shard.Shard).Set(float64(e.Count))
	case engine.TraceAggregateDropped:
		cause := "hash-range"
		if strings.HasPrefix(e.Reason, engine.DropCorrupt) {
			cause = "corrupt"
		}
		m.kplDropped.WithLabelValues(cause, "dropped").Inc()
	case engine.TraceAggregateUndecoded:
		m.kplDropped.WithLabelValues("corrupt", "delivered").Inc()
	case engine.TraceBatchSkipped:
		m.failed.Inc()
		m.skipped.WithLabelValues(e.Reason).Inc()
		m.inARow.WithLabelValues(e.Shard.Stream, e.Shard.Shard).Set(0)
	}
}
