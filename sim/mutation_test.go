package sim

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/planted"
)

var flagMutants = flag.Bool("sim.mutants", false, "TestMutationsCaught: also run the planted bugs that take hundreds of seeds to expose (make mutants)")

// mutationCase is a planted bug, the fault mix that exposes it, and the
// number of seeds within which the simulator must catch it.
type mutationCase struct {
	mutation  string
	faults    string
	consumer  string // Options.Consumer: "" polls
	invariant string // the invariant that must catch it
	bound     uint64
	slow      bool // only with -sim.mutants
	// hard marks a bug the simulator is not expected to catch within the
	// bound: it is reported, not failed (see its comment).
	hard bool
	// assignment, if set, is the Options.Assignment of the runs.
	assignment string
	// store, if set, is the Options.Store of the runs.
	store string
}

var mutationCases = []mutationCase{
	// assignment by an assigner: each caught by the default swarm
	{mutation: "engine:assigner-takes-over-at-once", faults: "swarm", invariant: "S1", bound: 16},
	{mutation: "engine:handoff-before-release", faults: "swarm", invariant: "S1", bound: 48},
	{mutation: "engine:assigner-early-expiry", faults: "swarm", invariant: "S1", bound: 32},
	{mutation: "unfenced-assign", faults: "swarm", invariant: "S2", bound: 16},
	// etcd worlds (etcd.go): a Txn comparing the owner only lets a stale
	// write of the same owner land (the assigner's on a lease its holder
	// renewed since); a watch resumed at the current revision never reports
	// what was written while it was cut (W3)
	{mutation: "etcd-owner-only-compare", faults: "swarm", store: "etcd", invariant: "Lin S2 S3", bound: 8},
	{mutation: "etcd-watch-resume-at-current", faults: "swarm", store: "etcd", invariant: "W3", bound: 8},
	// sequence numbers of varying length (fakes.Kinesis): a string
	// comparison drops records or misplaces checkpoints at the first
	// shard whose numbers grow by a digit
	{mutation: "engine:compare-sequences-as-strings", faults: "swarm", invariant: "S3 S4 S6", bound: 8},
	// KPL aggregates (4 swarm worlds in 10): a resume AFTER the sequence
	// number of a checkpoint at an aggregate's first user record skips
	// the rest of the aggregate
	{mutation: "engine:resume-after-sequence", faults: "swarm", invariant: "S4 S3", bound: 64},
	// expiry timed on the wall clock: W1 sees the lease decision taken in
	// the step that read it (S1 too, when a clock step comes inside a
	// taker's observation window)
	{mutation: "engine:expiry-by-wall-clock", faults: "swarm", invariant: "W1 S1", bound: 4},
	// a release that races ahead of the processor's final checkpoint: G1
	{mutation: "engine:release-before-final-checkpoint", faults: "swarm", invariant: "G1", bound: 8},
	{mutation: "unfenced-checkpoint", faults: "partition,pause,crash,clog", invariant: "S2", bound: 10},
	// an unfenced take breaks S2 on about one seed in five of this mix
	// (8 of seeds 1-40 with the stored records, 9 with the generated
	// ones, the first at 5 and at 14): a bound of 10 misses it one time
	// in nine whenever the draws move, 25 one time in 250
	{mutation: "unfenced-take", faults: "partition,clog,latency", invariant: "S2", bound: 25},
	{mutation: "unfenced-take", faults: "partition,clog,latency,pause", invariant: "S1", bound: 20}, // S1 first at seed 15 (of 5 of seeds 1-40) since the engine balances a fresh fleet at once (1d8e636)
	// The linearizability check sees what the writers saw: a take or a
	// checkpoint acknowledged although its condition did not hold.
	{mutation: "unfenced-take", faults: "partition,clog,latency", invariant: "Lin", bound: 25},
	{mutation: "unfenced-checkpoint", faults: "partition,pause,crash,clog", invariant: "Lin", bound: 10},
	// with every parent hidden, a child is read before its parent ends
	// (S5), or shard sync re-creates a finished parent it no longer knows
	// has children (S3)
	{mutation: "orphan-children", faults: "split,merge", invariant: "S5 S3", bound: 10},
	// with the second parent hidden, shard sync re-creates the finished
	// parent (S3), or a child record is read first (S5)
	{mutation: "ignore-second-parent", faults: "merge", invariant: "S3 S5", bound: 10},
	{mutation: "skip-on-resume", faults: "crash,shutdown,partition", invariant: "S4", bound: 10},
	{mutation: "engine:parents-unchecked", faults: "split,merge", invariant: "S5", bound: 10},
	// steals exist where workers take leases themselves
	{mutation: "engine:steal-acts-at-once", faults: "scale,rolling", invariant: "S1", bound: 10, assignment: "scan"},
	// The same bugs in worlds that read with enhanced fan-out, and the
	// fan-out one: a renewal at LATEST skips what the gap between two
	// subscriptions held (drops and refusals widen the gaps).
	{mutation: "skip-on-resume", faults: "crash,shutdown,partition", consumer: "fan-out", invariant: "S4", bound: 10},
	{mutation: "orphan-children", faults: "split,merge", consumer: "fan-out", invariant: "S5", bound: 10},
	{mutation: "engine:resubscribe-at-latest", faults: "sub-drop,sub-in-use", consumer: "fan-out", invariant: "S4", bound: 10},
	// A validity window counted from the reply needs a slow reply to a
	// renewal, then the holder cut off, then a taker whose scan saw the
	// renewal soon after it applied: seed 67 of this mix is the first.
	{mutation: "engine:validity-from-reply", faults: "latency,clog,partition,pause", invariant: "S1", bound: 300, slow: true},
	// Without a safety margin, the holder's last act and the taker's first
	// are apart by the taker's scan delay and the write's latency; a drawn
	// world of this mix rarely removes both. Reported, not required here:
	// the default swarm's boundary seeking catches it (TestMutantsSwarm,
	// make mutants), and so does the scenario slow-clock-holder-cut-off
	// (package scenarios) on every seed.
	{mutation: "engine:no-safety-margin", faults: "latency,clog,partition,pause,clock-steps", invariant: "S1", bound: 300, slow: true, hard: true},
	// Resolving a write by the row's contents alone needs a process
	// restarted under the same owner id whose first consistent scan is
	// throttled and whose eventually consistent one is stale: the swarm
	// without boundary seeking first found it at seed 135, the bug it was
	// fixed for; boundary seeking's crashes after renewals build that story
	// (TestMutantsSwarm).
	{mutation: "engine:resolve-ignores-writer", faults: "swarm", invariant: "S1", bound: 150, slow: true},
}

// TestMutationsCaught runs the engine with a planted bug on a bounded
// number of seeds: the simulator must catch each within its bound. With
// -v it logs the seed and the (wall) time it took, the figures `make
// mutants` reports.
func TestMutationsCaught(t *testing.T) {
	for _, mc := range mutationCases {
		if mc.slow && !*flagMutants {
			continue
		}
		name := mc.mutation + "/" + mc.invariant
		if mc.consumer != "" {
			name += "/" + mc.consumer
		}
		t.Run(name, func(t *testing.T) {
			if strings.HasPrefix(mc.mutation, EngineMutationPrefix) {
				planted.SkipUnlessEnabled(t)
			}
			start := time.Now()
			for seed := uint64(1); seed <= mc.bound; seed++ {
				o := Options{Seed: seed, Mutation: mc.mutation, Faults: mc.faults, Consumer: mc.consumer, Assignment: mc.assignment, Store: mc.store, Workers: 4, Shards: 8}
				if mc.faults == "swarm" {
					o.Workers, o.Shards = 0, 0 // drawn, as in the swarm
				}
				res, err := Run(o)
				if err != nil {
					t.Fatal(err)
				}
				// only violations inside the assumptions count: a drawn
				// world outside them may break S1 without any bug
				for _, v := range res.Violations {
					if slices.Contains(strings.Fields(mc.invariant), v.Invariant) {
						t.Logf("caught at seed %d after %.1fs of wall time: %s", seed, time.Since(start).Seconds(), v.String())
						return
					}
				}
			}
			if mc.hard {
				t.Logf("not caught as %s within %d seeds (%.0fs): expected, see the case's comment", mc.invariant, mc.bound, time.Since(start).Seconds())
				return
			}
			t.Errorf("mutation %s not caught as %s within %d seeds", mc.mutation, mc.invariant, mc.bound)
		})
	}
}

// TestEngineMutationNeedsTheTag: an engine planted bug is refused, with
// the tag to build with, by a binary built without it.
func TestEngineMutationNeedsTheTag(t *testing.T) {
	_, err := Run(Options{Seed: 1, Mutation: EngineMutationPrefix + "no-safety-margin", Faults: "none", Workers: 1, Shards: 1, Chaos: time.Second, Quiet: time.Second})
	switch {
	case planted.Enabled() && err != nil:
		t.Fatalf("with the tag: %v", err)
	case !planted.Enabled() && (err == nil || !strings.Contains(err.Error(), "-tags "+MutationTag)):
		t.Fatalf("without the tag: err = %v, want one naming -tags %s", err, MutationTag)
	}
	if _, err := Run(Options{Seed: 1, Mutation: "no-such-bug"}); err == nil {
		t.Fatal("an unknown mutation was accepted")
	}
}
