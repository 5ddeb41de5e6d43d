package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// TestHandoffCombosDraw pins what the handoff races (combos_handoff.go)
// draw: a small assigner fleet that balances (no cap, one or two moved at
// a time), a quiet world (no random fault class but reshards, bursts,
// slow processors, idle shards and retention), scale-outs within the
// chaos (crash-join: each after a crash or pause of the busiest member for
// two lease durations or more; join-balance: slow processors).
func TestHandoffCombosDraw(t *testing.T) {
	for _, c := range []struct {
		name           string
		workers        [2]int
		shards         int
		joins          [2]int
		slowProcessors bool
	}{
		{"crash-join", [2]int{2, 4}, 8, [2]int{3, 6}, false},
		{"join-balance", [2]int{2, 3}, 12, [2]int{2, 8}, true},
	} {
		for seed := uint64(1); seed <= 30; seed++ {
			o := Options{Seed: seed, Faults: "swarm", Combo: c.name}
			w, err := drawWorld(o)
			if err != nil {
				t.Fatalf("%s: %v", ReplayCommand(o), err)
			}
			e := w.Engine
			switch {
			case w.Combo.Name != c.name:
				t.Errorf("%s: combination %q", ReplayCommand(o), w.Combo.Name)
			case w.Assignment.Mode != engine.AssignmentAssigner || w.Workers < c.workers[0] || w.Workers > c.workers[1] || w.Shards < c.shards:
				t.Errorf("%s: mode %v, %d workers, %d shards", ReplayCommand(o), w.Assignment.Mode, w.Workers, w.Shards)
			case e.MaxLeasesForWorker != 0 || e.MaxLeasesToStealAtOnce < 1 || e.MaxLeasesToStealAtOnce > 2:
				t.Errorf("%s: cap %d, steal %d", ReplayCommand(o), e.MaxLeasesForWorker, e.MaxLeasesToStealAtOnce)
			case slices.ContainsFunc(w.Faults, func(f string) bool {
				return !slices.Contains([]string{"split", "merge", "bursts", "slow-processor", "idle-shards", "retention"}, f)
			}):
				t.Errorf("%s: fault classes %v", ReplayCommand(o), w.Faults)
			case c.slowProcessors && (!w.has("slow-processor") || w.Rates.SlowProcessor < 0.1):
				t.Errorf("%s: slow processors %v", ReplayCommand(o), w.Rates.SlowProcessor)
			}
			full, err := w.engineConfig("probe", 1).Validate()
			if err != nil {
				t.Fatal(err)
			}
			s := &simulator{o: o, w: w, full: full}
			n := 0
			for _, x := range s.comboSchedule() {
				switch {
				case x.Kind == ActScaleOut && x.At >= 5*time.Second && x.At < w.Chaos:
					n++
				case c.name == "crash-join" && (x.Kind == ActCrash || x.Kind == ActPause) && x.Role == RoleMember &&
					x.Dur >= 2*full.LeaseDuration && (x.Kind == ActPause || x.NewOwner):
				default:
					t.Errorf("%s: action %v", ReplayCommand(o), x)
				}
			}
			if n > c.joins[1] || (n < c.joins[0] && c.name == "crash-join" && w.Chaos >= 120*time.Second) {
				t.Errorf("%s: %d scale-outs", ReplayCommand(o), n)
			}
		}
	}
}
