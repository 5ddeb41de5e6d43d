package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestSyncRaceDraw pins what the combination sync-race draws: a tenth of
// the swarm's worlds (the last share of the catalogue, so that no world
// drawing an earlier combination changed), and in each of its worlds the
// scan mode, TRIM_HORIZON, a 3-5 s lease, a 1-2 s shard sync, a call
// timeout of at least a lease duration, no aimed or targeted fault, and a
// schedule of first splits three to four lease durations apart and two to
// four crashes restarted under the holder's own id within half a lease.
func TestSyncRaceDraw(t *testing.T) {
	if Combos[len(Combos)-1].Name != comboSyncRace {
		t.Fatalf("sync-race is not the last combination: appended last, it changes no world that draws another")
	}
	n := 0
	for seed := uint64(1); seed <= 1000; seed++ {
		w, err := drawWorld(Options{Seed: seed, Faults: "swarm"})
		if err != nil {
			t.Fatal(err)
		}
		if w.Combo.Name == comboSyncRace {
			n++
		}
	}
	if n < 70 || n > 130 {
		t.Errorf("sync-race drawn by %d of swarm seeds 1-1000, want about 100", n)
	}
	for seed := uint64(1); seed <= 10; seed++ {
		w, err := drawWorld(Options{Seed: seed, Faults: "swarm", Combo: comboSyncRace})
		if err != nil {
			t.Fatal(err)
		}
		full := w.engineConfig("probe", 1)
		ld := full.LeaseDuration
		switch {
		case w.Assignment.Mode != engine.AssignmentScan:
			t.Errorf("seed %d: assignment %s, want scan", seed, w.Assignment.Mode)
		case w.Config.InitialPosition != engine.TrimHorizon:
			t.Errorf("seed %d: initial position %q, want TRIM_HORIZON", seed, w.Config.InitialPosition)
		case ld < 3*time.Second || ld > 5*time.Second:
			t.Errorf("seed %d: lease %v, want 3-5 s", seed, ld)
		case full.ShardSyncInterval < time.Second || full.ShardSyncInterval > 2*time.Second:
			t.Errorf("seed %d: shard sync %v, want 1-2 s", seed, full.ShardSyncInterval)
		case w.CallTimeout < ld:
			t.Errorf("seed %d: call timeout %v under the lease %v", seed, w.CallTimeout, ld)
		case w.Aim.On || w.Target.On || !w.Boundary.On || !w.has("split"):
			t.Errorf("seed %d: not a calm world with boundary seeking and splits: %s", seed, w)
		}
		s := &simulator{w: w, full: full, o: Options{Seed: seed}}
		var splits []time.Duration
		crashes := 0
		for _, a := range syncRaceSchedule(s, newRNG(seed, streamComboRun)) {
			switch a.Kind {
			case ActSplit:
				splits = append(splits, a.At)
			case ActCrash:
				crashes++
				if a.NewOwner || a.Dur > ld/2 || a.Role != RoleHolder {
					t.Errorf("seed %d: crash %+v: want a holder restarted under its own id within half a lease", seed, a)
				}
			}
		}
		if len(splits) == 0 || crashes < 2 || crashes > 4 {
			t.Errorf("seed %d: %d first splits, %d crashes", seed, len(splits), crashes)
		}
		for i := 1; i < len(splits); i++ {
			if d := splits[i] - splits[i-1]; d < 3*ld || d > 4*ld {
				t.Errorf("seed %d: first splits %v apart, want 3-4 lease durations", seed, d)
			}
		}
	}
}

// TestSyncRaceRun: a sync-race world pauses a process between its sync
// scan and its decisions and throttles children's creates, and the engine
// as it is passes it.
func TestSyncRaceRun(t *testing.T) {
	res, err := Run(Options{Seed: 4, Combo: comboSyncRace, KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("%s: %v", res.Replay, res.Violations)
	}
	full, err := res.World.engineConfig("probe", 1).Validate()
	if err != nil {
		t.Fatal(err)
	}
	ld := full.LeaseDuration
	children := map[string]bool{}
	for _, r := range res.Trace {
		if r.Kind == trace.KindShardCreated && r.Parent != "" {
			children[r.Key] = true
		}
	}
	paused, late, throttled := 0, 0, 0
	for i, r := range res.Trace {
		switch {
		case strings.HasPrefix(r.Reason, "sync race: "):
			paused++
			// the pause begins on the step that answers the worker's
			// sync scan (the reply is delivered now), and ends after a
			// lease duration and before two lease durations after the
			// scan was sent: past where the round must be abandoned,
			// short of where the engine gives up on it
			var scan *trace.Record
			for j := i - 1; j >= 0; j-- {
				if q := &res.Trace[j]; q.Kind == trace.KindReply && q.Worker == r.Worker && q.Op == engine.OpListLeases {
					scan = q
					break
				}
			}
			var d time.Duration
			if f := strings.Fields(r.Reason); len(f) > 4 {
				d, _ = time.ParseDuration(f[4])
			}
			switch {
			case scan == nil:
				t.Errorf("%q: no sync scan of w%d before it", r.Reason, r.Worker)
			case scan.T != r.T:
				t.Errorf("%q at %v: w%d's scan reply came at %v, not on the step it pauses", r.Reason, r.T, r.Worker, scan.T)
			case d < ld || r.T+d >= scan.Sent+2*ld:
				t.Errorf("%q at %v: paused %v, want at least a lease duration (%v) and an end before two after the scan's send (%v)", r.Reason, r.T, d, ld, scan.Sent)
			}
		case r.Fault == "sync-race-late":
			late++
		case r.Fault == "sync-race-throttled":
			throttled++
			if r.Op != engine.OpCreateLease || !children[r.Key] {
				t.Errorf("a torn round throttled %s %s at %v: want only the creates of split children", r.Op, r.Key, r.T)
			}
		}
	}
	// (seed 4's resumed processes create nothing late: their rounds'
	// children had rows by then; the pinned catches of
	// engine:sync-never-abandons are what show the late creates at work)
	if paused == 0 || throttled == 0 {
		t.Errorf("seed 4: %d stale rounds paused, %d late creates, %d throttled creates: want paused and throttled", paused, late, throttled)
	}
}
