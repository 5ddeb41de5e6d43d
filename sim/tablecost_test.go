package sim

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// costRun runs a small world without faults, its trace kept.
func costRun(t *testing.T, o Options) *Result {
	t.Helper()
	o.Seed, o.Workers, o.Shards, o.Faults = 1, 3, 6, "none"
	o.Chaos, o.Quiet, o.KeepTrace, o.NoExcerpts = 3*time.Minute, time.Minute, true, true
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("the run broke invariants: %v", res.Violations)
	}
	if !res.Figures.Cost.Measured {
		t.Fatal("no table cost")
	}
	return res
}

// TestTableCostCountsTheTablesWrites: Figures.Cost counts, class by class,
// the writes the trace shows the table executing (KindApply applied, or
// refused by its condition) over the shard-hours the trace shows, and
// prices them.
func TestTableCostCountsTheTablesWrites(t *testing.T) {
	for _, mode := range []string{"scan", "assigner", "session"} {
		o := Options{Assignment: mode}
		if mode == "session" {
			o = Options{Assignment: engine.AssignmentAssigner, Renewal: engine.RenewalSession}
		}
		res := costRun(t, o)
		want := map[string]int{}
		for i := range res.Trace {
			r := &res.Trace[i]
			if r.Kind == trace.KindApply && (r.Outcome == trace.OutcomeOK || r.Outcome == trace.OutcomeCondition) {
				if engine.IsSessionRow(r.Key) {
					want[SessionWrites]++
				} else {
					want[r.Reason]++
				}
			}
		}
		if mode == "session" && want[SessionWrites] == 0 {
			t.Fatalf("session: no writes of session rows")
		}
		c := res.Figures.Cost
		// the shard-hours are the figures' own: take them from renewals
		renews := c.Writes[classIndex(trace.WriteRenew)]
		if want[trace.WriteRenew] == 0 || renews == 0 {
			t.Fatalf("%s: no renewals (trace %d, cost %.1f/shard-hour)", mode, want[trace.WriteRenew], renews)
		}
		shardHours := float64(want[trace.WriteRenew]) / renews
		for i, w := range WriteClasses() {
			if got := c.Writes[i] * shardHours; int(got+0.5) != want[w] {
				t.Errorf("%s: %s writes %.1f (%.2f/shard-hour), the trace's %d", mode, w, got, c.Writes[i], want[w])
			}
			if c.WriteUnits[i] < c.Writes[i] {
				t.Errorf("%s: %s: %.1f write units for %.1f writes: every write costs one at least", mode, w, c.WriteUnits[i], c.Writes[i])
			}
		}
		if c.ReadUnits <= 0 || c.Reads <= 0 || c.PerShardMonth <= c.RenewPerShardMonth || c.RenewPerShardMonth <= 0 {
			t.Errorf("%s: cost %s", mode, c)
		}
		if mode == "assigner" && c.IndexWriteUnits <= 0 {
			t.Errorf("assigner: no pending index writes: %s", c)
		}
		t.Logf("%s: %s", mode, c)
	}
}

// TestCheckpointCadence: Options.CheckpointEvery replaces the drawn
// checkpoints (at a share of batches, every 1-20 s) by the application's
// cadence: every interval, at most one checkpoint a shard, and every N
// records by count.
func TestCheckpointCadence(t *testing.T) {
	count := func(res *Result) (asked int) {
		for i := range res.Trace {
			if res.Trace[i].Kind == trace.CheckpointRequested {
				asked++
			}
		}
		return asked
	}
	drawn := count(costRun(t, Options{}))
	res := costRun(t, Options{CheckpointEvery: CheckpointCadence{Interval: 30 * time.Second}})
	interval := count(res)
	// 6 shards for 4 minutes, one ask every 30 s (a graceful stop adds one)
	if interval > 6*8+6 || interval == 0 {
		t.Errorf("every 30 s: %d checkpoints asked for, want 1 to %d", interval, 6*8+6)
	}
	if interval*3 > drawn {
		t.Errorf("every 30 s: %d checkpoints asked for against the drawn cadence's %d: want far fewer", interval, drawn)
	}
	if res.World.CheckpointPace != 30*time.Second || res.World.Rates.Checkpoint != 0 {
		t.Errorf("world: pace %v, share %v", res.World.CheckpointPace, res.World.Rates.Checkpoint)
	}
	byCount := costRun(t, Options{CheckpointEvery: CheckpointCadence{Records: 50, Interval: time.Hour}})
	if n, puts := count(byCount), byCount.Figures.Puts; n == 0 || n > puts/50+6 {
		t.Errorf("every 50 records: %d checkpoints asked for, %d records put: want 1 to %d", n, puts, puts/50+6)
	}
	t.Logf("checkpoints asked: drawn %d, every 30 s %d, every 50 records %d", drawn, interval, count(byCount))
}

func TestParseCheckpointCadence(t *testing.T) {
	for in, want := range map[string]CheckpointCadence{
		"": {}, "1000": {Records: 1000}, "60s": {Interval: time.Minute}, "1000,1m": {Records: 1000, Interval: time.Minute}, " 5s , 10": {Records: 10, Interval: 5 * time.Second},
	} {
		got, err := ParseCheckpointCadence(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseCheckpointCadence(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), again, err)
		}
	}
	for _, in := range []string{"0", "-5", "1,2", "10ms", "1s,2s", "often"} {
		if _, err := ParseCheckpointCadence(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
