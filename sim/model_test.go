package sim

import (
	"testing"
	"time"
)

func TestQueueOrder(t *testing.T) {
	var q queue
	r := newRNG(1, 99)
	for i := 0; i < 1000; i++ {
		q.push(event{at: time.Duration(r.IntN(50)), a: uint64(i)})
	}
	var last event
	for i := 0; q.len() > 0; i++ {
		e := q.pop()
		if i > 0 && (e.at < last.at || (e.at == last.at && e.seq < last.seq)) {
			t.Fatalf("out of order: %+v after %+v", e, last)
		}
		last = e
	}
}

func TestClock(t *testing.T) {
	for _, drift := range []float64{-0.05, 0, 0.0123, 0.3} {
		c := wclock{monoOrigin: 17 * time.Second, drift: drift, wallOffset: -3 * time.Minute}
		prev := c.mono(0)
		for tt := time.Duration(0); tt < time.Hour; tt += 7*time.Second + 3 {
			m := c.mono(tt)
			if m < prev {
				t.Fatalf("drift %v: mono went back at %v", drift, tt)
			}
			prev = m
			at := c.trueAt(m + 5*time.Millisecond)
			if c.mono(at) < m+5*time.Millisecond || (at > 0 && c.mono(at-1) >= m+5*time.Millisecond) {
				t.Fatalf("drift %v: trueAt(%v) = %v is not the first true time", drift, m, at)
			}
		}
		c.steps = -time.Minute
		if got := c.wall(0); !got.Equal(epoch.Add(-4 * time.Minute)) {
			t.Errorf("wall with offset and step: %v", got)
		}
	}
}

// TestTiers: the outside fault classes put a run outside the assumptions.
func TestTiers(t *testing.T) {
	for _, c := range []struct {
		faults string
		inside bool
	}{{"none", true}, {"drift-beyond", false}, {"dup-owner", false}, {"long-pause", false}} {
		res, err := Run(Options{Seed: 11, Workers: 3, Shards: 4, Chaos: 40 * time.Second, Faults: c.faults})
		if err != nil {
			t.Fatal(err)
		}
		if res.Inside != c.inside {
			t.Errorf("faults %s: inside=%v (%v)", c.faults, res.Inside, res.Outside)
		}
	}
}

// TestNetworkFaultsShowInTrace: with loss, duplicates and partitions the
// trace shows timeouts, SDK retries and partitioned calls, and the
// invariants hold.
func TestNetworkFaultsShowInTrace(t *testing.T) {
	res, err := Run(Options{Seed: 4, Workers: 3, Shards: 4, Chaos: 90 * time.Second, Faults: "loss,dup,partition,table-errors,stale-reads", KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range res.Trace {
		if r.Fault != "" {
			seen[r.Fault] = true
		}
		if r.Outcome != "" {
			seen["outcome:"+r.Outcome] = true
		}
	}
	for _, want := range []string{"outcome:timeout", "sdk-retry", "outcome:condition-failed"} {
		if !seen[want] {
			t.Errorf("no %s in the trace (saw %v)", want, seen)
		}
	}
	for _, v := range res.Violations {
		t.Errorf("violation: %s", FormatViolation(v))
	}
}
