package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// WorldShape is what the explorer's mutations need to know of a world's
// drawn knobs to keep a mutated schedule valid and inside the engine's
// assumptions: the initial workers, the chaos phase, the lease duration
// and the longest mid-act pause that stays inside (midActSlack).
type WorldShape struct {
	Workers       int           `json:"workers"`
	Chaos         time.Duration `json:"chaos"`
	LeaseDuration time.Duration `json:"lease_duration"`
	Slack         time.Duration `json:"slack"`
	// Faults are the fault classes the world drew (or was given).
	Faults []string `json:"faults,omitempty"`
	// Combo is the combination the world drew ("" none): Slack is that
	// world's, and does not hold once a mutation sets another.
	Combo string `json:"combo,omitempty"`
	// Moments are a sample of its run's operation windows, which the
	// mutation aim-window aims at (explore_moments.go).
	Moments []OpMoment `json:"moments,omitempty"`
}

// ShapeOf returns the shape of a run's world.
func ShapeOf(res *Result) WorldShape {
	w := res.World
	full, err := w.probeConfig().Validate()
	sh := WorldShape{Workers: w.Workers, Chaos: w.Chaos, LeaseDuration: full.LeaseDuration, Faults: slices.Clone(w.Faults), Combo: w.Combo.Name,
		Moments: slices.Clone(res.Moments)}
	if err == nil {
		used := engine.MinSafetyMargin(full.LeaseDuration, 2*w.DriftBound)
		sh.Slack = max(0, (full.SafetyMargin-used)/2)
	}
	if sh.LeaseDuration <= 0 {
		sh.LeaseDuration = engine.DefaultLeaseDuration
	}
	return sh
}

// MutationOps are the explorer's schedule mutations.
var MutationOps = []string{"shift", "retarget", "stretch", "stack", "add", "drop", "edge-pause", "toggle", "aim-window"}

// toggles are the world overrides the op "toggle" sets, each to one of
// its values (the empty one: drawn from the seed).
var toggles = []struct {
	name   string
	values []string
	set    func(*WorldSpec, string)
}{
	{"aim", []string{"on", "off"}, func(w *WorldSpec, v string) { w.Aim = v }},
	{"targeted", []string{"on", "off"}, func(w *WorldSpec, v string) { w.Targeted = v }},
	{"boundary", []string{"on", "off"}, func(w *WorldSpec, v string) { w.Boundary = v }},
	{"options", []string{"on", "off"}, func(w *WorldSpec, v string) { w.Options = v }},
	{"assignment", []string{"assigner", "scan", "mixed"}, func(w *WorldSpec, v string) { w.Assignment = v }},
	{"consumer", []string{"polling", "fan-out"}, func(w *WorldSpec, v string) { w.Consumer = v }},
	{"store", []string{"dynamodb", "etcd"}, func(w *WorldSpec, v string) { w.Store = v }},
	{"combo", nil, func(w *WorldSpec, v string) { w.Combo = v }},
	{"faults", nil, nil}, // one more fault class among the drawn ones
}

// rateClasses are fault classes without timed actions: adding one to a
// world's classes adds no action that a schedule would have to hold.
var rateClasses = []string{"latency", "loss", "dup", "table-errors", "stale-reads", "expired-iterators", "slow-processor", "failed-batches", "idle-shards"}

// targetable kinds take a Role (and a Worker).
func targetable(k ActionKind) bool {
	return k == ActCrash || k == ActPause || k == ActShutdown || k == ActClockStep
}

// Mutate returns a copy of w (whose Schedule is explicit: Replace) with
// one mutation op applied, drawn from r, and the op's description. The
// result is a valid world of the same shape: times inside the chaos
// phase, workers among the initial slots, mid-act pauses within the
// slack, so that a mutated world stays inside the assumptions when its
// parent did.
func Mutate(w WorldSpec, sh WorldShape, r rng) (WorldSpec, string) {
	w.Replace = true
	w.Schedule = slices.Clone(w.Schedule)
	for i := range w.Schedule {
		w.Schedule[i].Workers = slices.Clone(w.Schedule[i].Workers)
	}
	ld := sh.LeaseDuration
	chaos := max(sh.Chaos, 3*time.Second)
	clamp := func(t time.Duration) time.Duration {
		return min(max(t, time.Second), chaos-time.Second).Round(time.Millisecond)
	}
	workers := max(sh.Workers, 1)
	if !sameCombo(w.Combo, sh.Combo) {
		sh.Slack = 0 // an earlier mutation set another combination: its slack is unknown here
	}
	op := MutationOps[r.IntN(len(MutationOps))]
	if len(w.Schedule) == 0 && op != "add" && op != "edge-pause" && op != "toggle" && op != "aim-window" {
		op = "add"
	}
	pick := func() int { return r.IntN(len(w.Schedule)) }
	switch op {
	case "shift":
		i := pick()
		d := r.between(ld/10, ld)
		if r.chance(0.25) {
			d = r.between(ld, 3*ld)
		}
		if r.chance(0.5) {
			d = -d
		}
		w.Schedule[i].At = clamp(w.Schedule[i].At + d)
		sortSchedule(w.Schedule)
		return w, fmt.Sprintf("shift #%d by %v", i, d.Round(time.Millisecond))
	case "retarget":
		i := pick()
		a := &w.Schedule[i]
		switch {
		case targetable(a.Kind):
			roles := []string{RoleHolder, RoleAssigner, RoleObserver, ""}
			roles = slices.DeleteFunc(roles, func(s string) bool { return s == a.Role })
			a.Role = roles[r.IntN(len(roles))]
			a.Shard = ""
			if a.Role == "" {
				a.Worker = r.IntN(workers)
			}
			return w, fmt.Sprintf("retarget #%d %s to %s", i, a.Kind, roleName(a.Role, a.Worker))
		case len(a.Workers) > 0:
			a.Workers = []int{r.IntN(workers)}
			return w, fmt.Sprintf("retarget #%d %s to w%d", i, a.Kind, a.Workers[0])
		}
		a.Worker = r.IntN(workers)
		return w, fmt.Sprintf("retarget #%d %s to w%d", i, a.Kind, a.Worker)
	case "stretch":
		i := pick()
		a := &w.Schedule[i]
		f := r.rangeF(0.25, 4)
		if a.Dur == 0 {
			a.Dur = r.between(time.Second, 2*ld)
		} else {
			a.Dur = time.Duration(float64(a.Dur) * f)
		}
		a.Dur = a.Dur.Round(time.Millisecond)
		if a.MidAct && a.Kind == ActPause {
			a.Dur = min(a.Dur, sh.Slack).Truncate(time.Millisecond)
		}
		a.Dur = max(a.Dur, time.Millisecond)
		if a.Kind == ActPause && a.MidAct && sh.Slack < time.Millisecond {
			a.MidAct = false
		}
		return w, fmt.Sprintf("stretch #%d %s to %v", i, a.Kind, a.Dur)
	case "stack":
		i := pick()
		b := w.Schedule[i]
		b.Workers = slices.Clone(b.Workers)
		b.At = clamp(b.At + r.between(0, ld/2))
		if targetable(b.Kind) && r.chance(0.5) {
			b.Role, b.Shard = []string{RoleHolder, RoleAssigner, RoleObserver}[r.IntN(3)], ""
		}
		w.Schedule = append(w.Schedule, b)
		sortSchedule(w.Schedule)
		return w, fmt.Sprintf("stack a %s on #%d at %v", b.Kind, i, b.At)
	case "drop":
		i := pick()
		k := w.Schedule[i].Kind
		w.Schedule = slices.Delete(w.Schedule, i, i+1)
		if len(w.Schedule) == 0 {
			w.Schedule = nil
		}
		return w, fmt.Sprintf("drop #%d %s", i, k)
	case "toggle":
		if w2, how := toggle(w, sh.Faults, r); how != "" {
			return w2, how
		}
	case "aim-window":
		// a fault of the worker an operation's window waits on, inside
		// that window of the parent's run (explore_moments.go)
		if a, how, ok := aimWindow(sh, r, workers, clamp); ok {
			w.Schedule = append(w.Schedule, a)
			sortSchedule(w.Schedule)
			return w, how
		}
	case "edge-pause":
		// a mid-act pause of the holder (or assigner) just inside the
		// slack: the step in progress lands at the edge of the margin
		if sh.Slack < 2*time.Millisecond {
			break
		}
		a := Action{At: clamp(r.between(time.Second, chaos)), Kind: ActPause, Role: RoleHolder, MidAct: true,
			Dur: max(time.Millisecond, time.Duration(float64(sh.Slack)*r.rangeF(0.8, 1)).Truncate(time.Millisecond))}
		if r.chance(0.3) {
			a.Role = RoleAssigner
		}
		w.Schedule = append(w.Schedule, a)
		sortSchedule(w.Schedule)
		return w, fmt.Sprintf("edge-pause the %s at %v for %v", a.Role, a.At, a.Dur)
	}
	a := drawAction(r, workers, ld, sh.Slack, clamp(r.between(time.Second, chaos)))
	w.Schedule = append(w.Schedule, a)
	sortSchedule(w.Schedule)
	return w, "add " + a.String()
}

// comboRefused reports whether the combination named name would override
// what w pins (boundary seeking, aimed or targeted faults): a world the
// simulator refuses to run.
func comboRefused(name string, w WorldSpec) bool {
	for i := range Combos {
		if c := &Combos[i]; c.Name == name {
			return c.overrides(Options{Boundary: w.Boundary, Aim: w.Aim, Targeted: w.Targeted}) != ""
		}
	}
	return false
}

// sameCombo reports whether a world spec's Combo option ("" drawn, "off"
// none, or a name) leaves the combination drawn, a world of which had
// combination drawn ("" none).
func sameCombo(opt, drawn string) bool {
	switch opt {
	case "":
		return true
	case "off":
		return drawn == ""
	}
	return opt == drawn
}

// toggle sets one of the world's overrides (toggles), or adds a rate
// fault class to the classes it has (those of shape, or, for a fresh
// seed, none: the faults toggle is skipped then). It returns "" if it did
// nothing.
func toggle(w WorldSpec, classes []string, r rng) (WorldSpec, string) {
	t := toggles[r.IntN(len(toggles))]
	switch t.name {
	case "faults":
		var more []string
		for _, c := range rateClasses {
			if !slices.Contains(classes, c) {
				more = append(more, c)
			}
		}
		if len(more) == 0 || len(classes) == 0 {
			return w, ""
		}
		c := more[r.IntN(len(more))]
		w.Faults = strings.Join(append(slices.Clone(classes), c), ",")
		return w, "faults +" + c
	case "combo":
		v := "off"
		if i := r.IntN(len(Combos) + 1); i < len(Combos) {
			v = Combos[i].Name
		}
		if comboRefused(v, w) {
			return w, "" // it would override what the world pins: a world the simulator refuses
		}
		t.set(&w, v)
		// a combination may set other lease timings: the shape's slack
		// for mid-act pauses is not the new world's, so its pauses land
		// where they fall rather than mid-act (seed 7: 70 ms against a
		// slack of 69.76 ms)
		for i := range w.Schedule {
			if a := &w.Schedule[i]; a.MidAct && a.Kind == ActPause {
				a.MidAct = false
			}
		}
		return w, "combo " + v
	}
	v := t.values[r.IntN(len(t.values))]
	before := w
	t.set(&w, v)
	if comboRefused(w.Combo, w) {
		return before, "" // the world's pinned combination would override it: a world the simulator refuses
	}
	return w, t.name + " " + v
}

func roleName(role string, worker int) string {
	if role == "" {
		return fmt.Sprintf("w%d", worker)
	}
	return "the " + role
}

func sortSchedule(s []Action) {
	slices.SortStableFunc(s, func(a, b Action) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
}

// drawAction draws one fault inside the assumptions at time at.
func drawAction(r rng, workers int, ld, slack, at time.Duration) Action {
	roles := []string{"", RoleHolder, RoleAssigner, RoleObserver}
	switch r.IntN(7) {
	case 0:
		a := Action{At: at, Kind: ActCrash, Worker: r.IntN(workers), Role: roles[r.IntN(4)], NewOwner: r.chance(0.5)}
		if r.chance(0.8) {
			a.Dur = r.between(500*time.Millisecond, 3*ld).Round(time.Millisecond)
		}
		return a
	case 1:
		a := Action{At: at, Kind: ActPause, Worker: r.IntN(workers), Role: roles[r.IntN(4)]}
		if slack > time.Millisecond && r.chance(0.5) {
			a.MidAct, a.Dur = true, r.between(time.Millisecond, slack).Truncate(time.Millisecond)
		} else {
			a.Dur = r.logUniform(10*time.Millisecond, 3*ld).Round(time.Millisecond)
		}
		return a
	case 2:
		return Action{At: at, Kind: ActPartition, Workers: []int{r.IntN(workers)}, Target: []string{"table", "stream", "both"}[r.IntN(3)],
			Dir: []string{"both", "request", "reply"}[r.IntN(3)], Dur: r.logUniform(time.Second, 3*ld).Round(time.Millisecond)}
	case 3:
		return Action{At: at, Kind: ActClog, Workers: []int{r.IntN(workers)}, Target: []string{"table", "stream", "both"}[r.IntN(3)],
			Extra: r.between(200*time.Millisecond, 3*time.Second).Round(time.Millisecond), Dur: r.logUniform(time.Second, 3*ld).Round(time.Millisecond)}
	case 4:
		d := r.logUniform(time.Second, 6*time.Hour).Round(time.Millisecond)
		if r.chance(0.5) {
			d = -d
		}
		a := Action{At: at, Kind: ActClockStep, Worker: r.IntN(workers), Role: roles[r.IntN(4)], Extra: d}
		if r.chance(1.0 / 3) {
			a.Dur = r.between(ld/10, 2*ld).Round(time.Millisecond)
		}
		return a
	case 5:
		a := Action{At: at, Kind: ActShutdown, Worker: r.IntN(workers), Role: roles[r.IntN(4)]}
		if r.chance(0.8) {
			a.Dur = r.between(time.Second, 2*ld).Round(time.Millisecond)
		}
		return a
	}
	return Action{At: at, Kind: ActTableThrottle, Dur: r.between(time.Second, 2*ld).Round(time.Millisecond), Value: r.rangeF(0.3, 1)}
}
