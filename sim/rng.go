package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Independent PRNG streams derived from the run seed, one per concern, so
// that changing how one concern draws does not reshuffle the others.
const (
	streamConfig uint64 = iota + 1
	streamWorkload
	streamNetwork
	streamFaults
	streamProcessor
	streamEngine
	streamClock
	streamFanOut
	streamAssignment
	streamClockSteps   // clock steps aimed at a new process's first observations
	streamKPL          // the world's KPL workload (kpl.go)
	streamKPLPuts      // (retired: the stream generates the aggregates)
	streamKPLProcessor // the processor's checkpoints inside aggregates
	streamBoundary     // boundary seeking (boundary.go)
	streamAim          // the world's aimed faults (aim.go)
	streamAimRun       // the aimed faults' draws as the run goes
	streamTarget       // the world's targeted fault (targeted.go)
	streamTargetRun    // the targeted fault's draws as the run goes
	streamOptions      // the engine options config.go draws
	streamCombo        // the world's combination (combos.go)
	streamComboRun     // the combination's actions
	streamCorrupt      // which KPL aggregates are corrupt (corrupt.go)
	streamSecond       // (retired: the second stream's records are generated)
	streamDefaults     // whether a world keeps the engine's default timings (config.go)
	streamLegacy       // a legacy table's rows and records (legacy.go)
)

// Streams with explicit values (not in the list above, so that nothing
// there reshuffles).
const (
	// 120: kept for a sync race world stream (the combination's world
	// draws from the combination's stream)
	streamSyncRaceRun uint64 = 121 // the sync races' draws as the run goes (syncrace.go)
	streamStrike      uint64 = 100 // the strikes at the assigner as the run goes (strike.go)
	streamStealRun    uint64 = 130 // the strikes of the combination steal-release as the run goes (combos_steal.go)
	streamRenewal     uint64 = 140 // the world's renewal, per lease or by session (renewal.go)
)

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// rng is a seeded PCG stream with a few helpers.
type rng struct{ *rand.Rand }

func newRNG(seed, stream uint64) rng {
	return rng{rand.New(rand.NewPCG(splitmix(seed^splitmix(stream)), splitmix(stream*0x9e3779b97f4a7c15+seed)))}
}

func (r rng) chance(p float64) bool { return p > 0 && r.Float64() < p }

// between returns a uniform duration in [lo, hi].
func (r rng) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// exp returns an exponential duration with the given mean.
func (r rng) exp(mean time.Duration) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(mean))
}

// rangeF returns a uniform float in [lo, hi).
func (r rng) rangeF(lo, hi float64) float64 { return lo + r.Float64()*(hi-lo) }

// logUniform returns a log-uniform duration in [lo, hi].
func (r rng) logUniform(lo, hi time.Duration) time.Duration {
	if hi <= lo || lo <= 0 {
		return lo
	}
	return time.Duration(math.Exp(r.rangeF(math.Log(float64(lo)), math.Log(float64(hi)))))
}

func (r rng) intIn(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + r.IntN(hi-lo+1)
}
