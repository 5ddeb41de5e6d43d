package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Configuration coverage: the options of engine.Config that EngineParams
// does not draw, drawn by the swarm's worlds from a PRNG stream of their
// own (so that a world that draws every one at its default draws the rest
// exactly as before). docs/simulator.md lists every option with the share
// of worlds that draws each of its values; TestConfigShares computes the
// shares from these draws, so the table cannot go stale.
type ConfigWorld struct {
	// AssignerScanInterval and PendingPollInterval: 0 is the default
	// (LeaseDuration/3, LeaseDuration/8).
	AssignerScanInterval, PendingPollInterval time.Duration
	// BalanceBy: "" is the default (engine.BalanceLeases).
	BalanceBy string
	// InitialPosition of the stream: "" is the engine's default (LATEST);
	// Timestamp, for AT_TIMESTAMP, is when the records to read begin, in
	// true time since the start of the run (negative: before it).
	InitialPosition string
	Timestamp       time.Duration
	// DeregisterConsumer: a fan-out worker deregisters the consumer when it
	// shuts down.
	DeregisterConsumer bool
	// CorruptShare is the share of a KPL world's aggregates that are
	// corrupt (see corrupt.go); DeliverCorruptAggregates: they reach the
	// processor as they were read.
	CorruptShare             float64
	DeliverCorruptAggregates bool
	// AdoptUnverifiedRows: the worker adopts a table without a stream
	// marker although some of its rows name shards the stream does not
	// list (a legacy table's).
	AdoptUnverifiedRows bool
	// Multi: the workers consume a second stream too (streams.go).
	Multi MultiWorld
	// Legacy: the table starts as a KCL application left it (legacy.go).
	Legacy LegacyWorld
}

// The shares of the configuration draws (see drawConfig).
const (
	shareAssignerScan   = 0.4
	sharePendingPoll    = 0.4
	shareThroughput     = 0.3
	shareLatest         = 0.15 // LATEST set explicitly
	shareLatestDefault  = 0.1  // InitialPosition left empty: the engine's default, LATEST
	shareAtTimestamp    = 0.15
	shareDeregister     = 0.5 // of fan-out worlds
	shareDeliverCorrupt = 0.5 // of KPL worlds
	shareCorrupt        = 0.6 // of KPL worlds: some aggregates corrupt
	shareAdoptUnknown   = 0.3
	// shareDefaults: the worlds whose lease timings (LeaseDuration,
	// RenewInterval, SafetyMargin, MaxClockDrift, TakeInterval,
	// ShardSyncInterval, IdleTimeBetweenReads) are the engine's defaults
	shareDefaults = 0.1
)

// drawConfig draws w's configuration options (Options.Options; a swarm
// draws them, other runs keep the defaults and read from TRIM_HORIZON, as
// before).
func (w *World) drawConfig(o Options, swarm bool, lease time.Duration) error {
	c := &w.Config
	c.InitialPosition = engine.TrimHorizon
	switch o.Options {
	case "":
	case "on":
		swarm = true
	case "off":
		swarm = false
	default:
		return fmt.Errorf("sim: Options %q is not on or off (or empty: drawn by a swarm)", o.Options)
	}
	if !swarm {
		return nil
	}
	r := newRNG(o.Seed, streamOptions)
	if r.chance(shareAssignerScan) {
		c.AssignerScanInterval = r.between(lease/10, lease/2).Round(10 * time.Millisecond)
	}
	if r.chance(sharePendingPoll) {
		c.PendingPollInterval = r.between(lease/20, lease/2).Round(10 * time.Millisecond)
	}
	if r.chance(shareThroughput) {
		c.BalanceBy = engine.BalanceThroughput
	}
	switch x := r.Float64(); {
	case x < shareLatest:
		c.InitialPosition = engine.Latest
	case x < shareLatest+shareLatestDefault:
		c.InitialPosition = ""
	case x < shareLatest+shareLatestDefault+shareAtTimestamp:
		c.InitialPosition = engine.AtTimestamp
	}
	ts := r.between(-time.Minute, w.Chaos/2).Round(time.Millisecond)
	if c.InitialPosition == engine.AtTimestamp {
		c.Timestamp = ts
	}
	dereg, corrupt := r.chance(shareDeregister), r.chance(shareDeliverCorrupt)
	c.DeregisterConsumer = w.FanOut.On && dereg
	c.DeliverCorruptAggregates = w.KPL.Share > 0 && corrupt
	if share := r.rangeF(0.02, 0.1); w.KPL.Share > 0 && r.chance(shareCorrupt) {
		c.CorruptShare = share
	}
	c.AdoptUnverifiedRows = r.chance(shareAdoptUnknown)
	c.Multi = drawMulti(r, w)
	c.Legacy = drawLegacy(r, w)
	return nil
}

func (c ConfigWorld) String() string {
	var ks []string
	if c.AssignerScanInterval > 0 {
		ks = append(ks, fmt.Sprintf("assigner scans every %v", c.AssignerScanInterval))
	}
	if c.PendingPollInterval > 0 {
		ks = append(ks, fmt.Sprintf("pending polls every %v", c.PendingPollInterval))
	}
	if c.BalanceBy != "" {
		ks = append(ks, "balance by "+c.BalanceBy)
	}
	switch c.InitialPosition {
	case engine.TrimHorizon:
	case "":
		ks = append(ks, "initial position the default (LATEST)")
	case engine.AtTimestamp:
		ks = append(ks, fmt.Sprintf("initial position AT_TIMESTAMP %v", c.Timestamp))
	default:
		ks = append(ks, "initial position "+c.InitialPosition)
	}
	if c.DeregisterConsumer {
		ks = append(ks, "consumer deregistered at shutdown")
	}
	if c.CorruptShare > 0 {
		ks = append(ks, fmt.Sprintf("%.0f%% of aggregates corrupt", 100*c.CorruptShare))
	}
	if c.DeliverCorruptAggregates {
		ks = append(ks, "corrupt aggregates delivered")
	}
	if c.AdoptUnverifiedRows {
		ks = append(ks, "unverified rows adopted")
	}
	if m := c.Multi.String(); m != "" {
		ks = append(ks, m)
	}
	if l := c.Legacy.String(); l != "" {
		ks = append(ks, l)
	}
	if len(ks) == 0 {
		return ""
	}
	return "; options: " + strings.Join(ks, ", ")
}

// apply sets c's options in an engine configuration.
func (c ConfigWorld) apply(cfg *engine.Config) {
	cfg.AssignerScanInterval = c.AssignerScanInterval
	cfg.PendingPollInterval = c.PendingPollInterval
	cfg.BalanceBy = c.BalanceBy
	for i := range cfg.Streams {
		cfg.Streams[i].InitialPosition = c.InitialPosition
		if c.InitialPosition == engine.AtTimestamp {
			cfg.Streams[i].Timestamp = epoch.Add(c.Timestamp)
		}
	}
	cfg.DeregisterConsumer = c.DeregisterConsumer && cfg.Consumer == engine.FanOut
	cfg.DeliverCorruptAggregates = c.DeliverCorruptAggregates
	cfg.AdoptUnverifiedRows = c.AdoptUnverifiedRows
}

// noteTenure follows, for notOwed, which processes delivered records of a
// lease since they acquired it.
func (s *simulator) noteTenure(p *proc, e *engine.TraceEvent) {
	k := procKey{p.id, e.Key}
	switch e.Kind {
	case engine.TraceLeaseAcquired:
		delete(s.delivered, k)
	case engine.TraceDelivered:
		if e.Count > 0 && s.w.Config.InitialPosition != engine.TrimHorizon {
			if s.delivered == nil {
				s.delivered = map[procKey]bool{}
			}
			s.delivered[k] = true
		}
	}
}

// latestWorld reports whether the world's streams begin at LATEST.
func (s *simulator) latestWorld() bool {
	p := s.w.Config.InitialPosition
	return p == engine.Latest || p == ""
}

// latestCreated is the row of key created now in a world that begins at
// LATEST: under LATEST the engine gives a closed shard without a lease
// none, so every closed ancestor of key's shard without a row is skipped
// for good (a shard with a descendant that has a row gets none), whatever
// key's own start (TRIM_HORIZON if another parent has a row). Their
// records are not owed, and they count as ended for their children
// (trace.SkippedPrefix).
func (s *simulator) latestCreated(key string) {
	seen := map[string]bool{}
	stream, start := s.parseKey(key)
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		sh, ok := s.shardOf(stream, id)
		if !ok {
			return
		}
		for _, pid := range sh.ParentIDs() {
			p := s.shardKey(stream, pid)
			if seen[p] || depth > 64 {
				continue
			}
			seen[p] = true
			if _, ok := s.row(p); ok {
				continue
			}
			if s.skipped == nil {
				s.skipped = map[string]bool{}
			}
			if !s.skipped[p] {
				s.skipped[p] = true
				r := trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: p, Reason: trace.SkippedPrefix + "a closed shard without a lease under LATEST, below " + key}
				if recs, err := s.st.Retained(stream, pid); err == nil && len(recs) > 0 {
					r.First, r.Last = recs[0].Sequence, recs[len(recs)-1].Sequence
					for i := range recs {
						if i == 0 || recs[i].Sequence != recs[i-1].Sequence {
							r.Count++
						}
					}
				}
				s.emit(&r)
			}
			walk(pid, depth+1)
		}
	}
	walk(start, 0)
}

// shardOf returns the stream's description of shard id.
func (s *simulator) shardOf(stream, id string) (engine.Shard, bool) {
	all, err := s.st.Shards(stream)
	if err != nil {
		return engine.Shard{}, false
	}
	for _, sh := range all {
		if sh.ID == id {
			return sh.Shard, true
		}
	}
	return engine.Shard{}, false
}

// NotOwedPrefix starts the Reason of a trace.KindTrim record of records
// that no reader owes the processor: those before where a lease began
// (an iterator at LATEST or AT_TIMESTAMP from a start sentinel), or
// checkpointed by the application that wrote a legacy table. The checkers
// treat them as trimmed, but do not count them as lost to retention.
const NotOwedPrefix = trace.NotOwedPrefix

// notOwed records, for an iterator (or a subscription) at LATEST or
// AT_TIMESTAMP that p obtained for call c, the retained records it will
// never read (at LATEST every one, at AT_TIMESTAMP those that arrived
// before the timestamp) when that is where its lease begins: the row's
// checkpoint is that start sentinel and p's processor has processed no
// record of the shard since it was initialized, in a world configured to
// begin there, and the shard is not a child of one with a row. Anywhere
// else a start at LATEST skips records it owes (the planted bugs
// resubscribe-at-latest and child-at-latest).
func (s *simulator) notOwed(p *proc, c *engine.Call) {
	pos := c.Position
	if pos.Type != engine.IterLatest && pos.Type != engine.IterAtTimestamp {
		return
	}
	// only where the configuration begins a lease there: a world that
	// begins at TRIM_HORIZON owes every record, and a child of a shard
	// with a row begins at TRIM_HORIZON in any world (the planted bug
	// child-at-latest starts it at LATEST)
	if pos.Type == engine.IterLatest && !s.latestWorld() || pos.Type == engine.IterAtTimestamp && s.w.Config.InitialPosition != engine.AtTimestamp {
		return
	}
	if sh, ok := s.shardOf(c.Stream, c.Shard); ok {
		for _, pid := range sh.ParentIDs() {
			if _, ok := s.row(s.shardKey(c.Stream, pid)); ok {
				return
			}
		}
	}
	key := s.callKey(c)
	row, ok := s.row(key)
	if want := engine.Latest; pos.Type == engine.IterAtTimestamp {
		want = engine.AtTimestamp
		if !ok || row.Checkpoint.Sequence != want {
			return
		}
	} else if !ok || row.Checkpoint.Sequence != want {
		return
	}
	if s.delivered[procKey{p.id, key}] {
		return
	}
	stream, shard := c.Stream, c.Shard
	recs, err := s.st.Retained(stream, shard)
	if err != nil || len(recs) == 0 {
		return
	}
	n := len(recs)
	if pos.Type == engine.IterAtTimestamp {
		n = 0
		for n < len(recs) && recs[n].Arrival.Before(pos.Timestamp) {
			n++
		}
		if n == 0 {
			return
		}
	}
	first, last := recs[0], recs[n-1]
	// whole Kinesis records: an aggregate's user records share its sequence
	count := 0
	for i := 0; i < n; i++ {
		if i == 0 || recs[i].Sequence != recs[i-1].Sequence {
			count++
		}
	}
	s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: key, Reason: NotOwedPrefix + "before an iterator at " + string(pos.Type),
		First: first.Sequence, Last: last.Sequence, Count: count})
}
