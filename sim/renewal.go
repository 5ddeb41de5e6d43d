package sim

import (
	"fmt"

	"github.com/shardlease/shardlease/engine"
)

// RenewalWorld is how the world's workers keep their leases valid (engine
// Config.Renewal): every assigner-mode worker per lease (the default of
// the simulator's worlds) or by its session, a fleet in which each worker
// slot draws one (a rolling deploy from one to the other in progress), or
// every worker of the engine's default, RenewalAuto (by session unless its
// start-up scan shows a KCL worker's row). Scan-mode workers always renew
// per lease (the engine rejects sessions with scans).
type RenewalWorld struct {
	Mode string // "" (per lease), engine.RenewalSession, RenewalMixed or engine.RenewalAuto
}

// RenewalMixed is the Options.Renewal of a fleet in which every
// assigner-mode worker slot draws its renewal.
const RenewalMixed = "mixed"

// The shares of the swarm's renewal draw (drawRenewal).
const (
	shareSession      = 0.25
	shareSessionMixed = 0.05
	shareAuto         = 0.05
)

// drawRenewal draws w's renewal (Options.Renewal; a swarm draws sessions
// for shareSession of its worlds, a mixed fleet for shareSessionMixed and
// the engine's default, RenewalAuto, for shareAuto)
// from its own PRNG stream, drawn after every other draw, so that worlds
// that renew per lease are drawn exactly as before.
func (w *World) drawRenewal(o Options, swarm bool) error {
	switch o.Renewal {
	case "":
		if !swarm || w.Renewal.Mode != "" {
			// (a combination that renews by session says so: its world
			// keeps it)
			return nil
		}
		r := newRNG(o.Seed, streamRenewal)
		switch x := r.Float64(); {
		case x < shareSession:
			w.Renewal.Mode = engine.RenewalSession
		case x < shareSession+shareSessionMixed:
			w.Renewal.Mode = RenewalMixed
		case x < shareSession+shareSessionMixed+shareAuto:
			w.Renewal.Mode = engine.RenewalAuto
		}
	case engine.RenewalPerLease:
	case engine.RenewalSession, RenewalMixed, engine.RenewalAuto:
		w.Renewal.Mode = o.Renewal
	default:
		return fmt.Errorf("sim: Renewal %q is not %s, %s, %s or %s", o.Renewal, engine.RenewalPerLease, engine.RenewalSession, RenewalMixed, engine.RenewalAuto)
	}
	return nil
}

// slotRenewal returns the renewal of worker slot i in the world's mode
// (per lease, said explicitly: the engine's own default is RenewalAuto).
func (w *World) slotRenewal(i int) string {
	switch w.Renewal.Mode {
	case engine.RenewalSession, engine.RenewalAuto:
		return w.Renewal.Mode
	case RenewalMixed:
		if newRNG(w.Seed^uint64(i+1)<<32, streamRenewal).chance(0.5) {
			return engine.RenewalSession
		}
	}
	return engine.RenewalPerLease
}

func (r RenewalWorld) String() string {
	if r.Mode == "" {
		return ""
	}
	return "; renewal " + r.Mode
}
