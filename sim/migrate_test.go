package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestMixedRestartsSwitchMode: in a mixed fleet some restarts come up in
// the other mode, the engine passes,
// and a fleet of one mode never switches.
func TestMixedRestartsSwitchMode(t *testing.T) {
	count := func(mode string) (switches int) {
		res, err := Run(Options{Seed: 3, Faults: "crash,shutdown", Chaos: 90 * time.Second, Assignment: mode, KeepTrace: true})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Fatalf("%s: %v", mode, res.Violations[0])
		}
		for _, r := range res.Trace {
			if r.Kind == trace.KindFault && strings.HasPrefix(r.Reason, "switch-mode ") && strings.HasSuffix(r.Reason, " at its restart") {
				switches++
			}
		}
		return switches
	}
	if n := count(AssignmentMixed); n == 0 {
		t.Error("no restart of a mixed fleet came up in the other mode")
	}
	for _, mode := range []string{engine.AssignmentAssigner, engine.AssignmentScan} {
		if n := count(mode); n != 0 {
			t.Errorf("%s: %d restarts switched mode", mode, n)
		}
	}
}
