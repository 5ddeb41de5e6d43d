package sim

import (
	"strings"
	"testing"
)

// TestCombosYieldToPins: boundary seeking pinned off, or aimed or targeted
// faults pinned on, hold in every swarm world (a combination that would
// override the pin is not drawn), and pinning such a combination with
// them is refused with the pin named. A combination that claims no
// override leaves each pin as it is.
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
		if w, _ := drawWorld(Options{Seed: seed, Faults: "swarm", Aim: "on"}); !w.Aim.On {
			t.Errorf("seed %d: aimed faults pinned on are off (combination %q)", seed, w.Combo.Name)
		}
		if w, _ := drawWorld(Options{Seed: seed, Faults: "swarm", Targeted: "on"}); !w.Target.On {
			t.Errorf("seed %d: a targeted fault pinned on is off (combination %q)", seed, w.Combo.Name)
		}
	}
	for _, c := range Combos {
		if drawn[c.Name] == 0 {
			t.Errorf("combination %s: drawn by none of swarm seeds 1-300", c.Name)
		}
		pins := []struct {
			o        Options
			override bool
			holds    func(w *World) bool
		}{
			{Options{Boundary: "off"}, c.boundary, func(w *World) bool { return !w.Boundary.On }},
			{Options{Aim: "on"}, c.calms, func(w *World) bool { return w.Aim.On }},
			{Options{Targeted: "on"}, c.calms, func(w *World) bool { return w.Target.On }},
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
					t.Errorf("%s: the combination overrides the pin and does not say so (set its boundary or calms field)", ReplayCommand(o))
				}
			}
		}
	}
}
