package sim

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// faultState is the run's fault schedule and what its actions left in
// force: the reasons the run is outside the assumptions, paused
// processes, and the slot an action aimed at a shard's owner resolved to.
type faultState struct {
	rng         rng
	steps       rng // clock steps early in a process's life (stepAfterStart)
	schedule    []Action
	drawn       []Action // the schedule drawn for the fault classes, or Options.Schedule
	outside     []string
	faultWorker int32 // see simulator.fault
	lastPauseID uint64
	pauseProc   map[uint64]int32
}

// internal action kinds (printed in the schedule too)
const (
	actHealLink ActionKind = "heal-link"
)

// later schedules an action the run itself decides on (a restart, the end
// of a partition) and lists it in the schedule.
func (s *simulator) later(a Action) {
	s.q.push(event{at: a.At, kind: evAction, a: uint64(len(s.fs.schedule))})
	s.fs.schedule = append(s.fs.schedule, a)
}

// midActSlack is the longest mid-act pause that stays inside the
// assumptions: the part of the safety margin that drift does not use.
func (s *simulator) midActSlack() time.Duration {
	used := engine.MinSafetyMargin(s.full.LeaseDuration, 2*s.w.DriftBound)
	return (s.full.SafetyMargin - used) / 2
}

// stepAfterStart, in a clock-steps world during the chaos, steps the wall
// clock of a process that has just started, half the time, within one
// and a half lease durations: inside the observation windows of its first
// scans, when a new worker is below its share and takes what it takes
// for expired. By a second to six hours, forward or back, stepped back
// again a third of the time. It draws from its own stream.
func (s *simulator) stepAfterStart(sl *slot) {
	r := s.fs.steps
	if s.healed || !s.w.has("clock-steps") || !r.chance(0.5) {
		return
	}
	ld := s.full.LeaseDuration
	a := Action{At: s.now + r.between(0, ld*3/2).Round(time.Millisecond), Kind: ActClockStep, Worker: sl.idx,
		Extra: r.logUniform(time.Second, 6*time.Hour).Round(time.Millisecond)}
	if r.chance(0.5) {
		a.Extra = -a.Extra
	}
	if r.chance(1.0 / 3) {
		a.Dur = r.between(ld/10, 2*ld).Round(time.Millisecond)
	}
	if a.At < s.w.Chaos {
		s.later(a)
	}
}

// drawSchedule draws the timed faults of the chaos phase.
func (s *simulator) drawSchedule() []Action {
	r := s.fs.rng
	w := s.w
	var out []Action
	at := func() time.Duration { return r.between(time.Second, w.Chaos-time.Second).Round(time.Millisecond) }
	n := func(lo, hi int) int { return r.intIn(lo, hi) }
	worker := func() int { return r.IntN(w.Workers) }
	group := func() []int {
		if w.Workers == 1 || r.chance(0.5) {
			return []int{worker()}
		}
		var g []int
		for i := 0; i < w.Workers; i++ {
			if r.chance(0.5) {
				g = append(g, i)
			}
		}
		if len(g) == 0 {
			g = []int{worker()}
		}
		return g
	}
	target := func() string { return []string{"table", "stream", "both", "both"}[r.IntN(4)] }
	ld := s.full.LeaseDuration
	for _, c := range w.Faults {
		switch c {
		case "clock-steps":
			// Any worker's wall clock steps, forward or back, by a second
			// to six hours: a drawn worker, or the one in a role when the
			// step comes (the assigner, a holder, an observer of another's
			// lease: a taker in scan mode). A third of the steps are
			// stepped back again within two lease durations, as an NTP
			// correction does, so that a taker's observation window holds
			// both ends of the step.
			for i := n(2, 2+3*w.Workers); i > 0; i-- {
				d := r.logUniform(time.Second, 6*time.Hour).Round(time.Millisecond)
				if r.chance(0.5) {
					d = -d
				}
				a := Action{At: at(), Kind: ActClockStep, Worker: worker(), Extra: d}
				switch r.IntN(5) {
				case 0:
					a.Role = RoleAssigner
				case 1:
					a.Role = RoleHolder
				case 2, 3:
					a.Role = RoleObserver
				}
				if r.chance(1.0 / 3) {
					a.Dur = r.between(ld/10, 2*ld).Round(time.Millisecond)
				}
				out = append(out, a)
			}
		case "partition":
			for i := n(1, 4); i > 0; i-- {
				dir := []string{"both", "both", "both", "request", "reply"}[r.IntN(5)]
				out = append(out, Action{At: at(), Kind: ActPartition, Workers: group(), Target: target(), Dir: dir, Dur: r.logUniform(time.Second, 3*ld).Round(time.Millisecond)})
			}
		case "clog":
			for i := n(1, 4); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActClog, Workers: group(), Target: target(), Extra: r.between(200*time.Millisecond, 3*time.Second).Round(time.Millisecond), Dur: r.logUniform(time.Second, 3*ld).Round(time.Millisecond)})
			}
		case "crash":
			for i := n(1, w.Workers+1); i > 0; i-- {
				a := Action{At: at(), Kind: ActCrash, Worker: worker(), NewOwner: r.chance(0.5)}
				if r.chance(0.8) {
					a.Dur = r.between(500*time.Millisecond, 3*ld).Round(time.Millisecond)
				}
				out = append(out, a)
			}
		case "pause":
			slack := s.midActSlack()
			for i := n(1, 4); i > 0; i-- {
				a := Action{At: at(), Kind: ActPause, Worker: worker()}
				if slack > time.Millisecond && r.chance(0.5) {
					a.MidAct = true
					a.Dur = r.between(time.Millisecond, slack).Round(time.Millisecond)
				} else {
					a.Dur = r.logUniform(10*time.Millisecond, 3*ld).Round(time.Millisecond)
				}
				out = append(out, a)
			}
		case "long-pause":
			out = append(out, Action{At: at(), Kind: ActPause, Worker: worker(), MidAct: true, Dur: r.between(s.full.SafetyMargin, 2*ld).Round(time.Millisecond)})
		case "shutdown":
			for i := n(1, 3); i > 0; i-- {
				a := Action{At: at(), Kind: ActShutdown, Worker: worker()}
				if r.chance(0.8) {
					a.Dur = r.between(time.Second, 2*ld).Round(time.Millisecond)
				}
				out = append(out, a)
			}
		case "scale":
			for i := n(1, 3); i > 0; i-- {
				if r.chance(0.5) {
					out = append(out, Action{At: at(), Kind: ActScaleOut})
				} else {
					out = append(out, Action{At: at(), Kind: ActScaleIn, Worker: worker()})
				}
			}
		case "rolling":
			t0 := at()
			gap := r.between(ld/2, 2*ld).Round(time.Millisecond)
			for i := 0; i < w.Workers; i++ {
				t := t0 + time.Duration(i)*gap
				if t < w.Chaos {
					out = append(out, Action{At: t, Kind: ActShutdown, Worker: i, Dur: r.between(time.Second, 5*time.Second).Round(time.Millisecond)})
				}
			}
		case "table-throttle":
			for i := n(1, 3); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActTableThrottle, Dur: r.between(time.Second, 2*ld).Round(time.Millisecond), Value: r.rangeF(0.3, 1)})
			}
		case "stream-throttle":
			for i := n(1, 3); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActStreamThrottle, Dur: r.between(time.Second, 2*ld).Round(time.Millisecond), Value: r.rangeF(0.3, 1)})
			}
		case "split":
			for i := n(1, 4); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActSplit})
			}
		case "merge":
			for i := n(1, 4); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActMerge})
			}
		case "bursts":
			for i := n(1, 3); i > 0; i-- {
				out = append(out, Action{At: at(), Kind: ActBurst, Dur: r.between(2*time.Second, 30*time.Second).Round(time.Millisecond), Value: r.rangeF(3, 20)})
			}
		case "dup-owner":
			out = append(out, Action{At: at(), Kind: ActDupOwner, Worker: worker()})
		}
	}
	if w.has("drift-beyond") {
		s.fs.outside = append(s.fs.outside, fmt.Sprintf("clock drift up to ±%.4f beyond the configured bound %.4f", w.DriftBound, s.full.MaxClockDrift))
	}
	return out
}
