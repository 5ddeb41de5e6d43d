package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestDeposedTakeCombo pins what the combination deposed-take draws: a
// calm assigner fleet of 3-4 workers without boundary seeking, three to
// four times as many shards, a 3-5 s lease, a call timeout of 0.7-0.85
// lease durations, pending polls every twentieth to tenth of a lease
// duration, a chaos of at least 150 s; and its schedule: pairs of a crash
// of the busiest member (restarted under its own id) a third to two
// thirds of a lease duration before a row-late strike at the assigner of
// one to one and a half lease durations, three to four lease durations
// apart, all within the chaos.
func TestDeposedTakeCombo(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		o := Options{Seed: seed, Faults: "swarm", Combo: "deposed-take"}
		w, err := drawWorld(o)
		if err != nil {
			t.Fatal(err)
		}
		full, err := w.engineConfig("probe", 1).Validate()
		if err != nil {
			t.Fatal(err)
		}
		ld := full.LeaseDuration
		if w.Assignment.Mode != engine.AssignmentAssigner || w.Workers < 3 || w.Workers > 4 || w.Shards < 3*w.Workers || w.Aim.On || w.Target.On ||
			w.Boundary.On || w.Rates.TableTransient > 0 || w.Rates.RequestLoss > 0 || full.MaxLeasesForWorker != 0 {
			t.Errorf("seed %d: not a calm assigner fleet of 3-4 workers and 3-4 times as many shards: %s", seed, w.String())
		}
		ct, pi := w.CallTimeout, full.PendingPollInterval
		if ld < 3*time.Second || ld > 5*time.Second || w.Chaos < 150*time.Second || ct < ld*7/10-10*time.Millisecond || ct > ld*85/100+10*time.Millisecond ||
			pi < ld/20-10*time.Millisecond || pi > ld/10+10*time.Millisecond {
			t.Errorf("seed %d: lease %v, chaos %v, call timeout %v, polls every %v", seed, ld, w.Chaos, ct, pi)
		}
		s := &simulator{o: o, w: w, full: full}
		acts := s.comboSchedule()
		if len(acts) < 2 || len(acts)%2 != 0 {
			t.Fatalf("seed %d: %d actions: %v", seed, len(acts), acts)
		}
		var last time.Duration
		for i := 0; i < len(acts); i += 2 {
			c, a := acts[i], acts[i+1]
			if c.Kind != ActCrash || c.Role != RoleMember || c.NewOwner || c.Dur < ld || c.Dur > 3*ld {
				t.Errorf("seed %d: %v is not a crash of the busiest member restarted under its own id", seed, c)
			}
			if a.Kind != ActStrikeAssigner || a.Target != StrikeAfterScan || a.Dir != StrikeRowLate || a.Dur < ld || a.Dur > 3*ld/2 {
				t.Errorf("seed %d: %v is not a row-late strike of one to one and a half lease durations", seed, a)
			}
			if d := a.At - c.At; a.At > time.Second+2*ld/3 && (d < ld/3-time.Millisecond || d > 2*ld/3+time.Millisecond) {
				t.Errorf("seed %d: the crash at %v and the strike at %v", seed, c.At, a.At)
			}
			if i > 0 && (a.At-last < 3*ld-time.Millisecond || a.At-last > 4*ld+time.Millisecond) {
				t.Errorf("seed %d: strikes at %v and %v", seed, last, a.At)
			}
			last = a.At
			if a.At >= w.Chaos-2*ld || c.At <= 0 {
				t.Errorf("seed %d: %v, %v outside the chaos (%v)", seed, c, a, w.Chaos)
			}
		}
	}
}

// TestStealReleaseCombo pins what the combination steal-release draws: a
// calm scan-mode fleet of 3-4 workers and 8 or more shards, a 3-5 s
// lease, take scans every quarter to third of a lease duration, one or
// two steals a round, no cap; its schedule: three to six workers joining
// within the chaos, and a cap of three to six strikes.
func TestStealReleaseCombo(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		o := Options{Seed: seed, Faults: "swarm", Combo: "steal-release"}
		w, err := drawWorld(o)
		if err != nil {
			t.Fatal(err)
		}
		full, err := w.engineConfig("probe", 1).Validate()
		if err != nil {
			t.Fatal(err)
		}
		ld, ti := full.LeaseDuration, full.TakeInterval
		if w.Assignment.Mode != engine.AssignmentScan || w.Workers < 3 || w.Workers > 4 || w.Shards < 8 || w.Aim.On || w.Target.On ||
			w.Rates.TableTransient > 0 || w.Rates.RequestLoss > 0 {
			t.Errorf("seed %d: not a calm scan-mode fleet of 3-4 workers and 8 or more shards: %s", seed, w.String())
		}
		if ld < 3*time.Second || ld > 5*time.Second || ti < ld/4-100*time.Millisecond || ti > ld*34/100+100*time.Millisecond ||
			full.MaxLeasesForWorker != 0 || full.MaxLeasesToStealAtOnce < 1 || full.MaxLeasesToStealAtOnce > 2 {
			t.Errorf("seed %d: lease %v, take scans every %v, cap %d, steals %d", seed, ld, ti, full.MaxLeasesForWorker, full.MaxLeasesToStealAtOnce)
		}
		s := &simulator{o: o, w: w, full: full}
		acts := s.comboSchedule()
		if len(acts) == 0 || len(acts) > 6 || s.stl.max < 3 || s.stl.max > 6 {
			t.Errorf("seed %d: %d joins, at most %d strikes", seed, len(acts), s.stl.max)
		}
		for _, a := range acts {
			if a.Kind != ActScaleOut || a.At < 5*time.Second || a.At >= w.Chaos {
				t.Errorf("seed %d: %v", seed, a)
			}
		}
	}
}

// TestCatchCombosFire: the aimed faults of deposed-take and steal-release
// fire in a run (the trace's fault records say so), within the cap, and
// the engine passes.
func TestCatchCombosFire(t *testing.T) {
	for _, c := range []struct{ combo, prefix string }{
		{"deposed-take", "strike: "},
		{"steal-release", "steal-release: "},
	} {
		res, err := Run(Options{Seed: 1, Combo: c.combo, KeepTrace: true, LinBudget: -1})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Errorf("%s: %v", c.combo, res.Violations[0])
		}
		n := 0
		for _, r := range res.Trace {
			if r.Kind == trace.KindFault && strings.HasPrefix(r.Reason, c.prefix) {
				n++
			}
		}
		if n == 0 || (c.combo == "steal-release" && n > 6) {
			t.Errorf("%s: %d of its faults fired", c.combo, n)
		}
	}
}
