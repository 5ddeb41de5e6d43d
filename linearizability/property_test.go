package linearizability_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	lin "github.com/shardlease/shardlease/linearizability"
	"pgregory.net/rapid"
)

// drawer draws integers in [lo, hi]: from rapid in properties, from a
// seeded source in benchmarks.
type drawer interface {
	draw(label string, lo, hi int) int
}

type rapidDraw struct{ t *rapid.T }

func (d rapidDraw) draw(label string, lo, hi int) int { return rapid.IntRange(lo, hi).Draw(d.t, label) }

type randDraw struct{ r *rand.Rand }

func (d randDraw) draw(_ string, lo, hi int) int { return lo + d.r.IntN(hi-lo+1) }

// genOpts shape a generated history.
type genOpts struct {
	keys, clients, steps int
	// spread widens each operation's window by up to spread on each side
	// of the moment it applied (0: a sequential history). Applications are
	// gap apart.
	spread int
	// faultPct is the percentage of calls that meet a fault: the reply is
	// lost (the call applied), the request is lost (it did not), it lands
	// several steps after its caller gave up, or it is throttled.
	faultPct int
	// scanPct is the percentage of calls that are scans; stale adds
	// eventually consistent scans that return an old snapshot.
	scanPct int
	stale   bool
}

const gap = 100

var (
	owners      = []string{"", "w1", "w2", "w3"}
	checkpoints = []engine.Checkpoint{
		engine.SentinelCheckpoint(engine.TrimHorizon), engine.SequenceCheckpoint("100"),
		engine.SequenceCheckpoint("250"), engine.SentinelCheckpoint(engine.ShardEnd),
	}
)

// genHistory makes random calls against an engine.MemStore (a correct,
// atomic table) and records each as an Op whose window contains the
// moment the store applied it. Such a history is linearizable by
// construction.
func genHistory(d drawer, o genOpts) []lin.Op {
	ctx := context.Background()
	store := engine.NewMemStore()
	type delayed struct {
		c  engine.Call
		at int
	}
	var pending []delayed
	var snapshots []engine.Listing
	h := make([]lin.Op, 0, o.steps)
	for i := 0; i < o.steps; i++ {
		at := int64(i+1) * gap
		// writes whose caller gave up long ago land now
		for j := 0; j < len(pending); {
			if pending[j].at <= i {
				engine.Execute(ctx, store, nil, pending[j].c)
				pending = append(pending[:j], pending[j+1:]...)
			} else {
				j++
			}
		}
		key := fmt.Sprintf("shard-%03d", d.draw("key", 0, o.keys-1))
		cur, err := store.GetLease(ctx, key)
		exists := err == nil
		expect := func() engine.Expect {
			if exists && d.draw("current expect", 0, 3) > 0 {
				return engine.ExpectOf(cur)
			}
			return engine.Expect{Owner: owners[d.draw("expect owner", 0, len(owners)-1)], Counter: int64(d.draw("expect counter", 0, 5))}
		}
		lease := func(counter int64) engine.Lease {
			return engine.Lease{Key: key, Owner: owners[d.draw("owner", 0, len(owners)-1)], Counter: counter,
				Checkpoint: checkpoints[d.draw("checkpoint", 0, len(checkpoints)-1)]}
		}
		c := engine.Call{ID: uint64(i + 1)}
		switch r := d.draw("kind", 0, 99); {
		case r < o.scanPct:
			c.Op, c.Consistent = engine.OpListLeases, !o.stale || d.draw("consistent", 0, 1) == 1
		case r < o.scanPct+(100-o.scanPct)/5:
			c.Op, c.Key = engine.OpGetLease, key
		case r < o.scanPct+(100-o.scanPct)*2/5:
			c.Op, c.Lease = engine.OpCreateLease, lease(int64(d.draw("create counter", 0, 2)))
		case r < o.scanPct+(100-o.scanPct)*4/5:
			c.Op, c.Expect = engine.OpUpdateLease, expect()
			c.Lease = lease(c.Expect.Counter + 1)
		default:
			c.Op, c.Key, c.Expect = engine.OpDeleteLease, key, expect()
		}
		client := d.draw("client", 0, o.clients-1)
		call, ret := at-1, at+1
		if o.spread > 0 {
			call, ret = at-int64(d.draw("before", 0, o.spread)), at+int64(d.draw("after", 0, o.spread))
		}
		fate := "normal"
		if o.faultPct > 0 && d.draw("fault", 0, 99) < o.faultPct {
			switch d.draw("fate", 0, 3) {
			case 0:
				fate = "reply lost"
			case 1:
				fate = "request lost"
			case 2:
				fate = "late"
			case 3:
				fate = "throttled"
			}
		}
		var res engine.Result
		switch fate {
		case "normal":
			res = engine.Execute(ctx, store, nil, c)
		case "reply lost":
			engine.Execute(ctx, store, nil, c)
			ret = lin.Never
		case "request lost":
			ret = lin.Never
		case "late":
			ret = lin.Never
			if c.Op.IsWrite() {
				pending = append(pending, delayed{c, i + 1 + d.draw("delay", 0, 5)})
			}
		case "throttled":
			res.Err = fmt.Errorf("table: %w", engine.ErrThrottled)
		}
		if c.Op == engine.OpListLeases && !c.Consistent && len(snapshots) > 0 && ret != lin.Never {
			res.Listing = snapshots[d.draw("stale snapshot", 0, len(snapshots)-1)] // stale, by design
		}
		op, _ := lin.FromCall(client, call, ret, c, res)
		h = append(h, op)
		if o.stale {
			l, _ := store.ListLeases(ctx, true)
			snapshots = append(snapshots, l)
		}
	}
	return h
}

func checkOK(t *rapid.T, h []lin.Op) {
	res, err := lin.Check(h, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Ok {
		dumpVisualization(t, h, res)
		t.Fatalf("a history recorded from MemStore was flagged: %s", res.Info)
	}
}

func dumpVisualization(t interface{ Logf(string, ...any) }, h []lin.Op, res lin.Result) {
	if len(res.Illegal) == 0 {
		return
	}
	path := filepath.Join(os.TempDir(), "linearizability-"+res.Illegal[0]+".html")
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	if lin.Visualize(f, h, res.Illegal[0]) == nil {
		t.Logf("visualization: %s", path)
	}
}

func TestMemStoreSequentialHistories(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapidDraw{t}
		checkOK(t, genHistory(d, genOpts{keys: d.draw("keys", 1, 4), clients: 3, steps: d.draw("steps", 1, 80), scanPct: 10}))
	})
}

func TestMemStoreOverlappingHistories(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapidDraw{t}
		checkOK(t, genHistory(d, genOpts{keys: d.draw("keys", 1, 3), clients: 5, steps: d.draw("steps", 1, 80),
			spread: d.draw("spread", 0, 4*gap), scanPct: 10, stale: true}))
	})
}

func TestMemStoreHistoriesWithUnknownOutcomes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapidDraw{t}
		checkOK(t, genHistory(d, genOpts{keys: d.draw("keys", 1, 3), clients: 5, steps: d.draw("steps", 1, 60),
			spread: d.draw("spread", 0, 3*gap), faultPct: 30, scanPct: 10, stale: true}))
	})
}

// In a sequential history with every outcome known, the order is forced
// and the table's state at each call is determined: changing any outcome
// or any row a read returned must be flagged.
func TestCorruptedSequentialHistoriesAreFlagged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapidDraw{t}
		h := genHistory(d, genOpts{keys: d.draw("keys", 1, 3), clients: 3, steps: d.draw("steps", 1, 60), scanPct: 10})
		i := d.draw("corrupted", 0, len(h)-1)
		op := &h[i]
		out := &op.Output
		switch op.Input.Op {
		case engine.OpCreateLease, engine.OpUpdateLease, engine.OpDeleteLease:
			if out.Outcome == lin.OutcomeOK {
				out.Outcome = lin.OutcomeConditionFailed
			} else {
				out.Outcome = lin.OutcomeOK
			}
		case engine.OpGetLease:
			switch {
			case out.Outcome == lin.OutcomeNotFound:
				out.Outcome, out.Row = lin.OutcomeOK, lin.Row{Key: op.Input.Key, Owner: "ghost", Counter: 99}
			case d.draw("how", 0, 1) == 0:
				out.Outcome, out.Row = lin.OutcomeNotFound, lin.Row{}
			default:
				out.Row.Counter += 100
			}
		case engine.OpListLeases:
			if len(out.Rows) > 0 && d.draw("how", 0, 1) == 0 {
				out.Rows = out.Rows[1:] // one row missing
			} else {
				out.Rows = append(append([]lin.Row(nil), out.Rows...), lin.Row{Key: "shard-ghost", Counter: 1})
			}
		}
		t.Logf("corrupted history[%d]: %+v", i, *op)
		res, err := lin.Check(h, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ok || res.Unknown || len(res.Illegal) == 0 {
			t.Fatalf("a corrupted history passed: %s", res.Info)
		}
	})
}

// BenchmarkCheck10kOps100Keys checks a history of 10,000 calls on 100 keys
// from 20 clients, with overlapping windows (each call concurrent with ~6
// others), 5% of calls faulted (lost requests and replies, late writes,
// throttles) and 1% consistent scans (each one a read of every key).
func BenchmarkCheck10kOps100Keys(b *testing.B) {
	benchCheck(b, genOpts{keys: 100, clients: 20, steps: 10000, spread: 3 * gap, faultPct: 5, scanPct: 1})
}

// BenchmarkCheck10kOps100KeysNoScans is the same without scans.
func BenchmarkCheck10kOps100KeysNoScans(b *testing.B) {
	benchCheck(b, genOpts{keys: 100, clients: 20, steps: 10000, spread: 3 * gap, faultPct: 5})
}

// BenchmarkCheck10kOps100KeysHeavyFaults has 30% of calls faulted: about
// one write in four of unknown outcome.
func BenchmarkCheck10kOps100KeysHeavyFaults(b *testing.B) {
	benchCheck(b, genOpts{keys: 100, clients: 20, steps: 10000, spread: 3 * gap, faultPct: 30, scanPct: 1})
}

func benchCheck(b *testing.B, o genOpts) {
	h := genHistory(randDraw{rand.New(rand.NewPCG(1, 2))}, o)
	var res lin.Result
	for b.Loop() {
		var err error
		res, err = lin.Check(h, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Ok {
			b.Fatal(res.Info)
		}
	}
	b.ReportMetric(float64(res.Ops), "checked-ops")
	b.ReportMetric(float64(res.UnknownWrites), "unknown-writes")
}
