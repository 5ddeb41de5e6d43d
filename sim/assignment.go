package sim

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// AssignmentWorld is how leases reach the workers of a run (engine
// Config.Assignment): every worker in one mode, or a mixed fleet (each
// worker slot draws its mode: a rolling deploy from one mode to the
// other in progress).
type AssignmentWorld struct {
	Mode  string // engine.AssignmentAssigner, engine.AssignmentScan or AssignmentMixed
	Slots []string
	// IndexLag is how far the table's pending index lags its rows.
	IndexLag time.Duration
}

// AssignmentMixed is the Options.Assignment of a fleet in which every
// worker slot draws its mode.
const AssignmentMixed = "mixed"

// drawAssignment draws w's assignment (Options.Assignment; a swarm draws
// the assigner for 7 worlds in 10, scan for 2, a mixed fleet for 1) and
// the index lag, from its own PRNG stream.
func (w *World) drawAssignment(o Options, swarm bool) error {
	r := newRNG(o.Seed, streamAssignment)
	a := &w.Assignment
	switch o.Assignment {
	case "":
		a.Mode = engine.AssignmentAssigner
		if swarm {
			switch x := r.Float64(); {
			case x < 0.2:
				a.Mode = engine.AssignmentScan
			case x < 0.3:
				a.Mode = AssignmentMixed
			}
		}
	case engine.AssignmentAssigner, engine.AssignmentScan, AssignmentMixed:
		a.Mode = o.Assignment
	default:
		return fmt.Errorf("sim: Assignment %q is not %s, %s or %s", o.Assignment, engine.AssignmentAssigner, engine.AssignmentScan, AssignmentMixed)
	}
	// DynamoDB's global secondary indexes lag their table by well under a
	// second; a stale-reads world lags more.
	a.IndexLag = r.between(0, 500*time.Millisecond).Round(time.Millisecond)
	if w.has("stale-reads") {
		a.IndexLag *= 5
	}
	return nil
}

// slotMode returns the assignment mode of worker slot i.
func (w *World) slotMode(i int) string {
	a := &w.Assignment
	if a.Mode != AssignmentMixed {
		return a.Mode
	}
	for len(a.Slots) <= i {
		r := newRNG(w.Seed^uint64(len(a.Slots)+1)<<32, streamAssignment)
		mode := engine.AssignmentAssigner
		if r.chance(0.5) {
			mode = engine.AssignmentScan
		}
		a.Slots = append(a.Slots, mode)
	}
	return a.Slots[i]
}

func (a AssignmentWorld) String() string {
	return fmt.Sprintf("; assignment %s (index lag %v)", a.Mode, a.IndexLag)
}

// ActSwitchMode sets, for worker slot Worker, how its next processes take
// leases (Target: engine.AssignmentAssigner or engine.AssignmentScan): with
// a rolling restart after it, a fleet migrates from one mode to the other.
const ActSwitchMode ActionKind = "switch-mode"

// switchMode carries out ActSwitchMode.
func (s *simulator) switchMode(a Action) {
	s.fault(a.String(), "")
	s.slotOf(a.Worker).mode = a.Target
}
