package sim

import (
	"testing"
	"time"

	"github.com/shardlease/shardlease/sim/check"
)

// balancedWorld returns options of a fault-free world of several workers
// whose L1 checks balance, and its world.
func balancedWorld(t *testing.T) (Options, World) {
	t.Helper()
	for seed := uint64(1); seed < 100; seed++ {
		o := Options{Seed: seed, Workers: 3, Shards: 9, Faults: "none", NoExcerpts: true}
		w, err := drawWorld(o)
		if err != nil {
			t.Fatal(err)
		}
		if w.Balance && w.SettleMin > 0 && w.SettleMin < w.Quiet {
			return o, w
		}
	}
	t.Fatal("no seed below 100 draws a balanced world")
	return Options{}, World{}
}

// TestSettledWorldEndsEarly: a healthy world's healing phase ends once it
// has settled, no earlier than SettleMin, and passes L1 as the whole phase
// does; the same world with its quiet phase given runs it whole.
func TestSettledWorldEndsEarly(t *testing.T) {
	o, w := balancedWorld(t)
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Duration(res.VirtualSeconds * float64(time.Second))
	if end < w.Chaos+w.SettleMin || end >= w.Chaos+w.Quiet {
		t.Fatalf("seed %d ended at %v; want in [%v, %v) (heal %v, settle min %v, quiet %v)", o.Seed, end, w.Chaos+w.SettleMin, w.Chaos+w.Quiet, w.Chaos, w.SettleMin, w.Quiet)
	}
	if len(res.Violations) > 0 {
		t.Fatalf("seed %d: %v", o.Seed, res.Violations)
	}
	again, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if again.TraceHash != res.TraceHash || again.VirtualSeconds != res.VirtualSeconds {
		t.Fatalf("a settled end is not deterministic: %x at %v s, then %x at %v s", res.TraceHash, res.VirtualSeconds, again.TraceHash, again.VirtualSeconds)
	}
	whole := o
	whole.Quiet = w.Quiet
	full, err := Run(whole)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(full.VirtualSeconds * float64(time.Second)); got != w.Chaos+w.Quiet {
		t.Fatalf("with -quiet %v the run ended at %v, want %v", w.Quiet, got, w.Chaos+w.Quiet)
	}
	if len(full.Violations) > 0 {
		t.Fatalf("the whole phase: %v", full.Violations)
	}
	if res.Events >= full.Events {
		t.Fatalf("ending early took %d events, the whole phase %d", res.Events, full.Events)
	}
}

// TestUnsettledWorldRunsItsPhase: a world kept from settling (a worker cut
// off from the table from just before the earliest end to the last moment,
// so that its leases go to the others and it holds none: unbalanced) runs
// its whole healing phase, and L1 finds the imbalance at its end.
func TestUnsettledWorldRunsItsPhase(t *testing.T) {
	o, w := balancedWorld(t)
	cut := w.Chaos + w.SettleMin - w.SettleFor - 30*time.Second
	o.Actions = []Action{{At: cut, Kind: ActPartition, Workers: []int{0}, Target: "table", Dir: "both", Dur: w.Chaos + w.Quiet - cut + time.Second}}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(res.VirtualSeconds * float64(time.Second)); got != w.Chaos+w.Quiet {
		t.Fatalf("seed %d with a worker cut off ended at %v, want the whole phase (%v)", o.Seed, got, w.Chaos+w.Quiet)
	}
	found := false
	for _, v := range res.Violations {
		if v.Invariant == check.L1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("seed %d: L1 did not fire on a worker cut off to the end: %v", o.Seed, res.Violations)
	}
}
