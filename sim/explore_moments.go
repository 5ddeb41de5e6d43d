package sim

import (
	"slices"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Moments: the windows of a run's multi-write operations (ops.go), kept
// for the explorer. A run the explorer executes records, for a sample of
// the windows its operations opened in the chaos phase, when the window
// opened and closed and which worker the next step waits on; the
// explorer's mutation "aim-window" then adds a fault of that worker at a
// time inside the window. A world runs the same up to its first
// scheduled action, so a fault added inside a window of the parent's run
// lands inside that window: the aimed faults of aim.go do the same within
// one run, for the worlds that draw them.

// OpMoment is one window of an operation: between two of its steps, from
// From to To (true times), whose next step was up to worker slot Worker.
type OpMoment struct {
	Kind   string        `json:"kind"`
	From   time.Duration `json:"from"`
	To     time.Duration `json:"to"`
	Worker int           `json:"worker"`
}

// maxMoments bounds the moments a run keeps: past it every other one is
// dropped and only every second one after is kept, and so on, so that
// the sample spans the whole chaos phase.
const maxMoments = 128

// momentLog is a run's sample of moments.
type momentLog struct {
	on     bool
	kept   []OpMoment
	seen   int
	stride int
}

// noteWindow records the window of in that closes now (its next step, or
// its end), if the run keeps moments and the window lies in the chaos
// phase.
func (s *simulator) noteWindow(in *opInst) {
	m := &s.ops.moments
	if !m.on || in.at < 0 || in.tslot < 0 || s.healed || in.at < time.Second {
		return
	}
	if m.stride == 0 {
		m.stride = 1
	}
	m.seen++
	if m.seen%m.stride != 0 {
		return
	}
	m.kept = append(m.kept, OpMoment{Kind: OpKinds[in.kind], From: in.at, To: s.now, Worker: in.tslot})
	if len(m.kept) > maxMoments {
		n := 0
		for i := 1; i < len(m.kept); i += 2 {
			m.kept[n] = m.kept[i]
			n++
		}
		m.kept = m.kept[:n]
		m.stride *= 2
	}
}

// windowTarget is the worker slot the window of in that opens now waits
// on: the holder asked to hand a lease over, the receiver of a release,
// otherwise the process of the step that opened it (-1: none alive).
func (s *simulator) windowTarget(in *opInst) int {
	if !s.ops.moments.on {
		return -1
	}
	owner := ""
	if in.kind == okHandoff {
		switch in.steps {
		case 1:
			if l, _, ok := s.tbl.Current(in.key); ok { // not s.row: a read that draws no fault
				owner = l.Owner
			}
		case 2:
			owner = in.receiver
		}
	}
	if owner != "" && owner != engine.AssignerPending {
		for _, sl := range s.cl.slots {
			if p := s.live(sl); p != nil && p.owner == owner && !sl.dup {
				return sl.idx
			}
		}
	}
	if in.proc >= 0 && int(in.proc) < len(s.cl.procs) {
		if p := s.cl.procs[in.proc]; p.alive {
			return s.cl.slots[p.slot].idx
		}
	}
	return -1
}

// aimWindow draws a moment of sh (each operation kind as likely as any
// other, so that the rare kinds are not drowned by the frequent ones) and
// returns a crash, pause, table cut or clog of its worker at a time inside
// its window. ok is false when sh has no moment of a worker among the
// initial slots.
func aimWindow(sh WorldShape, r rng, workers int, clamp func(time.Duration) time.Duration) (Action, string, bool) {
	var ms []OpMoment
	for _, m := range sh.Moments {
		if m.Worker >= 0 && m.Worker < workers && m.To >= m.From {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return Action{}, "", false
	}
	var kinds []string
	for _, m := range ms {
		if !slices.Contains(kinds, m.Kind) {
			kinds = append(kinds, m.Kind)
		}
	}
	k := kinds[r.IntN(len(kinds))]
	var of []OpMoment
	for _, m := range ms {
		if m.Kind == k {
			of = append(of, m)
		}
	}
	m := of[r.IntN(len(of))]
	at := m.From + time.Millisecond
	if m.To-m.From > 2*time.Millisecond {
		at = r.between(m.From+time.Millisecond, m.To)
	}
	at = clamp(at)
	ld := sh.LeaseDuration
	var a Action
	switch r.IntN(4) {
	case 0:
		a = Action{At: at, Kind: ActCrash, Worker: m.Worker, NewOwner: r.chance(0.5), Dur: r.between(500*time.Millisecond, 2*ld).Round(time.Millisecond)}
	case 1:
		a = Action{At: at, Kind: ActPause, Worker: m.Worker, Dur: r.logUniform(10*time.Millisecond, 2*ld).Round(time.Millisecond)}
	case 2:
		a = Action{At: at, Kind: ActPartition, Workers: []int{m.Worker}, Target: "table", Dir: []string{"both", "request", "reply"}[r.IntN(3)],
			Dur: r.logUniform(200*time.Millisecond, 2*ld).Round(time.Millisecond)}
	default:
		a = Action{At: at, Kind: ActClog, Workers: []int{m.Worker}, Target: "table",
			Extra: r.between(200*time.Millisecond, 3*time.Second).Round(time.Millisecond), Dur: r.logUniform(time.Second, 2*ld).Round(time.Millisecond)}
	}
	return a, "aim-window " + a.String() + " inside a " + m.Kind + " window (" + m.From.Round(time.Millisecond).String() + ".." + m.To.Round(time.Millisecond).String() + ")", true
}
