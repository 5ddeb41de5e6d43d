package sim

import (
	"strings"
	"testing"
	"time"
)

// TestBoundaryDraws: a swarm turns boundary seeking on for some worlds and
// off for others, Options.Boundary pins it, and a bad value is refused.
func TestBoundaryDraws(t *testing.T) {
	on := 0
	for seed := uint64(1); seed <= 20; seed++ {
		w, err := drawWorld(Options{Seed: seed, Faults: "swarm"})
		if err != nil {
			t.Fatal(err)
		}
		if w.Boundary.On {
			on++
			if !strings.Contains(w.String(), "boundary seeking: ") {
				t.Errorf("seed %d: the world's description does not show its knobs: %s", seed, w)
			}
		}
	}
	if on == 0 || on == 20 {
		t.Fatalf("%d of 20 swarm worlds seek boundaries: want some, not all", on)
	}
	if w, _ := drawWorld(Options{Seed: 1, Faults: "none", Boundary: "on"}); !w.Boundary.On {
		t.Error(`Boundary "on" did not turn it on outside a swarm`)
	}
	if w, _ := drawWorld(Options{Seed: 1, Faults: "swarm", Boundary: "off"}); w.Boundary.On {
		t.Error(`Boundary "off" left it on`)
	}
	if _, err := drawWorld(Options{Seed: 1, Boundary: "sometimes"}); err == nil {
		t.Error("a bad Boundary was accepted")
	}
}

// TestBoundaryOwnStream: the knobs draw from their own stream, so a world
// with them is the world without them plus its knobs (and the table's lag
// a crash after renewal needs). Combinations are off: one that seeks
// boundaries sets knobs of its own and is not drawn with them pinned off
// (TestCombosYieldToPins).
func TestBoundaryOwnStream(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		on, err := drawWorld(Options{Seed: seed, Faults: "swarm", Boundary: "on", Combo: "off"})
		if err != nil {
			t.Fatal(err)
		}
		off, err := drawWorld(Options{Seed: seed, Faults: "swarm", Boundary: "off", Combo: "off"})
		if err != nil {
			t.Fatal(err)
		}
		if on.Boundary.CrashAfterRenew > 0 && off.Rates.StaleLag == 0 {
			on.Rates.StaleLag = 0 // the lag the restarted process's scans read at
		}
		on.Boundary = BoundaryWorld{}
		if on.String() != off.String() {
			t.Fatalf("seed %d: boundary seeking changed the rest of the world:\n on: %s\noff: %s", seed, on, off)
		}
	}
}

// TestBoundaryInsideTheAssumptions: worlds that seek every boundary they
// drew pass with the engine as it is (the soak runs thousands).
func TestBoundaryInsideTheAssumptions(t *testing.T) {
	n := uint64(4)
	if testing.Short() {
		n = 2
	}
	for seed := uint64(1); seed <= n; seed++ {
		res, err := Run(Options{Seed: seed, Boundary: "on", Chaos: 90 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Errorf("seed %d with boundary seeking: %v", seed, res.Violations[0])
		}
	}
}
