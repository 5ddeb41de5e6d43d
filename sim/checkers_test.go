package sim

import (
	"flag"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/planted"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/internal/reference"
	"github.com/shardlease/shardlease/sim/trace"
)

var flagOracleSeeds = flag.Int("sim.oracle", 0, "TestCheckersMatchReference: swarm seeds to compare (0: a reduced default, with one seed of each planted bug; otherwise three)")

// oracleCase is a run whose history the online checkers and the
// whole-history reference (package check/internal/reference) must judge
// alike.
type oracleCase struct {
	name string
	o    Options
}

func oracleCases(first uint64, swarm, plantedSeeds int) []oracleCase {
	var cs []oracleCase
	for seed := first; seed < first+uint64(swarm); seed++ {
		cs = append(cs, oracleCase{fmt.Sprintf("swarm/%d", seed), Options{Seed: seed}})
	}
	// outside the assumptions, where S1 and S3's start clause break
	for seed := first; seed < first+uint64(max(2, swarm/4)); seed++ {
		cs = append(cs, oracleCase{fmt.Sprintf("outside/%d", seed), Options{Seed: seed, Faults: "drift-beyond,long-pause,dup-owner,crash,partition,stale-reads,retention"}})
	}
	// every planted bug, on the mix that exposes it: histories full of
	// violations, many beyond the per-check cap
	for _, mc := range mutationCases {
		if strings.HasPrefix(mc.mutation, EngineMutationPrefix) && !planted.Enabled() {
			continue
		}
		for seed := uint64(1); seed <= uint64(plantedSeeds); seed++ {
			o := Options{Seed: seed, Mutation: mc.mutation, Faults: mc.faults, Workers: 4, Shards: 8}
			if mc.faults == "swarm" {
				o.Workers, o.Shards = 0, 0
			}
			cs = append(cs, oracleCase{fmt.Sprintf("%s-%s/%d", mc.mutation, mc.invariant, seed), o})
		}
	}
	return cs
}

// TestCheckersMatchReference: on histories of swarm seeds, runs outside
// the assumptions and every planted bug, the checkers fed a whole history
// (the batch functions that cmd/live uses) report exactly what the
// whole-history reference reports, and so do the online checkers with
// Forget (what a run uses), except where Forget documents a difference.
func TestCheckersMatchReference(t *testing.T) {
	first, n, plantedSeeds := uint64(1), *flagOracleSeeds, 3
	if n == 0 {
		// a few light seeds by default (-sim.oracle=200 for a sweep)
		first, n, plantedSeeds = 2, 4, 1
		if testing.Short() {
			n = 2
		}
	}
	for _, c := range oracleCases(first, n, plantedSeeds) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := c.o
			o.KeepTrace = true
			o.LinBudget = -1
			res, err := Run(o)
			if err != nil {
				t.Fatal(err)
			}
			w := res.World
			opts := check.Options{End: w.Chaos + w.Quiet, Heal: w.Chaos, Bound: w.Bound, Balance: w.Balance, BalanceSlack: 1}
			h := check.History{Records: res.Trace, Final: res.Final, FinalKnown: true}
			compareReference(t, h, opts, true)
			// as a history merged from processes' clocks: records of each
			// process (the producers' puts among them) shifted by a skew,
			// then sorted by time again
			compareReference(t, check.History{Records: skewed(res.Trace, c.o.Seed), Final: res.Final, FinalKnown: true}, opts, false)
		})
	}
}

// skewed returns recs with every process's records (and the producers')
// moved by up to 30ms of clock skew and sorted by time again.
func skewed(recs []trace.Record, seed uint64) []trace.Record {
	r := newRNG(seed, 99)
	skew := map[int32]time.Duration{}
	out := append([]trace.Record(nil), recs...)
	for i := range out {
		p := out[i].Proc
		if _, ok := skew[p]; !ok {
			skew[p] = r.between(-30*time.Millisecond, 30*time.Millisecond)
		}
		out[i].T += skew[p]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

// compareReference compares the checkers with the reference on h; online
// also compares the online checkers with Forget (which need the records
// in true-time order, as a run gives them).
func compareReference(t *testing.T, h check.History, opts check.Options, online bool) {
	t.Helper()
	recs := h.Records
	want := reference.All(h, opts)
	wantF := reference.Measure(recs, opts.End)
	if got := withoutNew(check.All(h, opts)); !reflect.DeepEqual(got, want) {
		t.Errorf("check.All differs from the reference:\n%s", diffReports(got, want))
	}
	if got := oldFigures(check.Measure(recs, opts.End)); !reflect.DeepEqual(got, wantF) {
		t.Errorf("check.Measure = %+v, reference %+v", got, wantF)
	}
	if got, want := oldTenures(check.Tenures(recs)), reference.Tenures(recs); !reflect.DeepEqual(got, want) {
		t.Errorf("check.Tenures: %d tenures, reference %d", len(got), len(want))
	}
	single := []struct {
		name      string
		got, want []check.Violation
	}{
		{"S1", check.CheckS1(recs, opts), reference.CheckS1(recs, opts)},
		{"S2", check.CheckS2(recs, opts), reference.CheckS2(recs, opts)},
		{"S3", check.CheckS3(h, opts), reference.CheckS3(h, opts)},
		{"S5", check.CheckS5(recs, opts), reference.CheckS5(recs, opts)},
		{"S6", check.CheckS6(recs, opts), reference.CheckS6(recs, opts)},
		{"L1", check.CheckL1(h, opts), reference.CheckL1(h, opts)},
	}
	for _, s := range single {
		if !reflect.DeepEqual(s.got, s.want) {
			t.Errorf("check.Check%s differs from the reference:\n%s", s.name, diffReports(check.Report{Violations: s.got}, check.Report{Violations: s.want}))
		}
	}
	s4, lost := check.CheckS4(h, opts)
	w4, wlost := reference.CheckS4(h, opts)
	if !reflect.DeepEqual(s4, w4) || lost != wlost {
		t.Errorf("check.CheckS4 differs from the reference (lost %d vs %d):\n%s", lost, wlost, diffReports(check.Report{Violations: s4}, check.Report{Violations: w4}))
	}

	if !online {
		return
	}
	// online, forgetting
	fo := opts
	fo.Forget = true
	on := check.NewOnline(fo)
	for i := range recs {
		on.Observe(&recs[i])
	}
	got, gotF := on.Finish(h.Final, h.FinalKnown)
	got, gotF = withoutNew(got), oldFigures(gotF)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("online checkers with Forget differ from the reference:\n%s", diffReports(got, want))
	}
	// the failovers come as the tenures end, not in key order; the
	// re-deliveries count only records above what was forgotten, which
	// differs when records received and covered are read again: only in
	// histories that break an invariant
	wantF.Failovers, gotF.Failovers = sortedDurations(wantF.Failovers), sortedDurations(gotF.Failovers)
	if len(want.Violations) > 0 && gotF.Redelivered != wantF.Redelivered {
		t.Logf("re-deliveries with Forget %d, reference %d (a history with violations)", gotF.Redelivered, wantF.Redelivered)
		gotF.Redelivered = wantF.Redelivered
	}
	if !reflect.DeepEqual(gotF, wantF) {
		t.Errorf("online figures with Forget = %+v, reference %+v", gotF, wantF)
	}
}

// withoutNew leaves out of rep the invariants the reference does not
// check (G1, G2, W1, W2, W3, L2, and T1-T3 and B1, which these options do
// not turn on: see their tests in package check).
func withoutNew(rep check.Report) check.Report {
	var vs []check.Violation
	for _, v := range rep.Violations {
		switch v.Invariant {
		case check.G1, check.G2, check.W1, check.W2, check.W3, check.L2, check.T1, check.T2, check.T3, check.B1:
			continue
		}
		vs = append(vs, v)
	}
	rep.Violations = vs
	return rep
}

// oldFigures clears the figures the reference does not measure (planned
// moves: see handoff_test.go in package check).
func oldFigures(f check.Figures) check.Figures {
	f.HandoffGaps, f.PlannedMoves, f.PlannedRedelivered, f.CheckpointedMoves = nil, 0, 0, 0
	return f
}

// oldTenures clears the field the reference does not fill in (Planned).
func oldTenures(ts []check.Tenure) []check.Tenure {
	for i := range ts {
		ts[i].Planned = false
	}
	return ts
}

func sortedDurations(ds []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), ds...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func diffReports(got, want check.Report) string {
	var b strings.Builder
	if got.LostToRetention != want.LostToRetention {
		fmt.Fprintf(&b, "  lost to retention %d, reference %d\n", got.LostToRetention, want.LostToRetention)
	}
	n := max(len(got.Violations), len(want.Violations))
	for i := 0; i < n; i++ {
		var g, w string
		if i < len(got.Violations) {
			g = fmt.Sprintf("%v seqs=%v", got.Violations[i], got.Violations[i].Seqs)
		}
		if i < len(want.Violations) {
			w = fmt.Sprintf("%v seqs=%v", want.Violations[i], want.Violations[i].Seqs)
		}
		if g != w {
			fmt.Fprintf(&b, "  [%d] got  %s\n      want %s\n", i, g, w)
		}
	}
	return b.String()
}
