package sim

import (
	"fmt"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Targeted faults: in a share of the swarm's worlds, one kind of row or
// call alone is faulted, heavily, during the chaos, while the rest of the
// world works: the assigner row's writes and reads, the reads of the
// pending index, the hello rows, the stream marker, checkpoints, deletes,
// creates, takes, releases, renewals, scans or the reads of single rows.
// A fault class of the swarm strikes every call alike and at a low rate,
// so a path that only one kind of call takes (a worker that cannot say
// hello, an assigner whose row's renewals are throttled while everything
// else goes through) is rarely seen failing for long. The fault is one
// of:
//
//   - throttle: the call is throttled;
//   - errors: a 500, which for a write is of unknown outcome (it applied
//     half the time);
//   - loss: the request is lost half the time, else the reply;
//   - slow: the reply comes just under the call timeout.
//
// All are inside the assumptions. The targeted faults draw from their own
// PRNG streams: worlds without them draw exactly as before.

// The targets.
const (
	TargetAssignerRow  = "assigner-row"
	TargetPendingReads = "pending-reads"
	TargetHello        = "hello"
	TargetMarker       = "marker"
	TargetCheckpoints  = "checkpoints"
	TargetDeletes      = "deletes"
	TargetCreates      = "creates"
	TargetTakes        = "takes"
	TargetReleases     = "releases"
	TargetRenewals     = "renewals"
	TargetScans        = "scans"
	TargetRowReads     = "row-reads"
)

// Targets are the kinds of call a targeted fault can strike alone.
var Targets = []string{TargetAssignerRow, TargetPendingReads, TargetHello, TargetMarker, TargetCheckpoints, TargetDeletes,
	TargetCreates, TargetTakes, TargetReleases, TargetRenewals, TargetScans, TargetRowReads}

// The targeted fault kinds.
const (
	TargetThrottle = "throttle"
	TargetErrors   = "errors"
	TargetLoss     = "loss"
	TargetSlow     = "slow"
)

// TargetFaults are the targeted fault kinds.
var TargetFaults = []string{TargetThrottle, TargetErrors, TargetLoss, TargetSlow}

// TargetShare is the share of the swarm's worlds with a targeted fault.
const TargetShare = 0.25

// TargetWorld is the drawn targeted fault of a world.
type TargetWorld struct {
	On     bool
	Target string // one of Targets
	Fault  string // one of TargetFaults
	Rate   float64
}

func (t TargetWorld) String() string {
	if !t.On {
		return ""
	}
	return fmt.Sprintf("; targeted fault: %s of %.0f%% of the %s calls", t.Fault, 100*t.Rate, t.Target)
}

// drawTarget draws w's targeted fault (Options.Targeted; a swarm draws
// one for TargetShare of its worlds) from its own stream.
func (w *World) drawTarget(o Options, swarm bool) error {
	r := newRNG(o.Seed, streamTarget)
	t := &w.Target
	drawn := r.chance(TargetShare)
	switch o.Targeted {
	case "":
		t.On = swarm && drawn
	case "on":
		t.On = true
	case "off":
	default:
		return fmt.Errorf("sim: Targeted %q is not on or off (or empty: drawn by a swarm)", o.Targeted)
	}
	if o.pinTarget != nil {
		*t = *o.pinTarget
	}
	if !t.On {
		return nil
	}
	if o.pinTarget == nil {
		t.Target = Targets[r.IntN(len(Targets))]
		t.Fault = TargetFaults[r.IntN(len(TargetFaults))]
		t.Rate = r.rangeF(0.2, 0.9)
	}
	return nil
}

// targets reports whether call c (of write class reason) is of kind t.
func targets(t string, c *engine.Call, reason string) bool {
	key := leaseKey(c)
	switch t {
	case TargetAssignerRow:
		return key == engine.AssignerKey
	case TargetPendingReads:
		return c.Op == engine.OpListPending
	case TargetHello:
		return engine.IsWorkerRow(key)
	case TargetMarker:
		return engine.IsMarker(key)
	case TargetCheckpoints:
		return reason == trace.WriteCheckpoint
	case TargetDeletes:
		return c.Op == engine.OpDeleteLease
	case TargetCreates:
		return c.Op == engine.OpCreateLease && !engine.IsReserved(key)
	case TargetTakes:
		return reason == trace.WriteTake
	case TargetReleases:
		return reason == trace.WriteRelease || reason == trace.WriteShardEnd
	case TargetRenewals:
		return reason == trace.WriteRenew
	case TargetScans:
		return c.Op == engine.OpListLeases
	case TargetRowReads:
		return c.Op == engine.OpGetLease && !engine.IsReserved(key)
	}
	return false
}

// targetSend marks a store call of the world's target, sent now, with the
// targeted fault it meets (if it does); it reports whether its request is
// lost.
func (s *simulator) targetSend(f *inflight) bool {
	t := &s.w.Target
	if !t.On || s.healed || !f.call.Op.IsStore() || !targets(t.Target, &f.call, f.reason) {
		return false
	}
	r := s.aim.trng
	if !r.chance(t.Rate) {
		return false
	}
	f.aim.label = "targeted"
	switch t.Fault {
	case TargetThrottle:
		f.aim.throttle = true
	case TargetErrors:
		f.aim.transient = true
	case TargetLoss:
		if r.chance(0.5) {
			return true
		}
		f.aim.reply = aimReplyLost
	case TargetSlow:
		f.aim.reply = aimReplyLate
	}
	return false
}
