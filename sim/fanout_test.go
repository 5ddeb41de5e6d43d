package sim

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Fan-out worlds are as deterministic as polling ones: same seed, same
// trace hash, under any GOMAXPROCS.
func TestDeterminismFanOut(t *testing.T) {
	for _, seed := range []uint64{3, 11} {
		o := Options{Seed: seed, Consumer: "fan-out", Faults: "swarm"}
		a, err := Run(o)
		if err != nil {
			t.Fatal(err)
		}
		if !a.World.FanOut.On {
			t.Fatalf("seed %d: not a fan-out world", seed)
		}
		for _, procs := range []int{1, 4} {
			old := runtime.GOMAXPROCS(procs)
			b, err := Run(o)
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatal(err)
			}
			if a.TraceHash != b.TraceHash || a.Events != b.Events {
				t.Fatalf("seed %d under GOMAXPROCS=%d: %016x/%d, want %016x/%d", seed, procs, b.TraceHash, b.Events, a.TraceHash, a.Events)
			}
		}
	}
}

// The swarm draws fan-out for about 3 worlds in 10, with its fault
// classes, and never in a world whose consumer is pinned to polling.
func TestSwarmDrawsFanOut(t *testing.T) {
	fanOut, classes := 0, 0
	for seed := uint64(1); seed <= 200; seed++ {
		w, err := drawWorld(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if w.FanOut.On {
			fanOut++
			for _, c := range FanOutClasses {
				if w.has(c) {
					classes++
				}
			}
			if cfg := w.engineConfig("x", 1); cfg.Consumer != engine.FanOut || cfg.ConsumerName == "" {
				t.Fatalf("seed %d: a fan-out world configures %v %q", seed, cfg.Consumer, cfg.ConsumerName)
			}
		} else {
			for _, c := range FanOutClasses {
				if w.has(c) {
					t.Fatalf("seed %d: fan-out class %s in a polling world", seed, c)
				}
			}
		}
		if p, _ := drawWorld(Options{Seed: seed, Consumer: "polling"}); p.FanOut.On {
			t.Fatalf("seed %d: Consumer polling drew fan-out", seed)
		}
	}
	if fanOut < 40 || fanOut > 80 || classes == 0 {
		t.Fatalf("%d fan-out worlds of 200 (%d fan-out classes): want about 60, with classes", fanOut, classes)
	}
	t.Logf("%d fan-out worlds of 200 seeds, %d fan-out fault classes drawn", fanOut, classes)
}

// Records are pushed as they arrive: a NextEvent waiting at the service is
// answered when a record is put, not when its wait runs out.
func TestFanOutPushesPromptly(t *testing.T) {
	r, err := Run(Options{Seed: 5, Workers: 1, Shards: 1, Faults: "none", Consumer: "fan-out", Chaos: 60 * time.Second, KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	put := map[string]time.Duration{}
	var lat []time.Duration
	for _, x := range r.Trace {
		switch {
		case x.Kind == trace.KindPut:
			put[x.First] = x.T
		case x.Kind == trace.Delivered && x.Count > 0:
			if at, ok := put[x.Last]; ok {
				lat = append(lat, x.T-at)
			}
		}
	}
	if len(lat) < 20 {
		t.Fatalf("%d deliveries measured", len(lat))
	}
	slices.Sort(lat)
	p50, p90 := lat[len(lat)/2], lat[len(lat)*9/10]
	t.Logf("put to delivery of a batch's last record: p50 %v, p90 %v over %d batches (stream latency %v+%v)", p50, p90, len(lat),
		r.World.StreamLatency.Base, r.World.StreamLatency.Tail)
	if p90 > time.Second {
		t.Fatalf("p90 %v from put to delivery: pushes wait for the NextEvent wait (%v) instead of the record", p90, engine.EventWait)
	}
}
