package sim

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// TestScriptedScenario drives a run by scripted actions only (no drawn
// faults): a crash, a split and a partition. The crash must show up as a
// failover, the split as new shards that get processed, and every
// invariant must hold.
func TestScriptedScenario(t *testing.T) {
	var jsonl bytes.Buffer
	o := Options{Seed: 5, Workers: 3, Shards: 6, Faults: "none", Chaos: 60 * time.Second, Scenario: "crash-split-partition", KeepTrace: true, Trace: &jsonl,
		Actions: []Action{
			{At: 20 * time.Second, Kind: ActCrash, Worker: 1, Dur: 10 * time.Second},
			{At: 30 * time.Second, Kind: ActSplit, Shard: "shardId-000000000002"},
			{At: 35 * time.Second, Kind: ActPartition, Workers: []int{0}, Target: "table", Dir: "both", Dur: 5 * time.Second},
		}}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Violations {
		t.Errorf("violation: %s", FormatViolation(v))
	}
	if res.Figures.Failovers == 0 {
		t.Errorf("no failover measured after the crash:\n%s", res.Summary())
	}
	if !strings.Contains(res.Replay, "-scenario crash-split-partition") || !strings.Contains(res.Replay, "-faults none") {
		t.Errorf("replay %q", res.Replay)
	}
	children := 0
	for _, r := range res.Trace {
		if r.Kind == trace.KindShardCreated && r.Parent == "shardId-000000000002" {
			children++
		}
	}
	if children != 2 {
		t.Errorf("split made %d children", children)
	}
	// the JSONL sink carries the same history
	back, err := trace.ReadAll(&jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(res.Trace) || trace.HashRecords(back) != res.TraceHash {
		t.Errorf("JSONL history: %d records, hash %016x; run: %d records, hash %016x", len(back), trace.HashRecords(back), len(res.Trace), res.TraceHash)
	}
}

// TestFaultsNone: a run without faults is inside the assumptions, has no
// fault actions and breaks nothing.
func TestFaultsNone(t *testing.T) {
	res, err := Run(Options{Seed: 3, Faults: "none", Chaos: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Inside || len(res.Schedule) != 0 {
		t.Errorf("tier %s, schedule %v", res.Tier(), res.Schedule)
	}
	for _, v := range res.Violations {
		t.Errorf("violation: %s", FormatViolation(v))
	}
}

func TestBadFaultClass(t *testing.T) {
	if _, err := Run(Options{Seed: 1, Faults: "bogus"}); err == nil {
		t.Error("an unknown fault class was accepted")
	}
}

// TestPinnedDrifts: Options.Drifts pins the clock rates of the first slots
// at the ends of the drift bound, and a value outside [-1, 1] is refused.
func TestPinnedDrifts(t *testing.T) {
	for _, bad := range [][]float64{{1.5}, {0, -2}, {math.NaN()}} {
		if _, err := Run(Options{Seed: 1, Drifts: bad}); err == nil || !strings.Contains(err.Error(), "[-1, 1]") {
			t.Errorf("Drifts %v: err %v, want a refusal naming the range", bad, err)
		}
	}
	o := Options{Seed: 3, Workers: 3, Shards: 2, Faults: "none", Chaos: 20 * time.Second, Quiet: 10 * time.Second, Drifts: []float64{-1, 1}, KeepTrace: true}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	// the local monotonic time each worker reads at the end of the run,
	// against the true time: rates 1-bound and 1+bound for slots 0 and 1
	bound := res.World.DriftBound
	for w, want := range map[int32]float64{0: 1 - bound, 1: 1 + bound} {
		var first, last *trace.Record
		for i := range res.Trace {
			if r := &res.Trace[i]; r.Worker == w && r.Mono != 0 {
				if first == nil {
					first = r
				}
				last = r
			}
		}
		if first == nil || last.T == first.T {
			t.Fatalf("worker %d: no local times in the trace", w)
		}
		rate := float64(last.Mono-first.Mono) / float64(last.T-first.T)
		if math.Abs(rate-want) > 1e-6 {
			t.Errorf("worker %d: clock rate %.6f, want %.6f (drift bound %.4f)", w, rate, want, bound)
		}
	}
}
