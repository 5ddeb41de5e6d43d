package livecheck

import (
	"strings"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestTableWritesByClass: live check counts the writes sent by class and
// per shard-hour; reads and other records are not writes.
func TestTableWritesByClass(t *testing.T) {
	send := func(op engine.Op, reason string) trace.Record {
		return trace.Record{Kind: trace.KindSend, Op: op, Reason: reason}
	}
	recs := []trace.Record{
		send(engine.OpUpdateLease, trace.WriteRenew), send(engine.OpUpdateLease, trace.WriteRenew), send(engine.OpUpdateLease, trace.WriteRenew),
		send(engine.OpUpdateLease, trace.WriteCheckpoint), send(engine.OpCreateLease, trace.WriteCreate),
		send(engine.OpListLeases, ""), // not a write
		{Kind: trace.KindSend, Op: engine.OpUpdateLease, Reason: trace.WriteRenew, Key: engine.SessionKey("w1")}, // a session renewal
		{Kind: trace.KindSend, Op: engine.OpUpdateLease, Reason: trace.WriteTake, Key: engine.SessionKey("w2")},  // a session take
		{Kind: trace.KindApply, Op: engine.OpUpdateLease, Reason: trace.WriteRenew},                              // an apply, not a send
	}
	rep := &Report{}
	rep.Measure.ShardHours = 0.5
	tableWrites(recs, rep)
	want := map[string]int{trace.WriteRenew: 3, trace.WriteCheckpoint: 1, trace.WriteCreate: 1, "session": 2}
	if len(rep.WritesByClass) != len(want) {
		t.Fatalf("writes by class %v, want %v", rep.WritesByClass, want)
	}
	for c, n := range want {
		if rep.WritesByClass[c] != n || rep.WritesPerShardHour[c] != float64(n)/0.5 {
			t.Errorf("%s: %d writes, %v per shard-hour; want %d, %v", c, rep.WritesByClass[c], rep.WritesPerShardHour[c], n, float64(n)/0.5)
		}
	}
	if got := rep.writesLine(); !strings.Contains(got, "renew 3 (6/shard-hour)") || !strings.Contains(got, "0.50 shard-hours") {
		t.Errorf("line %q", got)
	}
}
