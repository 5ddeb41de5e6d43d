package sim

import (
	"testing"

	"github.com/shardlease/shardlease/sim/trace"
)

// TestShutdownTimeoutRestarts: a graceful shutdown (with a restart) that
// outlasts the kill timer (its processor was slow) ends with the kill, and
// the slot restarts as the shutdown asked. Found by the soak (swarm seed
// 6528): the only worker was killed at 78.9s and never came back, and
// nothing was delivered for eight virtual minutes (S4).
func TestShutdownTimeoutRestarts(t *testing.T) {
	res, err := Run(Options{Seed: 6528, KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	killed, restarted := false, false
	for i := range res.Trace {
		r := &res.Trace[i]
		switch {
		case r.Kind == trace.KindProcStop && r.Reason == "shutdown-timeout":
			killed = true
		case r.Kind == trace.KindProcStart && killed:
			restarted = true
		}
	}
	if !killed {
		t.Fatal("no shutdown timed out: the seed no longer tells the story")
	}
	if !restarted || !res.OK() {
		t.Fatalf("restarted after the kill: %v; violations %v", restarted, res.Violations)
	}
}

// TestDeposedAssignerLease: an assigner whose row expired (throttled
// renewals) goes on as an ordinary worker and takes a lease before
// another worker takes the row over; the new assigner must not take that
// lease for one bound to the old row and reassign it at once (swarm seed
// 57 with boundary seeking broke S1 so: the deposed assigner now writes
// under a new writer).
func TestDeposedAssignerLease(t *testing.T) {
	res, err := Run(Options{Seed: 57})
	if err != nil {
		t.Fatal(err)
	}
	if !res.World.Boundary.On {
		t.Fatal("seed 57 no longer draws boundary seeking: the regression case is lost")
	}
	if !res.OK() {
		t.Fatalf("seed 57: %v", res.Violations[0])
	}
}
