package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/trace"
)

// TestAimDraws: a swarm aims faults in some worlds and not others, from a
// stream of its own (the rest of the world is the same with and without),
// Options.Aim pins it, a bad value is refused, and the world says what it
// aims.
func TestAimDraws(t *testing.T) {
	on := 0
	for seed := uint64(1); seed <= 40; seed++ {
		w, err := drawWorld(Options{Seed: seed, Faults: "swarm"})
		if err != nil {
			t.Fatal(err)
		}
		off, err := drawWorld(Options{Seed: seed, Faults: "swarm", Aim: "off"})
		if err != nil {
			t.Fatal(err)
		}
		if w.Aim.On {
			on++
			if !strings.Contains(w.String(), "; aimed faults: ") || len(w.Aim.Kinds) == 0 || len(w.Aim.Faults) == 0 || w.Aim.Max < 1 {
				t.Errorf("seed %d: aimed world without its knobs: %s", seed, w)
			}
		}
		w.Aim = AimWorld{}
		if w.String() != off.String() {
			t.Fatalf("seed %d: aiming changed the rest of the world:\n on: %s\noff: %s", seed, w, off)
		}
	}
	if on < 6 || on > 30 {
		t.Errorf("%d of 40 swarm worlds aim faults: want about %.0f%%", on, 100*AimShare)
	}
	if w, _ := drawWorld(Options{Seed: 1, Faults: "none", Aim: "on"}); !w.Aim.On {
		t.Error(`Aim "on" did not turn it on outside a swarm`)
	}
	if _, err := drawWorld(Options{Seed: 1, Aim: "maybe"}); err == nil {
		t.Error("a bad Aim was accepted")
	}
}

// aimedRun runs seed with every operation kind aimed at by fault kind f
// alone, at every step, up to max times, on a quiet world otherwise
// (crashes and a reshard give the operations a chance to run).
func aimedRun(t *testing.T, seed uint64, f string, max int) *Result {
	t.Helper()
	res, err := Run(Options{Seed: seed, Faults: "crash,shutdown,scale,split,merge", Chaos: 100 * time.Second, Boundary: "off", Targeted: "off",
		KeepTrace: true, pinAim: &AimWorld{On: true, Kinds: OpKinds, Faults: []string{f}, Chance: 1, Max: max}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestAimedFaultsFire: each aimed fault kind fires where it is aimed (the
// trace says so, and the window it fired in counts as faulted), up to the
// world's cap, and the engine passes every run.
func TestAimedFaultsFire(t *testing.T) {
	for _, f := range AimFaults {
		t.Run(f, func(t *testing.T) {
			fired, struck, faulted := 0, 0, 0
			for seed := uint64(1); seed <= 2; seed++ {
				res := aimedRun(t, seed, f, 6)
				if !res.OK() {
					t.Errorf("seed %d: %v", seed, res.Violations[0])
				}
				n := 0
				for _, r := range res.Trace {
					if r.Kind == trace.KindFault && strings.HasPrefix(r.Reason, "aimed: "+f+" ") {
						n++
					}
				}
				if n > 6 {
					t.Errorf("seed %d: %d aimed faults fired, more than the cap of 6", seed, n)
				}
				fired += n
				for _, c := range res.Ops {
					struck += c.Struck
					faulted += c.Faulted
				}
			}
			if fired == 0 {
				t.Fatalf("no aimed %s fired in 2 seeds", f)
			}
			if faulted == 0 {
				t.Errorf("%d aimed %s fired, no window counted as faulted", fired, f)
			}
			if (f == AimCrash || f == AimPause || f == AimCut) && struck == 0 {
				t.Errorf("%d aimed %s fired, no window counted as struck", fired, f)
			}
		})
	}
}

// TestAimedFaultEffects: a crash drops the writes its process had in flight
// in the operation, a cut loses them, a throttle, a lost request or reply
// shows on the call it struck.
func TestAimedFaultEffects(t *testing.T) {
	want := map[string]string{
		AimLoseRequest:  "aimed-",
		AimLoseReply:    "aimed-reply-lost",
		AimThrottleNext: "aimed-throttled",
	}
	for f, fault := range want {
		found := false
		for seed := uint64(1); seed <= 3 && !found; seed++ {
			res := aimedRun(t, seed, f, 8)
			for _, r := range res.Trace {
				if (r.Kind == trace.KindReply || r.Kind == trace.KindApply || r.Kind == trace.KindCallEnd) && strings.HasPrefix(r.Fault, fault) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("aimed %s: no call shows the fault %s...", f, fault)
		}
	}
}

// TestOpsWithoutFaults: a world without faults has operations of the kinds
// a steady fleet runs, and no window of any of them is faulted.
func TestOpsWithoutFaults(t *testing.T) {
	res, err := Run(Options{Seed: 3, Faults: "none", Aim: "off", Chaos: 60 * time.Second, Workers: 3, Shards: 6})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]OpCount{}
	for _, c := range res.Ops {
		got[c.Kind] = c
	}
	for _, k := range []string{OpSync, OpTakeAct} {
		if got[k].Instances == 0 {
			t.Errorf("no %s operation in a 3-worker world: %v", k, res.Ops)
		}
	}
	for _, c := range res.Ops {
		if c.Faulted != 0 || c.Struck != 0 {
			t.Errorf("%s: %d windows faulted, %d struck in a world without faults", c.Kind, c.Faulted, c.Struck)
		}
	}
}

// TestOpsCountFaults: a scripted shutdown is a let-go of every lease its
// worker holds; a crash of the process a millisecond into it strikes those
// windows, and without the crash none is struck.
func TestOpsCountFaults(t *testing.T) {
	letGo := func(crash bool) OpCount {
		acts := []Action{{At: 30 * time.Second, Kind: ActShutdown, Worker: 0, Dur: 5 * time.Second}}
		if crash {
			acts = append(acts, Action{At: 30*time.Second + time.Millisecond, Kind: ActCrash, Worker: 0, Dur: time.Second})
		}
		res, err := Run(Options{Seed: 5, Faults: "none", Aim: "off", Chaos: 60 * time.Second, Workers: 2, Shards: 4, Actions: acts})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Ops {
			if c.Kind == OpLetGo {
				return c
			}
		}
		t.Fatal("no let-go count")
		return OpCount{}
	}
	if c := letGo(false); c.Windows == 0 || c.Struck != 0 || c.Faulted != 0 {
		t.Errorf("a shutdown without faults: let-go %+v, want windows, none struck", c)
	}
	if c := letGo(true); c.Struck == 0 {
		t.Errorf("a shutdown crashed a millisecond in: let-go %+v, want struck windows", c)
	}
}
