package sim

import (
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestEmitKeepsRecordsOnTheStack: recording a record allocates nothing of
// its own, so a record built at an emit site stays on that site's stack (a
// record that escaped cost a 328-byte allocation per event). The filters
// of an excerpt re-run are on, since a filter called through a func value
// made every record escape once.
func TestEmitKeepsRecordsOnTheStack(t *testing.T) {
	w, err := drawWorld(Options{Seed: 1, Workers: 2, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	var s simulator
	s.rec.init(Options{KeepTrace: true, LinBudget: -1, excerptsOf: []check.Violation{{Invariant: "S1", Key: "k"}}}, w)
	allocs := testing.AllocsPerRun(1000, func() {
		r := trace.Record{Kind: trace.KindReply, Worker: 0, Proc: 0, Op: engine.OpGetRecords, Key: "shard-x", Outcome: "ok"}
		s.emit(&r)
	})
	if allocs != 0 {
		t.Fatalf("emit allocates %.1f times per record, want 0", allocs)
	}
}
