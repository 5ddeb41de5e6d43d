package sim

import (
	"strings"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// TestCorruptAggregates: a swarm world with corrupt KPL aggregates puts
// them explicitly into its generated stream (each after a generated
// aggregate of the same shard), and the engine drops every one it reads
// (recorded as not owed as it is put) or, with DeliverCorruptAggregates,
// delivers it as one record; either way the world breaks no invariant.
func TestCorruptAggregates(t *testing.T) {
	for _, deliver := range []bool{false, true} {
		var seed uint64
		for s := uint64(1); s < 400 && seed == 0; s++ {
			if w, err := drawWorld(Options{Seed: s}); err == nil && w.Config.CorruptShare > 0 && w.Config.DeliverCorruptAggregates == deliver &&
				w.Shards <= 8 && !w.Config.Multi.On && w.Config.InitialPosition != engine.Latest {
				seed = s
			}
		}
		if seed == 0 {
			t.Fatalf("no world with corrupt aggregates (delivered %v) among swarm seeds 1-399", deliver)
		}
		res, err := Run(Options{Seed: seed, KeepTrace: true, LinBudget: -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Violations) > 0 {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		var corrupt, notOwed, dropped, undecoded int
		for i := range res.Trace {
			r := &res.Trace[i]
			switch {
			case r.Kind == trace.KindPut && r.Count == 1:
				corrupt++ // generated records have Count 0 or at least 2
			case r.Kind == trace.KindTrim && strings.HasPrefix(r.Reason, trace.NotOwedPrefix+"a corrupt KPL aggregate"):
				notOwed++
			case r.Kind == trace.FromEngine(engine.TraceAggregateDropped) && strings.HasPrefix(r.Reason, engine.DropCorrupt):
				dropped++
			case r.Kind == trace.FromEngine(engine.TraceAggregateUndecoded):
				undecoded++
			}
		}
		t.Logf("seed %d (%.0f%% corrupt, delivered %v): %d corrupt aggregates put, %d not owed, %d drops, %d delivered undecoded",
			seed, 100*res.World.Config.CorruptShare, deliver, corrupt, notOwed, dropped, undecoded)
		switch {
		case corrupt == 0:
			t.Errorf("seed %d: no corrupt aggregate put", seed)
		case !deliver && (notOwed != corrupt || dropped == 0 || undecoded > 0):
			t.Errorf("seed %d: %d corrupt put, %d not owed, %d dropped, %d delivered: want every one not owed, drops and no delivery", seed, corrupt, notOwed, dropped, undecoded)
		case deliver && (notOwed > 0 || undecoded == 0 || dropped > 0):
			t.Errorf("seed %d: %d corrupt put, %d not owed, %d dropped, %d delivered: want deliveries and none not owed or dropped", seed, corrupt, notOwed, dropped, undecoded)
		}
	}
}
