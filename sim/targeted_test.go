package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestTargetDraws: a swarm draws a targeted fault for some worlds, from a
// stream of its own, and Options.Targeted pins it.
func TestTargetDraws(t *testing.T) {
	on := 0
	for seed := uint64(1); seed <= 40; seed++ {
		w, err := drawWorld(Options{Seed: seed, Faults: "swarm"})
		if err != nil {
			t.Fatal(err)
		}
		off, err := drawWorld(Options{Seed: seed, Faults: "swarm", Targeted: "off"})
		if err != nil {
			t.Fatal(err)
		}
		if w.Target.On {
			on++
			if !strings.Contains(w.String(), "; targeted fault: ") {
				t.Errorf("seed %d: the world does not name its targeted fault: %s", seed, w)
			}
		}
		w.Target = TargetWorld{}
		if w.String() != off.String() {
			t.Fatalf("seed %d: the targeted fault changed the rest of the world:\n on: %s\noff: %s", seed, w, off)
		}
	}
	if on < 3 || on > 20 {
		t.Errorf("%d of 40 swarm worlds have a targeted fault: want about %.0f%%", on, 100*TargetShare)
	}
	if _, err := drawWorld(Options{Seed: 1, Targeted: "maybe"}); err == nil {
		t.Error("a bad Targeted was accepted")
	}
}

// TestTargetedFaults: a targeted fault strikes calls of its target and of
// no other kind, and the engine passes.
func TestTargetedFaults(t *testing.T) {
	cases := []struct {
		target, fault, mark string
		mode                string
	}{
		{TargetAssignerRow, TargetThrottle, "targeted-throttled", engine.AssignmentAssigner},
		{TargetPendingReads, TargetLoss, "targeted-", engine.AssignmentAssigner},
		{TargetHello, TargetErrors, "targeted-transient", engine.AssignmentAssigner},
		{TargetMarker, TargetThrottle, "targeted-throttled", engine.AssignmentScan},
		{TargetCheckpoints, TargetErrors, "targeted-transient", engine.AssignmentScan},
		{TargetDeletes, TargetLoss, "targeted-", engine.AssignmentAssigner},
		{TargetCreates, TargetThrottle, "targeted-throttled", engine.AssignmentScan},
		{TargetTakes, TargetErrors, "targeted-transient", engine.AssignmentScan},
		{TargetReleases, TargetLoss, "targeted-", engine.AssignmentAssigner},
		{TargetRenewals, TargetThrottle, "targeted-throttled", engine.AssignmentAssigner},
		{TargetScans, TargetErrors, "targeted-transient", engine.AssignmentScan},
		{TargetRowReads, TargetLoss, "targeted-", engine.AssignmentAssigner},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			res, err := Run(Options{Seed: 2, Faults: "crash,shutdown,split", Chaos: 80 * time.Second, Aim: "off", Boundary: "off", Assignment: tc.mode,
				KeepTrace: true, pinTarget: &TargetWorld{On: true, Target: tc.target, Fault: tc.fault, Rate: 0.7}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() {
				t.Errorf("%v", res.Violations[0])
			}
			hit := 0
			for _, r := range res.Trace {
				if !strings.HasPrefix(r.Fault, "targeted-") || (r.Kind != trace.KindReply && r.Kind != trace.KindApply) {
					continue
				}
				c := engine.Call{Op: r.Op, Key: r.Key, Lease: engine.Lease{Key: r.Key}}
				if !targets(tc.target, &c, r.Reason) {
					t.Fatalf("a targeted fault struck %s %s (%s), not of target %s", r.Op, r.Key, r.Reason, tc.target)
				}
				if strings.HasPrefix(r.Fault, tc.mark) {
					hit++
				}
			}
			if hit == 0 {
				t.Errorf("no call shows the targeted fault %s", tc.mark)
			}
		})
	}
}
