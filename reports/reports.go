// Package reports turns simulator runs into reports: one JSON object per
// seed (the lines `simrun -json` prints), a summary.json for a run of one
// seed or a sweep of many, and a self-contained report.html (inline CSS,
// SVG and script; nothing is fetched) with the configuration, the fault
// schedule, a timeline of the run (one lane per shard, bars coloured by
// owner, bands for faults, marks for splits, merges and violations) and
// the figures.
//
// Reports written by `go run ./cmd/simrun` go to reports/out/ (ignored by
// git); reports/example/ holds the report the README quotes.
package reports

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/sim"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// Violation is a broken invariant in JSON form.
type Violation struct {
	Invariant string   `json:"invariant"`
	Shard     string   `json:"shard"`
	Detail    string   `json:"detail"`
	Workers   []string `json:"workers,omitempty"`
	FromS     float64  `json:"from_s"`
	ToS       float64  `json:"to_s"`
	// Excerpt is the trace around the violation, for the first violation
	// of a seed only (the report and a replay show the others).
	Excerpt []string `json:"excerpt,omitempty"`
}

// Seed is the outcome of one seed: a line of `simrun -json` and an entry
// of summary.json.
type Seed struct {
	// Schema is SeedSchema: the version of this object's fields, for
	// scripts that read simrun -json (and summary.json).
	Schema   int      `json:"schema"`
	Scenario string   `json:"scenario"`
	Seed     uint64   `json:"seed"`
	Mutation string   `json:"mutation,omitempty"`
	OK       bool     `json:"ok"`
	Tier     string   `json:"tier"`
	Outside  []string `json:"outside,omitempty"`
	// TraceHash is the run's trace hash as 16 hex digits (as sim prints it).
	TraceHash      string  `json:"trace_hash"`
	Events         uint64  `json:"events"`
	Records        int     `json:"records"`
	VirtualSeconds float64 `json:"virtual_seconds"`
	WallSeconds    float64 `json:"wall_seconds"`

	Workers int      `json:"workers"`
	Shards  int      `json:"shards"`
	Faults  []string `json:"faults"`
	Actions int      `json:"actions"`

	Violations []Violation `json:"violations"`
	Tolerated  []Violation `json:"tolerated,omitempty"`
	// Lin is the outcome of the linearizability check of the lease
	// table's history: "ok", "illegal" (a violation, its keys in
	// LinIllegal), "unknown" (some key ran out of budget: LinTimedOut of
	// them; not a violation) or "skipped".
	Lin         string   `json:"lin"`
	LinIllegal  []string `json:"lin_illegal,omitempty"`
	LinTimedOut int      `json:"lin_timed_out,omitempty"`

	// The handoff figures (see sim.Figures): failovers follow an unplanned
	// end of the old owner's tenure (lease lost or expired, process
	// crashed, killed, paused or cut off), planned moves a release for a
	// graceful shutdown or a cooperative handoff; both are timed from the
	// old owner's last act to the new owner's first. LeaseDurationMs is
	// the world's lease duration, their unit.
	LeaseDurationMs   float64 `json:"lease_duration_ms"`
	Failovers         int     `json:"failovers"`
	FailoverP50Ms     float64 `json:"failover_p50_ms"`
	FailoverP99Ms     float64 `json:"failover_p99_ms"`
	FailoverMaxMs     float64 `json:"failover_max_ms"`
	PlannedMoves      int     `json:"planned_moves"`
	CheckpointedMoves int     `json:"planned_moves_checkpointed"`
	// BoundedFailovers, BoundedMoves and BoundedTakeovers count the
	// failovers, planned moves and assigner takeovers held to their
	// derived bounds (T1, T2, T3).
	BoundedFailovers           int     `json:"bounded_failovers"`
	BoundedMoves               int     `json:"bounded_moves"`
	BoundedTakeovers           int     `json:"bounded_takeovers"`
	HandoffGapP50Ms            float64 `json:"handoff_gap_p50_ms"`
	HandoffGapP99Ms            float64 `json:"handoff_gap_p99_ms"`
	HandoffGapMaxMs            float64 `json:"handoff_gap_max_ms"`
	RedeliveriesPerPlannedMove float64 `json:"redeliveries_per_planned_move"`
	Handoffs                   int     `json:"handoffs"`
	RedeliveriesPerHandoff     float64 `json:"redeliveries_per_handoff"`
	TableOpsPerShardHour       float64 `json:"table_ops_per_shard_hour"`
	TableRowsPerShardHour      float64 `json:"table_rows_read_per_shard_hour"`
	StreamOpsPerShardHour      float64 `json:"stream_ops_per_shard_hour"`
	Puts                       int     `json:"puts"`
	LostToRetention            int     `json:"lost_to_retention"`
	// TableCost is what the lease table's calls would cost on DynamoDB
	// on-demand (sim.Figures.Cost); absent when the leases live in etcd.
	TableCost *TableCost `json:"table_cost,omitempty"`
	// Ops are the run's multi-write operations (sim.Result.Ops): per
	// kind, [instances, windows between steps, windows faulted, windows
	// whose process was struck].
	Ops map[string][4]int `json:"op_windows,omitempty"`

	Replay string `json:"replay"`
	// Error is set, and nothing else but Scenario and Seed, when the run
	// could not start (its configuration was rejected).
	Error string `json:"error,omitempty"`
	// Runner is what ran the seed: RunnerSim (the simulator, a pure
	// function of the seed) or RunnerDriver (the production driver in
	// virtual time, sim/driversim: its verdicts hold, its trace hash may
	// differ run to run).
	Runner string `json:"runner"`
	// Reproduced, for a failing driver seed, says how often re-runs of
	// the seed failed too ("3 of 4 re-runs").
	Reproduced string `json:"reproduced,omitempty"`
}

// Runners (Seed.Runner).
const (
	RunnerSim    = "sim"
	RunnerDriver = "driver"
)

// SeedSchema is the version of Seed's fields (Seed.Schema): 3 added
// runner and reproduced (driver worlds), 2 schema and lin; 1 (no schema
// field) was before.
const SeedSchema = 3

// linStatus names the outcome of the Lin check.
func linStatus(l sim.LinResult) string {
	switch {
	case l.Skipped || !l.Checked:
		return "skipped"
	case len(l.Illegal) > 0:
		return "illegal"
	case l.Unknown:
		return "unknown"
	}
	return "ok"
}

// NewSeed summarizes one run. wall is the wall time the run took.
func NewSeed(scenario string, o sim.Options, res *sim.Result, wall time.Duration) Seed {
	s := Seed{Schema: SeedSchema, Scenario: scenario, Seed: res.World.Seed, Mutation: o.Mutation, OK: res.OK(), Tier: res.Tier(), Outside: res.Outside,
		TraceHash: fmt.Sprintf("%016x", res.TraceHash), Events: res.Events, Records: res.Records,
		VirtualSeconds: res.VirtualSeconds, WallSeconds: round(wall.Seconds(), 4),
		Workers: res.World.Workers, Shards: res.World.Shards, Faults: res.World.Faults, Actions: len(res.Schedule),
		Violations: Violations(res.Violations), Tolerated: Violations(res.Tolerated), Replay: res.Replay, Runner: RunnerSim}
	if s.Faults == nil {
		s.Faults = []string{}
	}
	s.Lin, s.LinIllegal, s.LinTimedOut = linStatus(res.Lin), res.Lin.Illegal, res.Lin.TimedOut
	if s.Tolerated != nil && len(s.Tolerated) == 0 {
		s.Tolerated = nil
	}
	s.SetFigures(res.Figures)
	if len(res.Ops) > 0 {
		s.Ops = map[string][4]int{}
		for _, c := range res.Ops {
			s.Ops[c.Kind] = [4]int{c.Instances, c.Windows, c.Faulted, c.Struck}
		}
	}
	return s
}

// SetFigures sets the handoff and cost figures of s.
func (s *Seed) SetFigures(f sim.Figures) {
	s.LeaseDurationMs = ms(f.LeaseDuration)
	s.Failovers = f.Failovers
	s.FailoverP50Ms = ms(f.FailoverP50)
	s.FailoverP99Ms = ms(f.FailoverP99)
	s.FailoverMaxMs = ms(f.FailoverMax)
	s.PlannedMoves = f.PlannedMoves
	s.CheckpointedMoves = f.CheckpointedMoves
	s.BoundedFailovers, s.BoundedMoves, s.BoundedTakeovers = f.Bounded[0], f.Bounded[1], f.Bounded[2]
	s.HandoffGapP50Ms = ms(f.HandoffGapP50)
	s.HandoffGapP99Ms = ms(f.HandoffGapP99)
	s.HandoffGapMaxMs = ms(f.HandoffGapMax)
	s.RedeliveriesPerPlannedMove = round(f.RedeliveriesPerPlannedMove, 3)
	s.Handoffs = f.Handoffs
	s.RedeliveriesPerHandoff = round(f.RedeliveriesPerHandoff, 3)
	s.TableOpsPerShardHour = round(f.TableOpsPerShardHour, 1)
	s.TableRowsPerShardHour = round(f.TableRowsPerShardHour, 1)
	s.StreamOpsPerShardHour = round(f.StreamOpsPerShardHour, 1)
	s.Puts = f.Puts
	s.LostToRetention = f.LostToRetention
	s.TableCost = newTableCost(f.Cost)
}

// TableCost is sim.TableCost in a summary: per shard-hour, writes by class
// (those with any), the write request units (the index's included) and
// read request units, and the price per shard-month in US dollars.
type TableCost struct {
	WritesPerShardHour          map[string]float64 `json:"writes_per_shard_hour"`
	NonCheckpointWrites         float64            `json:"writes_but_checkpoints_per_shard_hour"`
	WriteUnitsPerShardHour      float64            `json:"write_units_per_shard_hour"`
	IndexWriteUnitsPerShardHour float64            `json:"index_write_units_per_shard_hour"`
	ReadsPerShardHour           float64            `json:"reads_per_shard_hour"`
	ReadUnitsPerShardHour       float64            `json:"read_units_per_shard_hour"`
	USDPerShardMonth            float64            `json:"usd_per_shard_month"`
	RenewUSDPerShardMonth       float64            `json:"renew_usd_per_shard_month"`
}

// costSum sums table costs for their mean.
type costSum struct {
	n   int
	sum TableCost
}

func (c costSum) add(tc *TableCost) costSum {
	if tc == nil {
		return c
	}
	if c.sum.WritesPerShardHour == nil {
		c.sum.WritesPerShardHour = map[string]float64{}
	}
	c.n++
	for k, v := range tc.WritesPerShardHour {
		c.sum.WritesPerShardHour[k] += v
	}
	c.sum.NonCheckpointWrites += tc.NonCheckpointWrites
	c.sum.WriteUnitsPerShardHour += tc.WriteUnitsPerShardHour
	c.sum.IndexWriteUnitsPerShardHour += tc.IndexWriteUnitsPerShardHour
	c.sum.ReadsPerShardHour += tc.ReadsPerShardHour
	c.sum.ReadUnitsPerShardHour += tc.ReadUnitsPerShardHour
	c.sum.USDPerShardMonth += tc.USDPerShardMonth
	c.sum.RenewUSDPerShardMonth += tc.RenewUSDPerShardMonth
	return c
}

func (c costSum) mean() *TableCost {
	if c.n == 0 {
		return nil
	}
	n := float64(c.n)
	out := &TableCost{WritesPerShardHour: map[string]float64{},
		NonCheckpointWrites: round(c.sum.NonCheckpointWrites/n, 1), WriteUnitsPerShardHour: round(c.sum.WriteUnitsPerShardHour/n, 1),
		IndexWriteUnitsPerShardHour: round(c.sum.IndexWriteUnitsPerShardHour/n, 1), ReadsPerShardHour: round(c.sum.ReadsPerShardHour/n, 1),
		ReadUnitsPerShardHour: round(c.sum.ReadUnitsPerShardHour/n, 1), USDPerShardMonth: round(c.sum.USDPerShardMonth/n, 6),
		RenewUSDPerShardMonth: round(c.sum.RenewUSDPerShardMonth/n, 6)}
	for k, v := range c.sum.WritesPerShardHour {
		out.WritesPerShardHour[k] = round(v/n, 1)
	}
	return out
}

// String is the cost in one line.
func (c *TableCost) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.WritesPerShardHour)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, c.WritesPerShardHour[k]))
	}
	return fmt.Sprintf("writes/shard-hour %.0f but checkpoints (%s), write units %.0f (index %.0f), read units %.0f; USD %.4f per shard-month (renewals %.4f)",
		c.NonCheckpointWrites, strings.Join(parts, ", "), c.WriteUnitsPerShardHour, c.IndexWriteUnitsPerShardHour, c.ReadUnitsPerShardHour, c.USDPerShardMonth, c.RenewUSDPerShardMonth)
}

func newTableCost(c sim.TableCost) *TableCost {
	if !c.Measured {
		return nil
	}
	out := &TableCost{WritesPerShardHour: map[string]float64{}, NonCheckpointWrites: round(c.WritesPerShardHour(trace.WriteCheckpoint), 1),
		IndexWriteUnitsPerShardHour: round(c.IndexWriteUnits, 1), ReadsPerShardHour: round(c.Reads, 1), ReadUnitsPerShardHour: round(c.ReadUnits, 1),
		USDPerShardMonth: round(c.PerShardMonth, 6), RenewUSDPerShardMonth: round(c.RenewPerShardMonth, 6)}
	units := c.IndexWriteUnits
	for i, w := range sim.WriteClasses() {
		units += c.WriteUnits[i]
		if c.Writes[i] > 0 {
			out.WritesPerShardHour[w] = round(c.Writes[i], 1)
		}
	}
	out.WriteUnitsPerShardHour = round(units, 1)
	return out
}

// Violations renders vs, the excerpt of the first only.
func Violations(vs []check.Violation) []Violation {
	out := []Violation{}
	for i, v := range vs {
		x := Violation{Invariant: v.Invariant, Shard: v.Key, Detail: v.Detail, Workers: v.Workers,
			FromS: round(v.From.Seconds(), 6), ToS: round(v.To.Seconds(), 6)}
		if i == 0 {
			x.Excerpt = v.Excerpt // the first only: a sweep's JSON stays small
		}
		out = append(out, x)
	}
	return out
}

// median returns the median of xs (sorted in place), rounded; 0 if none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	return round(xs[len(xs)/2], 3)
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(x float64, digits int) float64 {
	p := 1.0
	for i := 0; i < digits; i++ {
		p *= 10
	}
	if x < 0 {
		return -float64(int64(-x*p+0.5)) / p
	}
	return float64(int64(x*p+0.5)) / p
}

// Totals aggregate a sweep.
type Totals struct {
	Seeds      int            `json:"seeds"`
	Passed     int            `json:"passed"`
	Failed     int            `json:"failed"`
	Errors     int            `json:"errors"`
	Violations int            `json:"violations"`
	Tolerated  int            `json:"tolerated"`
	Tiers      map[string]int `json:"tiers"`
	// ByInvariant counts violations per invariant.
	ByInvariant map[string]int `json:"by_invariant"`
	// Runners counts the seeds by what ran them (Seed.Runner).
	Runners map[string]int `json:"runners"`

	// Figures over the seeds: the medians of the seeds' failover p50s and
	// p99s and of their planned moves' gap p50s and p99s, the largest
	// failover and gap, re-deliveries over all handoffs and over all
	// planned moves, and the mean of the seeds' table and stream
	// operations per shard-hour. The seeds' lease durations differ: each
	// seed's own figures (Seed) are in its lease_duration_ms.
	Failovers                  int     `json:"failovers"`
	FailoverP50Ms              float64 `json:"failover_p50_ms"`
	FailoverP99Ms              float64 `json:"failover_p99_ms"`
	FailoverMaxMs              float64 `json:"failover_max_ms"`
	PlannedMoves               int     `json:"planned_moves"`
	CheckpointedMoves          int     `json:"planned_moves_checkpointed"`
	HandoffGapP50Ms            float64 `json:"handoff_gap_p50_ms"`
	HandoffGapP99Ms            float64 `json:"handoff_gap_p99_ms"`
	HandoffGapMaxMs            float64 `json:"handoff_gap_max_ms"`
	RedeliveriesPerPlannedMove float64 `json:"redeliveries_per_planned_move"`
	Handoffs                   int     `json:"handoffs"`
	RedeliveriesPerHandoff     float64 `json:"redeliveries_per_handoff"`
	TableOpsPerShardHour       float64 `json:"table_ops_per_shard_hour"`
	TableRowsPerShardHour      float64 `json:"table_rows_read_per_shard_hour"`
	StreamOpsPerShardHour      float64 `json:"stream_ops_per_shard_hour"`
	// TableCost is the mean of the seeds' table costs (those that have
	// one: not the etcd worlds), each field the mean of the seeds' own.
	TableCost *TableCost `json:"table_cost,omitempty"`

	// Speed. WallSeconds is the sweep's elapsed time (seeds run Parallel
	// at a time); SeedWallSeconds the sum of the seeds' own wall times.
	Events               uint64  `json:"events"`
	VirtualSeconds       float64 `json:"virtual_seconds"`
	WallSeconds          float64 `json:"wall_seconds"`
	SeedWallSeconds      float64 `json:"seed_wall_seconds"`
	Parallel             int     `json:"parallel"`
	VirtualPerWallSecond float64 `json:"virtual_seconds_per_wall_second"`
	VirtualPerCoreSecond float64 `json:"virtual_seconds_per_core_second"`
	EventsPerWallSecond  float64 `json:"events_per_wall_second"`
	SeedsPerWallSecond   float64 `json:"seeds_per_wall_second"`
}

// Sweep is a run of one or more seeds of one scenario: summary.json.
type Sweep struct {
	Scenario string `json:"scenario"`
	Story    string `json:"story,omitempty"`
	// Command is the command line that ran the sweep.
	Command string `json:"command"`
	// Options describe the flags in force (what was not drawn).
	Options map[string]string `json:"options,omitempty"`
	Seeds   []Seed            `json:"seeds"`
	Totals  Totals            `json:"totals"`
	// TimelineSeed is the seed whose timeline report.html draws: the first
	// violating seed, or the first seed. TimelineHash is the trace hash of
	// the re-run that drew it (equal to the seed's: D1).
	TimelineSeed uint64 `json:"timeline_seed"`
	TimelineHash string `json:"timeline_trace_hash,omitempty"`
	TimelineNote string `json:"timeline_note,omitempty"`
	// Interrupted says that the sweep was stopped (SIGINT) before every
	// seed ran, and what the summary covers; empty for a whole sweep.
	Interrupted string `json:"interrupted,omitempty"`
}

// NewSweep sorts seeds by seed and computes the totals. wall is the
// elapsed time of the sweep, parallel the number of seeds run at a time.
func NewSweep(scenario, story, command string, seeds []Seed, wall time.Duration, parallel int) *Sweep {
	sw := &Sweep{Scenario: scenario, Story: story, Command: command, Seeds: append([]Seed(nil), seeds...)}
	sort.SliceStable(sw.Seeds, func(i, j int) bool { return sw.Seeds[i].Seed < sw.Seeds[j].Seed })
	t := &sw.Totals
	t.Tiers = map[string]int{}
	t.ByInvariant = map[string]int{}
	t.Runners = map[string]int{}
	t.Parallel = parallel
	t.WallSeconds = round(wall.Seconds(), 4)
	var p50s, p99s, gap50s, gap99s []float64
	var redelivered, plannedRedelivered float64
	var tableOps, tableRows, streamOps float64
	var costs costSum
	measured := 0
	for _, s := range sw.Seeds {
		t.Seeds++
		if s.Runner != "" {
			t.Runners[s.Runner]++
		}
		if s.Error != "" {
			t.Errors++
			continue
		}
		if s.OK {
			t.Passed++
		} else {
			t.Failed++
		}
		t.Tiers[s.Tier]++
		t.Violations += len(s.Violations)
		t.Tolerated += len(s.Tolerated)
		for _, v := range s.Violations {
			t.ByInvariant[v.Invariant]++
		}
		t.Events += s.Events
		t.VirtualSeconds += s.VirtualSeconds
		t.SeedWallSeconds += s.WallSeconds
		t.Failovers += s.Failovers
		if s.Failovers > 0 {
			p50s = append(p50s, s.FailoverP50Ms)
			p99s = append(p99s, s.FailoverP99Ms)
		}
		if s.FailoverMaxMs > t.FailoverMaxMs {
			t.FailoverMaxMs = s.FailoverMaxMs
		}
		t.PlannedMoves += s.PlannedMoves
		t.CheckpointedMoves += s.CheckpointedMoves
		plannedRedelivered += s.RedeliveriesPerPlannedMove * float64(s.PlannedMoves)
		if s.HandoffGapMaxMs > 0 {
			gap50s = append(gap50s, s.HandoffGapP50Ms)
			gap99s = append(gap99s, s.HandoffGapP99Ms)
		}
		if s.HandoffGapMaxMs > t.HandoffGapMaxMs {
			t.HandoffGapMaxMs = s.HandoffGapMaxMs
		}
		t.Handoffs += s.Handoffs
		redelivered += s.RedeliveriesPerHandoff * float64(s.Handoffs)
		tableOps += s.TableOpsPerShardHour
		tableRows += s.TableRowsPerShardHour
		streamOps += s.StreamOpsPerShardHour
		costs = costs.add(s.TableCost)
		measured++
	}
	t.FailoverP50Ms, t.FailoverP99Ms = median(p50s), median(p99s)
	t.HandoffGapP50Ms, t.HandoffGapP99Ms = median(gap50s), median(gap99s)
	if t.PlannedMoves > 0 {
		t.RedeliveriesPerPlannedMove = round(plannedRedelivered/float64(t.PlannedMoves), 3)
	}
	if t.Handoffs > 0 {
		t.RedeliveriesPerHandoff = round(redelivered/float64(t.Handoffs), 3)
	}
	if measured > 0 {
		t.TableOpsPerShardHour = round(tableOps/float64(measured), 1)
		t.TableRowsPerShardHour = round(tableRows/float64(measured), 1)
		t.StreamOpsPerShardHour = round(streamOps/float64(measured), 1)
	}
	t.TableCost = costs.mean()
	t.SeedWallSeconds = round(t.SeedWallSeconds, 4)
	t.VirtualSeconds = round(t.VirtualSeconds, 3)
	if wall > 0 {
		t.VirtualPerWallSecond = round(t.VirtualSeconds/wall.Seconds(), 1)
		t.EventsPerWallSecond = round(float64(t.Events)/wall.Seconds(), 0)
		t.SeedsPerWallSecond = round(float64(t.Seeds)/wall.Seconds(), 3)
	}
	if t.SeedWallSeconds > 0 {
		t.VirtualPerCoreSecond = round(t.VirtualSeconds/t.SeedWallSeconds, 1)
	}
	sw.TimelineSeed = sw.PickTimeline()
	return sw
}

// PickTimeline returns the seed whose timeline the report draws: the
// first violating seed, or else the first seed that ran.
func (sw *Sweep) PickTimeline() uint64 {
	for _, s := range sw.Seeds {
		if s.Error == "" && !s.OK {
			return s.Seed
		}
	}
	for _, s := range sw.Seeds {
		if s.Error == "" {
			return s.Seed
		}
	}
	return 0
}

// Failing returns the seeds that broke an invariant.
func (sw *Sweep) Failing() []Seed {
	var out []Seed
	for _, s := range sw.Seeds {
		if s.Error == "" && !s.OK {
			out = append(out, s)
		}
	}
	return out
}

// Paths of the files Write writes.
const (
	SummaryFile = "summary.json"
	HTMLFile    = "report.html"
)

// Write writes dir/summary.json and dir/report.html. res is the full
// result (with its trace: sim.Options.KeepTrace) of the seed the timeline
// draws, sw.TimelineSeed; nil draws none.
func Write(dir string, sw *Sweep, res *sim.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(sw, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), append(js, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, HTMLFile))
	if err != nil {
		return err
	}
	if err := HTML(f, sw, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
