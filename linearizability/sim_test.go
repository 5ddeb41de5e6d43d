package linearizability_test

import (
	"testing"
	"time"

	lin "github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim"
)

// simFaults are the fault classes that shape the lease table's history.
const simFaults = "loss,dup,table-throttle,table-errors,crash,latency,stale-reads,partition"

func simHistory(t *testing.T, seed uint64, mutation string) []lin.Op {
	t.Helper()
	r, err := sim.Run(sim.Options{Seed: seed, Workers: 4, Shards: 8, Chaos: time.Minute, Faults: simFaults,
		Mutation: mutation, KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := lin.FromTrace(r.Trace)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The simulator's fake table, under lost requests and replies, SDK
// retries, throttling, 5xx, crashes and partitions, is linearizable.
func TestSimulatorHistoriesAreLinearizable(t *testing.T) {
	seeds := []uint64{1, 2}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		h := simHistory(t, seed, "")
		res, err := lin.Check(h, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Ok {
			dumpVisualization(t, h, res)
			t.Fatalf("seed %d: %s", seed, res.Info)
		}
		if res.Ops < 1000 || res.UnknownWrites == 0 {
			t.Errorf("seed %d: a thin history: %s", seed, res.Info)
		}
		t.Logf("seed %d: %s", seed, res.Info)
	}
}

// A table that applies takes without their counter condition (the
// simulator's planted bug "unfenced-take") is caught whenever the caller
// saw such a take succeed.
func TestSimulatorUnfencedTakeIsCaught(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		res, err := lin.Check(simHistory(t, seed, "unfenced-take"), 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Illegal) > 0 {
			t.Logf("seed %d: %s", seed, res.Info)
			return
		}
	}
	t.Fatal("no run of the unfenced-take mutation was flagged")
}
