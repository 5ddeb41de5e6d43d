package sim

import (
	"cmp"
	"testing"

	"github.com/shardlease/shardlease/internal/mutants"
	"github.com/shardlease/shardlease/internal/planted"
)

// A regressWorld is a swarm world that once broke an invariant and is
// kept as a regression test: it passes as the engine is, and breaks that
// invariant with the planted bug that undoes its fix.
type regressWorld struct {
	opts Options
	bug  string // without EngineMutationPrefix
	test string // the test that keeps the world passing
	inv  string // the invariant the bug breaks ("": S1)
}

// staleView is swarm seed 7721 in session renewal: a worker that takes
// leases itself, its scans eventually consistent, saw a session row from
// before a restart took it over, while the lease was bound to the new
// session: it could not link the two, timed the lease by its own row, and
// took it unfenced from its acting holder (engine/take.go, fencedTake).
var staleView = regressWorld{
	opts: Options{Seed: 7721, Renewal: "session"},
	bug:  "stale-session-view-taken", test: "TestStaleSessionViewNotTakenUnfenced",
}

// run runs the world, with mutation planted if not empty.
func (rw regressWorld) run(t *testing.T, mutation string) *Result {
	t.Helper()
	o := rw.opts
	o.Mutation, o.NoExcerpts = mutation, true
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// passes fails t unless the world passes as the engine is.
func (rw regressWorld) passes(t *testing.T) {
	t.Helper()
	if res := rw.run(t, ""); !res.OK() {
		t.Errorf("swarm seed %d (renewal %s, boundary %q): %v", rw.opts.Seed, rw.opts.Renewal, rw.opts.Boundary, res.Violations)
	}
}

// caught fails t unless the world breaks its invariant with its planted
// bug, and records the verdict for make mutants (-sim.tests.json).
func (rw regressWorld) caught(t *testing.T) {
	t.Helper()
	planted.SkipUnlessEnabled(t)
	bug := EngineMutationPrefix + rw.bug
	inv := cmp.Or(rw.inv, "S1")
	res := rw.run(t, bug)
	caught := false
	for _, v := range res.Violations {
		caught = caught || v.Invariant == inv
	}
	if !caught {
		t.Errorf("with %s swarm seed %d (renewal %s, boundary %q) shows no %s: %v", bug, rw.opts.Seed, rw.opts.Renewal, rw.opts.Boundary, inv, res.Violations)
	}
	if *flagTestsJSON != "" {
		row := mutants.Row{Name: bug, Class: mutants.Classes[bug], Caught: caught, Invariant: rw.test, Runner: "test"}
		if err := mutants.WriteKeeping(*flagTestsJSON, []mutants.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStaleSessionViewNotTakenUnfenced: that world keeps one acting owner.
func TestStaleSessionViewNotTakenUnfenced(t *testing.T) { staleView.passes(t) }

// TestStaleSessionViewCaught: with the planted bug
// stale-session-view-taken the same world breaks S1.
func TestStaleSessionViewCaught(t *testing.T) { staleView.caught(t) }
