package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// World is the drawn configuration of one run.
type World struct {
	Seed           uint64
	Workers        int
	Shards         int
	Chaos, Quiet   time.Duration
	Faults         []string // the fault classes in force during the chaos phase
	Engine         EngineParams
	Rates          Rates
	TableLatency   Latency
	StreamLatency  Latency
	CallTimeout    time.Duration
	Retention      time.Duration
	PutRate        float64       // records per second per initial shard
	DriftBound     float64       // the drift the workers' clocks actually have, at most
	CheckpointPace time.Duration // the processor checkpoints at least this often
	Bound          time.Duration // liveness bound after healing
	Balance        bool          // L1 checks balance
	// CheckpointRecords makes the processor checkpoint every that many
	// records (Options.CheckpointEvery) instead of at a drawn share of
	// its batches; 0: the drawn share.
	CheckpointRecords int
	// SettleMin and SettleFor end a drawn healing phase early (see
	// settle.go): it lasts at least SettleMin and ends once the world has
	// looked settled for SettleFor, at the latest after Quiet. Zero: the
	// phase is Quiet long (as when the options set it).
	SettleMin, SettleFor time.Duration
	// SkipAfter is the processors' failure policy (as an
	// engine.FailurePolicy with MaxAttempts SkipAfter that skips): a batch
	// is skipped when its SkipAfter-th delivery in a row fails; 0: none,
	// failed batches are retried forever. Set, not drawn (no draw shifts
	// the other parameters): 3 on odd seeds.
	SkipAfter int
	FanOut    FanOutWorld // enhanced fan-out (see fanout.go)
	// Assignment is how leases reach the workers (see assignment.go).
	Assignment AssignmentWorld
	KPL        KPLWorld // KPL-aggregated records (see kpl.go)
	// Boundary is the world's boundary seeking (see boundary.go).
	Boundary BoundaryWorld
	// Aim is the world's faults aimed at operations (see aim.go).
	Aim AimWorld
	// Target is the world's targeted fault (see targeted.go).
	Target TargetWorld
	// Config is the world's draws of the engine options EngineParams
	// does not hold (see config.go).
	Config ConfigWorld
	// Combo is the combination of rare things the world drew on purpose
	// (see combos.go).
	Combo ComboWorld
	// Etcd is the world's etcd store, if its lease table is one (etcd.go).
	Etcd EtcdWorld
	// Renewal is how the world's workers renew (see renewal.go).
	Renewal RenewalWorld
	// switchesMode: a scripted action switches workers between the ways
	// of taking leases (ActSwitchMode), so the fleet may mix them.
	switchesMode bool
}

// EngineParams are the drawn engine settings (zero: the engine default).
type EngineParams struct {
	LeaseDuration, RenewInterval, SafetyMargin time.Duration
	MaxClockDrift                              float64
	TakeInterval, ShardSyncInterval            time.Duration
	MaxLeasesForWorker, MaxLeasesToStealAtOnce int
	GetRecordsLimit                            int
	IdleTimeBetweenReads                       time.Duration
	ConsistentTakeScans                        bool
}

// Rates are the per-call fault rates of the chaos phase.
type Rates struct {
	RequestLoss, ReplyLoss, Dup            float64
	TableThrottle, TableTransient          float64
	StaleRead                              float64
	StaleLag                               time.Duration
	StreamThrottle, ExpiredIterator        float64
	SlowProcessor, FailedBatch, Checkpoint float64
}

// Latency is a link's latency distribution: Base plus an exponential tail
// of mean Tail, and a spike of 10x with probability Spike.
type Latency struct {
	Base, Tail time.Duration
	Spike      float64
}

func (l Latency) draw(r rng) time.Duration {
	d := l.Base + r.exp(l.Tail)
	if r.chance(l.Spike) {
		d *= 10
	}
	return d
}

func (w World) String() string {
	e := w.Engine
	return fmt.Sprintf("%d workers, %d shards, chaos %v + quiet %v, faults [%s]; engine lease %v renew %v margin %v drift %.4f take %v sync %v maxLeases %d steal %d limit %d idle %v consistentScans %v; "+
		"rates %+v; table latency %v+%v, stream latency %v+%v, call timeout %v, retention %v, put rate %.2f/s/shard, clock drift ±%.4f, checkpoint pace %v, liveness bound %v, balance %v; reading %v",
		w.Workers, w.Shards, w.Chaos, w.Quiet, strings.Join(w.Faults, ","), e.LeaseDuration, e.RenewInterval, e.SafetyMargin, e.MaxClockDrift,
		e.TakeInterval, e.ShardSyncInterval, e.MaxLeasesForWorker, e.MaxLeasesToStealAtOnce, e.GetRecordsLimit, e.IdleTimeBetweenReads, e.ConsistentTakeScans,
		w.Rates, w.TableLatency.Base, w.TableLatency.Tail, w.StreamLatency.Base, w.StreamLatency.Tail, w.CallTimeout, w.Retention, w.PutRate, w.DriftBound, w.CheckpointPace, w.Bound, w.Balance, w.FanOut) +
		w.policyString() + w.Assignment.String() + w.KPL.String() + w.Boundary.String() + w.Aim.String() + w.Target.String() + w.Config.String() + w.Combo.String() + w.Etcd.String() + w.Renewal.String() + w.settleString() + w.cadenceString()
}

func (w World) cadenceString() string {
	if w.CheckpointRecords <= 0 {
		return ""
	}
	return fmt.Sprintf("; the processor checkpoints every %d records", w.CheckpointRecords)
}

func (w World) settleString() string {
	if w.SettleMin <= 0 {
		return ""
	}
	return fmt.Sprintf("; the healing phase ends after %v once settled for %v", w.SettleMin, w.SettleFor)
}

func (w World) policyString() string {
	if w.SkipAfter == 0 {
		return ""
	}
	return fmt.Sprintf(", a batch skipped after %d failed deliveries in a row", w.SkipAfter)
}

func (w World) has(class string) bool {
	for _, f := range w.Faults {
		if f == class {
			return true
		}
	}
	return false
}

// engineConfig returns the engine configuration for one process.
func (w World) engineConfig(owner string, seed uint64) engine.Config {
	// (Renewal is left to the slot, configure: probes of the world's
	// timing take probeConfig)
	e := w.Engine
	c := engine.Config{
		Owner:                  owner,
		Streams:                w.streamsOf(),
		LeaseDuration:          e.LeaseDuration,
		RenewInterval:          e.RenewInterval,
		SafetyMargin:           e.SafetyMargin,
		MaxClockDrift:          e.MaxClockDrift,
		TakeInterval:           e.TakeInterval,
		ShardSyncInterval:      e.ShardSyncInterval,
		MaxLeasesForWorker:     e.MaxLeasesForWorker,
		MaxLeasesToStealAtOnce: e.MaxLeasesToStealAtOnce,
		GetRecordsLimit:        e.GetRecordsLimit,
		IdleTimeBetweenReads:   e.IdleTimeBetweenReads,
		ConsistentTakeScans:    e.ConsistentTakeScans,
		Seed:                   seed,
	}
	if w.FanOut.On {
		c.Consumer, c.ConsumerName = engine.FanOut, consumerName
	}
	if w.Config.Multi.On {
		c.MultiStream, c.LegacyStream = true, w.keyFormat().LegacyStream
	}
	w.Config.apply(&c)
	c.WatchPending = w.Etcd.On
	return c
}

// probeConfig is the engine configuration of the world's timing: a
// worker renewing per lease (the timing of a session-renewal fleet is
// adjusted from it: World.timing).
func (w World) probeConfig() engine.Config {
	c := w.engineConfig("probe", 1)
	c.Renewal = engine.RenewalPerLease
	return c
}

const streamName = "sim-stream"

// drawWorld draws the configuration of a run from its seed and options.
func drawWorld(o Options) (World, error) {
	r := newRNG(o.Seed, streamConfig)
	w := World{Seed: o.Seed}
	for i, d := range o.Drifts {
		if !(d >= -1 && d <= 1) {
			return w, fmt.Errorf("sim: Drifts[%d] = %v: a pinned drift is a fraction of the drift bound, in [-1, 1]", i, d)
		}
	}
	for _, a := range o.Actions {
		w.switchesMode = w.switchesMode || a.Kind == ActSwitchMode
	}
	w.Workers = o.Workers
	if w.Workers <= 0 {
		w.Workers = r.intIn(1, 8)
	}
	w.Shards = o.Shards
	if w.Shards <= 0 {
		w.Shards = r.intIn(1, 24)
	}
	w.Chaos = o.Chaos
	if w.Chaos <= 0 {
		w.Chaos = r.between(60*time.Second, 180*time.Second).Round(time.Second)
	}
	swarm := strings.TrimSpace(o.Faults) == "" || strings.TrimSpace(o.Faults) == "swarm"
	cr, err := w.drawCombo(o, swarm)
	if err != nil {
		return w, err
	}
	combo := w.combo()

	// engine configuration
	e := &w.Engine
	e.LeaseDuration = r.logUniform(3*time.Second, 20*time.Second).Round(100 * time.Millisecond)
	e.RenewInterval = (e.LeaseDuration / time.Duration(r.intIn(3, 6))).Truncate(10 * time.Millisecond)
	e.MaxClockDrift = math.Round(r.rangeF(0.001, 0.05)*1e4) / 1e4
	min := engine.MinSafetyMargin(e.LeaseDuration, e.MaxClockDrift)
	if r.chance(0.5) {
		hi := (e.LeaseDuration - e.RenewInterval) / 2
		e.SafetyMargin = r.between(min, hi).Round(time.Millisecond)
		if e.SafetyMargin < min {
			e.SafetyMargin = min
		}
	}
	if r.chance(0.5) {
		e.TakeInterval = time.Duration(float64(e.LeaseDuration) * r.rangeF(0.5, 1.5)).Round(100 * time.Millisecond)
	}
	if r.chance(0.5) {
		e.ShardSyncInterval = r.between(3*time.Second, 30*time.Second).Round(time.Second)
	}
	switch r.IntN(6) {
	case 0:
		e.MaxLeasesToStealAtOnce = -1
	case 1:
		e.MaxLeasesToStealAtOnce = 2
	}
	if r.chance(0.1) {
		// room for every shard a run can open (splits included) on the
		// initial workers, which scale-in never goes below with a cap
		e.MaxLeasesForWorker = (2*w.Shards+4+w.Workers-1)/w.Workers + 1
	}
	e.GetRecordsLimit = []int{10, 50, 100, 1000, 10000}[r.IntN(5)]
	putRate := r.rangeF(0.1, 5)
	e.IdleTimeBetweenReads = r.between(100*time.Millisecond, 1500*time.Millisecond).Round(10 * time.Millisecond)
	e.ConsistentTakeScans = r.chance(0.3)
	if swarm && newRNG(o.Seed, streamDefaults).chance(shareDefaults) && o.Options != "off" {
		// the engine's own defaults for the timings it documents one of
		// (config.go)
		e.LeaseDuration, e.RenewInterval, e.SafetyMargin, e.MaxClockDrift = 0, 0, 0, 0
		e.TakeInterval, e.ShardSyncInterval, e.IdleTimeBetweenReads = 0, 0, 0
	}
	if combo != nil && combo.engine != nil {
		combo.engine(&w, e, cr)
	}
	if o.Engine != nil {
		c := w.engineConfig("probe", 1)
		o.Engine(&c)
		*e = EngineParams{c.LeaseDuration, c.RenewInterval, c.SafetyMargin, c.MaxClockDrift, c.TakeInterval, c.ShardSyncInterval,
			c.MaxLeasesForWorker, c.MaxLeasesToStealAtOnce, c.GetRecordsLimit, c.IdleTimeBetweenReads, c.ConsistentTakeScans}
	}
	full, err := w.engineConfig("probe", 1).Validate()
	if err != nil {
		return w, err
	}

	// fault classes
	switch f := strings.TrimSpace(o.Faults); f {
	case "", "swarm":
		for _, c := range FaultClasses {
			if r.chance(0.45) {
				w.Faults = append(w.Faults, c)
			}
		}
		for _, c := range OutsideClasses {
			if r.chance(0.04) {
				w.Faults = append(w.Faults, c)
			}
		}
	case "none":
	case "all":
		w.Faults = append([]string(nil), FaultClasses...)
	default:
		known := map[string]bool{}
		for _, c := range append(append(append(append([]string(nil), FaultClasses...), OutsideClasses...), FanOutClasses...), EtcdClasses...) {
			known[c] = true
		}
		for _, c := range strings.Split(f, ",") {
			c = strings.TrimSpace(c)
			if !known[c] {
				return w, fmt.Errorf("sim: unknown fault class %q", c)
			}
			w.Faults = append(w.Faults, c)
		}
		sort.Strings(w.Faults)
	}

	// rates and distributions
	w.TableLatency = Latency{Base: r.between(time.Millisecond, 10*time.Millisecond), Tail: r.between(time.Millisecond, 10*time.Millisecond)}
	w.StreamLatency = Latency{Base: r.between(2*time.Millisecond, 20*time.Millisecond), Tail: r.between(time.Millisecond, 20*time.Millisecond)}
	w.CallTimeout = r.between(500*time.Millisecond, 3*time.Second).Round(10 * time.Millisecond)
	if w.has("latency") {
		w.TableLatency.Tail *= time.Duration(r.intIn(2, 20))
		w.StreamLatency.Tail *= time.Duration(r.intIn(2, 20))
		w.TableLatency.Spike = r.rangeF(0.001, 0.05)
		w.StreamLatency.Spike = r.rangeF(0.001, 0.05)
	}
	rt := &w.Rates
	if w.has("loss") {
		rt.RequestLoss = r.rangeF(0.001, 0.05)
		rt.ReplyLoss = r.rangeF(0.001, 0.05)
	}
	if w.has("dup") {
		rt.Dup = r.rangeF(0.001, 0.05)
	}
	if w.has("table-throttle") {
		rt.TableThrottle = r.rangeF(0.001, 0.1)
	}
	if w.has("table-errors") {
		rt.TableTransient = r.rangeF(0.001, 0.05)
	}
	if w.has("stale-reads") {
		rt.StaleRead = r.rangeF(0.1, 1)
		rt.StaleLag = r.between(100*time.Millisecond, 2*full.LeaseDuration)
		if r.chance(1.0 / 3) {
			// past the grace before a finished row is deleted: an
			// eventually consistent scan may then miss a child row and
			// show its parent deleted (nothing bounds how stale an
			// eventually consistent read is; the engine decides only
			// from strongly consistent ones or writes conditioned on
			// what it read)
			rt.StaleLag = r.between(2*full.LeaseDuration+2*full.ShardSyncInterval, 4*full.LeaseDuration+3*full.ShardSyncInterval)
		}
	}
	if w.has("stream-throttle") {
		rt.StreamThrottle = r.rangeF(0.01, 0.2)
	}
	if w.has("expired-iterators") {
		rt.ExpiredIterator = r.rangeF(0.001, 0.05)
	}
	if w.has("slow-processor") {
		rt.SlowProcessor = r.rangeF(0.005, 0.1)
	}
	if w.has("failed-batches") {
		rt.FailedBatch = r.rangeF(0.01, 0.2)
	}
	rt.Checkpoint = r.rangeF(0.05, 1)
	w.CheckpointPace = r.between(time.Second, 20*time.Second).Round(100 * time.Millisecond)
	if ce := o.CheckpointEvery; !ce.IsZero() {
		// after the draws: the rest of the world is the same
		rt.Checkpoint, w.CheckpointRecords, w.CheckpointPace = 0, ce.Records, ce.interval()
	}
	w.Retention = 24 * time.Hour
	if w.has("retention") {
		w.Retention = r.between(30*time.Second, 5*time.Minute).Round(time.Second)
	}
	if o.Retention > 0 {
		w.Retention = o.Retention // after the draw: the rest of the world is the same
	}
	w.PutRate = putRate
	// the consumers must be able to drain a burst's backlog: small pages
	// only with a light load
	if e.GetRecordsLimit < 100 && (w.PutRate > 0.5 || w.has("bursts")) {
		e.GetRecordsLimit = 100
	}
	w.DriftBound = full.MaxClockDrift / 2 * 0.98
	if w.has("drift-beyond") {
		w.DriftBound = full.MaxClockDrift * r.rangeF(2, 10)
	}

	f := strings.TrimSpace(o.Faults)
	if err := w.drawAssignment(o, f == "" || f == "swarm"); err != nil {
		return w, err
	}
	if err := w.drawFanOut(o, f == "" || f == "swarm"); err != nil {
		return w, err
	}
	if err := w.drawKPL(o, f == "" || f == "swarm"); err != nil {
		return w, err
	}
	if err := w.drawEtcd(o, f == "" || f == "swarm"); err != nil {
		return w, err
	}
	if err := w.drawBoundary(o, f == "" || f == "swarm", full.LeaseDuration); err != nil {
		return w, err
	}
	if err := w.drawAim(o, f == "" || f == "swarm"); err != nil {
		return w, err
	}
	if err := w.drawTarget(o, f == "" || f == "swarm"); err != nil {
		return w, err
	}
	if err := w.drawConfig(o, f == "" || f == "swarm", full.LeaseDuration); err != nil {
		return w, err
	}
	if combo != nil && combo.world != nil {
		combo.world(&w, cr, full)
		if o.Workers > 0 {
			w.Workers = o.Workers // a pinned size stays pinned
		}
		if o.Shards > 0 {
			w.Shards = o.Shards
		}
		if o.Chaos > 0 {
			w.Chaos = o.Chaos // and so does a pinned chaos phase
		}
	}

	if err := w.drawRenewal(o, f == "" || f == "swarm"); err != nil {
		return w, err
	}

	// the liveness bound, from the configuration
	b := 2*full.LeaseDuration + 2*full.TakeInterval + 2*full.ShardSyncInterval + 2*full.RenewInterval +
		8*w.CallTimeout + 4*full.IdleTimeBetweenReads + w.CheckpointPace + 10*time.Second + w.FanOut.boundExtra()
	w.Bound = b.Round(time.Second)
	w.Balance = full.MaxLeasesToStealAtOnce > 0 && full.MaxLeasesForWorker == 0
	if w.Config.BalanceBy == engine.BalanceThroughput && w.Assignment.Mode != engine.AssignmentScan {
		// an assigner that balances throughput leaves lease counts as
		// they fall: L1 checks only that every shard is owned
		w.Balance = false
	}
	if w.Renewal.Mode != "" && (w.Assignment.Mode == AssignmentMixed || w.switchesMode) {
		// a scan-mode worker never steals a session-bound lease (its
		// holder would not notice): beside session-mode workers it gets
		// only what expires or is released, so lease counts stay as they
		// fall (L1 checks only that every shard is owned)
		w.Balance = false
	}
	if o.Seed%2 == 1 {
		w.SkipAfter = 3
	}
	w.Quiet = o.Quiet
	if w.Quiet <= 0 {
		per := ((w.Shards+w.Config.Multi.Shards)*3+w.Workers-1)/w.Workers + 3
		w.Quiet = 3*w.Bound + time.Duration(per)*(full.TakeInterval+full.LeaseDuration)
		w.Quiet = w.Quiet.Round(time.Second)
		// The first three bounds are L1's (a bound to recover, then at
		// least a bound of records that must reach a processor within a
		// bound); the rest is time for the balance to converge, which a
		// world that has settled does not need.
		w.SettleMin = 3 * w.Bound
		w.SettleFor = max(w.Bound/2, 2*(full.TakeInterval+full.LeaseDuration))
	}
	return w, nil
}
