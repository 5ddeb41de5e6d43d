package fakes

import (
	"math/big"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// TestListLeasesAsOf: one consistent view of the table at a chosen time
// within the lag, clamped to the lag.
func TestListLeasesAsOf(t *testing.T) {
	tb, clock := newTable(t, time.Minute, 1)
	t0 := clock.Now()
	must(t, tb.CreateLease(ctx, lease("a", "", 1)))
	clock.Advance(time.Second)
	must(t, tb.UpdateLease(ctx, engine.Expect{Counter: 1}, lease("a", "w1", 2)))
	must(t, tb.CreateLease(ctx, lease("b", "", 1)))
	clock.Advance(time.Second)
	must(t, tb.DeleteLease(ctx, "a", engine.Expect{Owner: "w1", Counter: 2}))
	clock.Advance(time.Second)

	view := func(at time.Time) string {
		t.Helper()
		l, err := tb.ListLeasesAsOf(ctx, at)
		must(t, err)
		s := ""
		for _, x := range l.Leases {
			s += x.Key + "/" + x.Owner + " "
		}
		return s
	}
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{t0.Add(-time.Millisecond), ""},
		{t0, "a/ "},
		{t0.Add(1500 * time.Millisecond), "a/w1 b/ "},
		{t0.Add(2 * time.Second), "b/ "},
		{clock.Now(), "b/ "},
		{clock.Now().Add(time.Hour), "b/ "},
	} {
		if got := view(c.at); got != c.want {
			t.Errorf("as of %v: %q, want %q", c.at.Sub(t0), got, c.want)
		}
	}
	// beyond the lag: clamped to now-lag
	clock.Advance(time.Minute + 1500*time.Millisecond)
	if got := view(t0); got != "b/ " {
		t.Errorf("as of a time beyond the lag: %q", got)
	}
	if n := tb.Stats().Of(engine.OpListLeases).Calls; n != 7 {
		t.Errorf("counted %d ListLeases", n)
	}
}

// TestPutRecordWithHash: an explicit hash key routes the record whatever
// its partition key.
func TestPutRecordWithHash(t *testing.T) {
	k := NewKinesis(KinesisOptions{Seed: 3})
	must(t, k.CreateStream("s", 4))
	shards := listShards(t, k, "s")
	for i, hi := range []uint64{0, 1 << 62, 1<<63 + 5, ^uint64(0)} {
		id, _, err := k.PutRecordWithHash("s", "same-key", hi, 7, nil)
		must(t, err)
		h := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		h.Or(h, big.NewInt(7))
		if id != shards[i].ID || !inRange(t, shards[i], h) {
			t.Errorf("hash %v went to %s, want %s", h, id, shards[i].ID)
		}
	}
	if _, _, err := k.PutRecordWithHash("nope", "k", 0, 0, nil); err == nil {
		t.Error("put to a missing stream")
	}
}

// TestOnTrim: the hooks see every record retention hides, once, no later
// than a reader could: OnTrim the records, OnTrimRange their bounds.
func TestOnTrim(t *testing.T) {
	clock := NewManualClock(defaultStart)
	var trimmed []string
	ranges := 0
	k := NewKinesis(KinesisOptions{Clock: clock, Retention: time.Minute, OnTrim: func(stream, shard string, recs []engine.Record) {
		if stream != "s" || shard != "shardId-000000000000" {
			t.Errorf("trim of %s/%s", stream, shard)
		}
		trimmed = append(trimmed, seqs(recs)...)
	}, OnTrimRange: func(stream, shard, first, last string, n int) {
		// called after OnTrim, with its records' bounds
		if n < 1 || len(trimmed) < n {
			t.Fatalf("OnTrimRange of %d records after OnTrim's %d", n, len(trimmed))
		}
		if got := trimmed[len(trimmed)-n:]; stream != "s" || got[0] != first || got[n-1] != last {
			t.Errorf("OnTrimRange %s/%s %s..%s (%d), OnTrim ends with %v", stream, shard, first, last, n, got)
		}
		ranges += n
	}})
	must(t, k.CreateStream("s", 1))
	var put []string
	for range 10 {
		_, seq, err := k.PutRecord("s", "pk", nil)
		must(t, err)
		put = append(put, seq)
		clock.Advance(10 * time.Second)
	}
	// now = 100s: records put at 0s..30s are older than a minute
	it, err := k.GetShardIterator(ctx, "s", "shardId-000000000000", engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	if len(trimmed) != 4 || trimmed[0] != put[0] || trimmed[3] != put[3] {
		t.Fatalf("trimmed %v by the time an iterator reads", trimmed)
	}
	clock.Advance(15 * time.Second)
	page, err := k.GetRecords(ctx, it, 100)
	must(t, err)
	if len(trimmed) != 6 || page.Records[0].Sequence != put[6] {
		t.Fatalf("trimmed %v, read from %s", trimmed, page.Records[0].Sequence)
	}
	if _, err := k.Shards("s"); err != nil || len(trimmed) != 6 || ranges != 6 {
		t.Fatalf("trimmed twice: %v (%d by ranges) %v", trimmed, ranges, err)
	}
}

func TestClockFunc(t *testing.T) {
	at := defaultStart.Add(time.Hour)
	if got := ClockFunc(func() time.Time { return at }).Now(); !got.Equal(at) {
		t.Fatal(got)
	}
}
