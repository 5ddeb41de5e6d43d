package sim

import (
	"strings"
	"testing"
	"time"
)

// TestCombosYieldToPins: boundary seeking pinned off or on, or aimed or
// targeted faults pinned on, hold in every swarm world (a combination that would
// override the pin is not drawn), and pinning such a combination with
// them is refused with the pin named. A combination that claims no
// override leaves each pin as it is; none overrides a pinned number of
// workers or shards or a pinned chaos phase.
func TestCombosYieldToPins(t *testing.T) {
	drawn := map[string]int{}
	for seed := uint64(1); seed <= 300; seed++ {
		w, err := drawWorld(Options{Seed: seed, Faults: "swarm"})
		if err != nil {
			t.Fatal(err)
		}
		drawn[w.Combo.Name]++
		if w, _ := drawWorld(Options{Seed: seed, Faults: "swarm", Boundary: "off"}); w.Boundary.On {
			t.Errorf("seed %d: boundary seeking pinned off is on (combination %q)", seed, w.Combo.Name)
		}
		if w, _ := drawWorld(Options{Seed: seed, Faults: "swarm", Boundary: "on"}); !w.Boundary.On {
			t.Errorf("seed %d: boundary seeking pinned on is off (combination %q)", seed, w.Combo.Name)
		}
		if w, _ := drawWorld(Options{Seed: seed, Faults: "swarm", Aim: "on"}); !w.Aim.On {
			t.Errorf("seed %d: aimed faults pinned on are off (combination %q)", seed, w.Combo.Name)
		}
		if w, _ := drawWorld(Options{Seed: seed, Faults: "swarm", Targeted: "on"}); !w.Target.On {
			t.Errorf("seed %d: a targeted fault pinned on is off (combination %q)", seed, w.Combo.Name)
		}
	}
	for _, c := range Combos {
		if drawn[c.Name] == 0 && c.Share > 0 {
			t.Errorf("combination %s: drawn by none of swarm seeds 1-300", c.Name)
		}
		pins := []struct {
			o        Options
			override bool
			holds    func(w *World) bool
		}{
			{Options{Boundary: "off"}, c.boundary, func(w *World) bool { return !w.Boundary.On }},
			{Options{Boundary: "on"}, c.still, func(w *World) bool { return w.Boundary.On }},
			{Options{Aim: "on"}, c.calms, func(w *World) bool { return w.Aim.On }},
			{Options{Targeted: "on"}, c.calms, func(w *World) bool { return w.Target.On }},
			// the world's size and its chaos phase are never overridden
			{Options{Workers: 2}, false, func(w *World) bool { return w.Workers == 2 }},
			{Options{Shards: 3}, false, func(w *World) bool { return w.Shards == 3 }},
			{Options{Chaos: 40 * time.Second}, false, func(w *World) bool { return w.Chaos == 40*time.Second }},
		}
		for _, p := range pins {
			for seed := uint64(1); seed <= 10; seed++ {
				o := p.o
				o.Seed, o.Faults, o.Combo = seed, "swarm", c.Name
				w, err := drawWorld(o)
				switch {
				case p.override && (err == nil || !strings.Contains(err.Error(), c.overrides(o))):
					t.Errorf("%s: -combo %s with the pin it overrides: err %v", ReplayCommand(o), c.Name, err)
				case !p.override && err != nil:
					t.Errorf("%s: %v", ReplayCommand(o), err)
				case !p.override && !p.holds(&w):
					t.Errorf("%s: the combination overrides the pin and does not say so (a pinned size or chaos phase wins; for the others set its boundary, still or calms field)", ReplayCommand(o))
				}
			}
		}
	}
}

// TestAssignerCombos pins what the combinations assigner-failovers and
// assigner-lapse draw: a calm assigner fleet of their size without
// boundary seeking, more shards than workers, their lease, chaos and poll
// interval, assigner-lapse's scan and take intervals, and their schedules
// (strikes at the assigner at the moments and with the faults strike.go
// names, lapses longer than a lease duration, holder crashes, the
// failovers' strikes three lease durations apart or more).
func TestAssignerCombos(t *testing.T) {
	for _, name := range []string{"assigner-failovers", "assigner-lapse"} {
		kinds := map[string]int{}
		for seed := uint64(1); seed <= 40; seed++ {
			o := Options{Seed: seed, Faults: "swarm", Combo: name}
			w, err := drawWorld(o)
			if err != nil {
				t.Fatal(err)
			}
			full, err := w.engineConfig("probe", 1).Validate()
			if err != nil {
				t.Fatal(err)
			}
			ld := full.LeaseDuration
			lo := map[string]int{"assigner-failovers": 3, "assigner-lapse": 4}[name]
			if w.Assignment.Mode != "assigner" || w.Workers < lo || w.Aim.On || w.Target.On || w.Rates.TableTransient > 0 || w.Rates.RequestLoss > 0 {
				t.Errorf("seed %d %s: not a calm assigner fleet of %d or more: %s", seed, name, lo, w.String())
			}
			pi := full.PendingPollInterval
			if ld < 3*time.Second || ld > 6*time.Second || w.Chaos < 150*time.Second || w.Shards <= w.Workers || full.MaxLeasesForWorker != 0 || w.Boundary.On ||
				pi < ld/20-10*time.Millisecond || pi > ld/10+10*time.Millisecond {
				t.Errorf("seed %d %s: lease %v, chaos %v, %d shards, %d workers, cap %d, boundary %v, polls every %v", seed, name, ld, w.Chaos, w.Shards, w.Workers,
					full.MaxLeasesForWorker, w.Boundary.On, pi)
			}
			if name == "assigner-lapse" {
				si := full.AssignerScanInterval
				short := si >= ld/10-10*time.Millisecond && si <= ld/5+10*time.Millisecond && full.TakeInterval >= ld
				long := si >= ld/3-10*time.Millisecond && si <= ld/2+10*time.Millisecond && full.TakeInterval < ld
				if !short && !long {
					t.Errorf("seed %d %s: lease %v, scans every %v, takes every %v", seed, name, ld, si, full.TakeInterval)
				}
			}
			s := &simulator{o: o, w: w, full: full}
			acts := s.comboSchedule()
			strikes := 0
			var last time.Duration
			for _, a := range acts {
				switch a.Kind {
				case ActStrikeAssigner:
					strikes++
					kinds[a.Target+"/"+a.Dir]++
					if a.At < last+3*ld && strikes > 1 && name == "assigner-failovers" {
						t.Errorf("seed %d %s: strikes at %v and %v, less than 3 lease durations (%v) apart", seed, name, last, a.At, ld)
					}
					last = a.At
					if name == "assigner-lapse" && a.Dur <= ld {
						t.Errorf("seed %d %s: a lapse of %v, not longer than the lease duration %v", seed, name, a.Dur, ld)
					}
				case ActCrash:
					if a.Role != RoleHolder {
						t.Errorf("seed %d %s: %v", seed, name, a)
					}
				default:
					t.Errorf("seed %d %s: unexpected action %v", seed, name, a)
				}
				if a.At <= 0 || a.At >= w.Chaos {
					t.Errorf("seed %d %s: %v outside the chaos (%v)", seed, name, a, w.Chaos)
				}
			}
			if strikes == 0 {
				t.Errorf("seed %d %s: %d strikes at the assigner in %v", seed, name, strikes, acts)
			}
		}
		want := []string{StrikeAfterScan + "/" + StrikeCut, StrikeAfterScan + "/" + StrikePause, StrikeAfterScan + "/" + StrikeRowFail}
		if name == "assigner-failovers" {
			want = append(want, StrikeAfterAssign+"/"+StrikeCrash, StrikeDeputyRead+"/"+StrikeCrash, StrikeAfterScan+"/"+StrikeCrash,
				StrikeDeputyRead+"/"+StrikeRowFail, StrikeAfterTake+"/"+StrikeCut)
		}
		for _, k := range want {
			if kinds[k] == 0 {
				t.Errorf("%s: no strike %s in seeds 1-40 (%v)", name, k, kinds)
			}
		}
	}
}
