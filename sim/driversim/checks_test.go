package driversim

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// The driver's history goes through World.verdict: every checker of
// check.All, with the world's options, and Lin. These tests take the
// history of a real run, make it wrong in one way, and show that the
// verdict says so: the checkers beyond S1-S6 and L1 are wired in, not
// only present.

// keptRun runs the first seed from 1 whose world satisfies want, keeping
// its history; the run itself must pass.
func keptRun(t *testing.T, want func(World) bool) *Result {
	t.Helper()
	for seed := uint64(1); seed <= 50; seed++ {
		w, err := drawWorld(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if !want(w) {
			continue
		}
		res := runSeed(t, Options{Seed: seed, KeepRecords: true})
		if len(res.Violations) > 0 {
			t.Fatalf("seed %d: the untouched run fails: %v", seed, res.Violations[0])
		}
		return res
	}
	t.Fatal("no seed of 1-50 draws the world the test needs")
	return nil
}

func invariants(vs []check.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant)
	}
	return out
}

// TestVerdictChecksLin: a conditional write that succeeds twice on one
// expectation (a copy of a successful take or renewal, sent and
// acknowledged after the original) is not linearizable.
func TestVerdictChecksLin(t *testing.T) {
	res := keptRun(t, func(World) bool { return true })
	recs := res.History
	if v := res.World.verdict(recs, res.Final, res.End); len(v.Violations) > 0 || v.Lin.Ops == 0 {
		t.Fatalf("untouched: %v, lin %+v", invariants(v.Violations), v.Lin)
	}
	// the first acknowledged conditional update of a lease row
	var reply *trace.Record
	for i := range recs {
		r := &recs[i]
		if r.Kind == trace.KindReply && r.Op == engine.OpUpdateLease && r.Outcome == trace.OutcomeOK && !strings.HasPrefix(r.Key, engine.HelloPrefix) {
			reply = r
			break
		}
	}
	if reply == nil {
		t.Fatal("no acknowledged update in the history")
	}
	var send trace.Record
	for _, r := range recs {
		if r.Kind == trace.KindSend && r.Call == reply.Call {
			send = r
		}
	}
	i := slices.IndexFunc(recs, func(r trace.Record) bool { return r.Seq == reply.Seq })
	dupSend, dupReply := send, *reply
	dupSend.Call, dupReply.Call = 1<<40, 1<<40
	dupSend.T, dupReply.T, dupReply.Sent = reply.T, reply.T, reply.T
	bad := slices.Insert(slices.Clone(recs), i+1, dupSend, dupReply)
	v := res.World.verdict(bad, res.Final, res.End)
	if !slices.Contains(invariants(v.Violations), Lin) || len(v.Lin.Illegal) == 0 {
		t.Fatalf("a write acknowledged twice on one expectation: violations %v, lin %+v", invariants(v.Violations), v.Lin)
	}
}

// TestVerdictChecksW1: a lease decision in a step that read the wall
// clock breaks W1.
func TestVerdictChecksW1(t *testing.T) {
	res := keptRun(t, func(World) bool { return true })
	recs := res.History
	i := slices.IndexFunc(recs, func(r trace.Record) bool { return r.Kind == trace.Acting })
	if i < 0 {
		t.Fatal("nobody acted")
	}
	wall := recs[i]
	wall.Kind, wall.Reason, wall.Key = trace.WallRead, "lease expiry", ""
	bad := slices.Insert(slices.Clone(recs), i, wall)
	v := res.World.verdict(bad, res.Final, res.End)
	if !slices.Contains(invariants(v.Violations), check.W1) {
		t.Fatalf("acting in a step that read the wall clock: violations %v", invariants(v.Violations))
	}
}

// TestVerdictChecksBalance: in a world where balancing steals, a final
// table that gives every lease to one of several live consumers breaks
// L1's balance check.
func TestVerdictChecksBalance(t *testing.T) {
	res := keptRun(t, func(w World) bool { return w.Balance && w.Shards >= 4 && w.Workers >= 2 })
	final := slices.Clone(res.Final)
	owner := ""
	for i, l := range final {
		if strings.HasPrefix(l.Key, "shardId-") && l.Owner != "" && !l.Checkpoint.IsShardEnd() {
			if owner == "" {
				owner = l.Owner
			}
			final[i].Owner = owner
		}
	}
	v := res.World.verdict(res.History, final, res.End)
	for _, x := range v.Violations {
		if x.Invariant == check.L1 && strings.Contains(x.Detail, "unbalanced") {
			return
		}
	}
	t.Fatalf("every lease on %s at the end of a balanced world (%s): violations %v", owner, res.World, v.Violations)
}
