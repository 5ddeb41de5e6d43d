package sim

import (
	"strconv"

	"github.com/shardlease/shardlease/engine"
)

// A mixed fleet (AssignmentMixed) is a rolling deploy from one assignment
// mode to the other in progress, and in a deploy a worker restarted under
// its owner id may come up in the other mode: half the restarts of a
// mixed fleet's slots switch the slot's mode. A process then meets, at
// its start-up scan, the rows its predecessor left in the other mode's
// state (a steal it never acted on, a pending assignment, a handoff mark)
// and must treat them as that mode's rules require. Worlds that are not
// mixed draw nothing here; the draws come from their own PRNG stream.

// streamMigrate is the PRNG stream of the mode switches at restarts.
const streamMigrate uint64 = 130

// switchOnRestart switches sl's mode, for the process about to start in
// it, with probability one half, in a mixed fleet, when sl has run a
// process before and no action has set its mode.
func (s *simulator) switchOnRestart(sl *slot) {
	if s.w.Assignment.Mode != AssignmentMixed || sl.proc < 0 || s.o.Scenario != "" && s.o.Scenario != "swarm" {
		return
	}
	r := newRNG(s.w.Seed^uint64(sl.idx+1)<<40^uint64(len(s.cl.procs)), streamMigrate)
	if !r.chance(0.5) {
		return
	}
	cur := sl.mode
	if cur == "" {
		cur = s.w.slotMode(sl.idx)
	}
	next := engine.AssignmentScan
	if cur == engine.AssignmentScan {
		next = engine.AssignmentAssigner
	}
	sl.mode = next
	s.fault("switch-mode w"+strconv.Itoa(sl.idx)+" to "+next+" at its restart", "")
}
