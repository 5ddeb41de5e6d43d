package sim

import (
	"testing"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
)

// supersededTakeWorld is swarm seed 387 in session renewal with boundary
// seeking (it was seed 929 without, until the engine's later changes
// moved that world): a worker's take of the assigner row applies, its
// SDK's retry gets a condition failure, and before the worker's re-read
// another worker takes the row over and reassigns at once the leases
// written under the first one's writer (the previous assigner's): the
// first must have dropped them.
func supersededTakeWorld(t *testing.T, mutation string) *Result {
	t.Helper()
	res, err := Run(Options{Seed: 387, Renewal: "session", Boundary: "on", Mutation: mutation, NoExcerpts: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSupersededAssignerTakeDropsLeases: a worker whose take of the
// assigner row of unknown outcome is found superseded drops its leases
// (engine/write.go, onResolveResult): no two acting owners.
func TestSupersededAssignerTakeDropsLeases(t *testing.T) {
	if res := supersededTakeWorld(t, ""); !res.OK() {
		t.Errorf("swarm seed 387 in session renewal with boundary seeking: %v", res.Violations)
	}
}

// TestSupersededAssignerTakeCaught: with the planted bug
// superseded-assigner-take-keeps-leases the same world breaks S1.
func TestSupersededAssignerTakeCaught(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	const bug = EngineMutationPrefix + "superseded-assigner-take-keeps-leases"
	res := supersededTakeWorld(t, bug)
	caught := false
	for _, v := range res.Violations {
		caught = caught || v.Invariant == "S1"
	}
	if !caught {
		t.Errorf("with %s swarm seed 387 in session renewal with boundary seeking shows no S1: %v", bug, res.Violations)
	}
	if *flagTestsJSON != "" {
		row := mutants.Row{Name: bug, Class: mutants.Classes[bug], Caught: caught, Invariant: "TestSupersededAssignerTakeDropsLeases", Runner: "test"}
		if err := mutants.WriteKeeping(*flagTestsJSON, []mutants.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
}

// staleViewWorld is swarm seed 7721 in session renewal: a worker that
// takes leases itself, its scans eventually consistent, saw a session row
// from before a restart took it over, while the lease was bound to the new
// session: it could not link the two, timed the lease by its own row, and
// took it unfenced from its acting holder (engine/take.go, fencedTake).
func staleViewWorld(t *testing.T, mutation string) *Result {
	t.Helper()
	res, err := Run(Options{Seed: 7721, Renewal: "session", Mutation: mutation, NoExcerpts: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestStaleSessionViewNotTakenUnfenced: that world keeps one acting owner.
func TestStaleSessionViewNotTakenUnfenced(t *testing.T) {
	if res := staleViewWorld(t, ""); !res.OK() {
		t.Errorf("swarm seed 7721 in session renewal: %v", res.Violations)
	}
}

// TestStaleSessionViewCaught: with the planted bug
// stale-session-view-taken the same world breaks S1.
func TestStaleSessionViewCaught(t *testing.T) {
	planted.SkipUnlessEnabled(t)
	const bug = EngineMutationPrefix + "stale-session-view-taken"
	res := staleViewWorld(t, bug)
	caught := false
	for _, v := range res.Violations {
		caught = caught || v.Invariant == "S1"
	}
	if !caught {
		t.Errorf("with %s swarm seed 7721 in session renewal shows no S1: %v", bug, res.Violations)
	}
	if *flagTestsJSON != "" {
		row := mutants.Row{Name: bug, Class: mutants.Classes[bug], Caught: caught, Invariant: "TestStaleSessionViewNotTakenUnfenced", Runner: "test"}
		if err := mutants.WriteKeeping(*flagTestsJSON, []mutants.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
}
