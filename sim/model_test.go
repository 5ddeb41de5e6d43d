package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
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

func TestTableWritesAndStaleScans(t *testing.T) {
	tb := newTable()
	l := engine.Lease{Key: "k", Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	if _, _, err := tb.write(1*time.Second, &engine.Call{Op: engine.OpCreateLease, Lease: l}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.write(2*time.Second, &engine.Call{Op: engine.OpCreateLease, Lease: l}, false); !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("second create: %v", err)
	}
	take := l
	take.Owner, take.Counter = "w1", 2
	if _, _, err := tb.write(3*time.Second, &engine.Call{Op: engine.OpUpdateLease, Lease: take, Expect: engine.Expect{Counter: 1}}, false); err != nil {
		t.Fatal(err)
	}
	stale := take
	stale.Owner, stale.Counter = "w2", 3
	if _, _, err := tb.write(4*time.Second, &engine.Call{Op: engine.OpUpdateLease, Lease: stale, Expect: engine.Expect{Counter: 1}}, false); !errors.Is(err, engine.ErrConditionFailed) {
		t.Fatalf("update at an old version: %v", err)
	}
	// the planted bug: the same write without its condition lands
	if _, _, err := tb.write(5*time.Second, &engine.Call{Op: engine.OpUpdateLease, Lease: stale, Expect: engine.Expect{Counter: 1}}, true); err != nil {
		t.Fatalf("unconditional update: %v", err)
	}
	if got := tb.list(5*time.Second, false); len(got) != 1 || got[0].Owner != "w2" {
		t.Fatalf("consistent scan %v", got)
	}
	if got := tb.list(3500*time.Millisecond, true); len(got) != 1 || got[0].Owner != "w1" {
		t.Fatalf("stale scan at 3.5s %v", got)
	}
	if got := tb.list(500*time.Millisecond, true); len(got) != 0 {
		t.Fatalf("stale scan before the create %v", got)
	}
	if _, _, err := tb.write(6*time.Second, &engine.Call{Op: engine.OpDeleteLease, Key: "k", Expect: engine.Expect{Owner: "w2", Counter: 3}}, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.get("k"); ok {
		t.Fatal("deleted row still there")
	}
	if got := tb.list(5500*time.Millisecond, true); len(got) != 1 {
		t.Fatalf("stale scan before the delete %v", got)
	}
}

func TestStream(t *testing.T) {
	s := newStream(streamName, 2, time.Minute)
	var seqs []string
	for i := 0; i < 10; i++ {
		_, seq := s.put(time.Duration(i)*time.Second, 0, "pk") // hash 0: the first shard
		seqs = append(seqs, seq)
	}
	sh0 := s.shards[0]
	it, err := s.getIterator(10*time.Second, streamName, sh0.info.ID, engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: seqs[3]})
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.getRecords(10*time.Second, it, 4)
	if err != nil || len(page.Records) != 4 || page.Records[0].Sequence != seqs[4] || page.NextIterator == "" {
		t.Fatalf("page %+v err %v", page, err)
	}
	if _, err := s.getRecords(10*time.Second+s.iterLife+1, page.NextIterator, 4); !errors.Is(err, engine.ErrExpiredIterator) {
		t.Fatalf("old iterator: %v", err)
	}
	// split: the parent closes, children start after its end
	a, b := s.split(11*time.Second, sh0)
	if !sh0.closed || a.info.Parent != sh0.info.ID || b.info.Parent != sh0.info.ID {
		t.Fatalf("split: %+v %+v", a.info, b.info)
	}
	if engine.CompareSequences(a.info.StartingSequence, sh0.info.EndingSequence) <= 0 {
		t.Fatalf("child starts at %s, parent ends at %s", a.info.StartingSequence, sh0.info.EndingSequence)
	}
	it, _ = s.getIterator(12*time.Second, streamName, sh0.info.ID, engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: seqs[9]})
	page, err = s.getRecords(12*time.Second, it, 100)
	if err != nil || page.NextIterator != "" || len(page.ChildShards) != 2 {
		t.Fatalf("end of the closed parent: %+v %v", page, err)
	}
	// merge two adjacent open shards
	open := s.open()
	c := s.merge(13*time.Second, open[0], open[1])
	if c.info.Parent == "" || c.info.AdjacentParent == "" || c.lo != open[0].lo || c.hi != open[1].hi {
		t.Fatalf("merge child %+v", c.info)
	}
	// retention: everything of the parent goes, then the parent itself
	trims, gone := s.expire(2 * time.Minute)
	if len(trims) == 0 || len(gone) == 0 {
		t.Fatalf("expire: %d trims, %d gone", len(trims), len(gone))
	}
	if _, err := s.getIterator(2*time.Minute, streamName, sh0.info.ID, engine.Position{Type: engine.IterTrimHorizon}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("expired shard: %v", err)
	}
	for _, x := range s.listShards() {
		if x.ID == sh0.info.ID {
			t.Fatal("expired shard still listed")
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
