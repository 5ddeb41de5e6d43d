package engine

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine/kpl"
)

// aggregate returns a KPL aggregate of n user records "<tag>-<i>", with
// partition key "pk-<tag>" (one hash key for all).
func aggregate(t testing.TB, tag string, n int) []byte {
	t.Helper()
	recs := make([]kpl.UserRecord, n)
	for i := range recs {
		recs[i] = kpl.UserRecord{PartitionKey: "pk-" + tag, Data: fmt.Appendf(nil, "%s-%d", tag, i)}
	}
	b, err := kpl.Encode(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putData appends records with the given payloads to shard and returns
// their sequence numbers.
func (s *tStream) putData(shard string, data ...[]byte) []string {
	var seqs []string
	for _, d := range data {
		s.seq++
		seq := fmt.Sprintf("4959%052d", s.seq)
		s.recs[shard] = append(s.recs[shard], Record{Sequence: seq, PartitionKey: "kinesis-pk", Data: d, Arrival: time.Unix(1_700_000_000, int64(s.seq))})
		seqs = append(seqs, seq)
	}
	return seqs
}

// sealMessage wraps a protobuf message as an aggregated record with a valid
// digest.
func sealMessage(msg []byte) []byte {
	sum := md5.Sum(msg)
	return append(append(append([]byte(nil), kpl.Magic[:]...), msg...), sum[:]...)
}

// pos names a record as a checkpoint does.
func pos(r Record) Checkpoint { return Checkpoint{Sequence: r.Sequence, SubSequence: r.SubSequence} }

func positions(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = pos(r).String() + "=" + string(r.Data)
	}
	return out
}

// The pure page transformation: user records in place of aggregates,
// everything else untouched, the bad ones reported.
func TestDeaggregatePage(t *testing.T) {
	arrival := time.Unix(1_700_000_000, 0)
	agg, err := kpl.Encode([]kpl.UserRecord{
		{PartitionKey: "a", Data: []byte("u0")},
		{PartitionKey: "b", ExplicitHashKey: "12345", Data: []byte("u1")},
		{PartitionKey: "a", Data: []byte("u2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	badDigest := bytes.Clone(agg)
	badDigest[len(badDigest)-1] ^= 1
	malformed := sealMessage([]byte("\x1a\x05\x08\x07\x1a\x01x")) // partition key index 7, no table
	empty := sealMessage([]byte("\x0a\x01a"))                     // a table, no records

	page := []Record{
		{Sequence: "1", PartitionKey: "plain", Data: []byte("p1"), Arrival: arrival},
		{Sequence: "2", PartitionKey: "a", Data: agg, Arrival: arrival.Add(time.Second)},
		{Sequence: "3", Data: badDigest},
		{Sequence: "4", Data: malformed},
		{Sequence: "5", Data: empty},
		{Sequence: "6", PartitionKey: "plain", Data: []byte("p6")},
	}
	orig := slices.Clone(page)
	out, drops := deaggregate(page, kpl.FullRange, false)
	want := []Record{
		page[0],
		{Sequence: "2", SubSequence: 0, PartitionKey: "a", Data: []byte("u0"), Arrival: arrival.Add(time.Second), Aggregated: true},
		{Sequence: "2", SubSequence: 1, PartitionKey: "b", ExplicitHashKey: "12345", Data: []byte("u1"), Arrival: arrival.Add(time.Second), Aggregated: true},
		{Sequence: "2", SubSequence: 2, PartitionKey: "a", Data: []byte("u2"), Arrival: arrival.Add(time.Second), Aggregated: true},
		page[5],
	}
	if !slices.EqualFunc(out, want, equalRecord) {
		t.Fatalf("records\n%+v\nwant\n%+v", out, want)
	}
	if !slices.EqualFunc(page, orig, equalRecord) {
		t.Error("the page was modified")
	}
	if len(drops) != 2 || drops[0].sequence != "3" || drops[1].sequence != "4" ||
		!strings.HasPrefix(drops[0].reason, DropCorrupt+": kpl: the MD5 digest") || !strings.HasPrefix(drops[1].reason, DropCorrupt+": kpl: malformed") ||
		drops[0].delivered || drops[1].delivered {
		t.Errorf("drops %+v", drops)
	}

	// Delivering corrupt records as they were read, as the KCL does.
	out, drops = deaggregate(page, kpl.FullRange, true)
	if len(out) != 7 || !equalRecord(out[4], page[2]) || !equalRecord(out[5], page[3]) || len(drops) != 2 || !drops[0].delivered || !drops[1].delivered {
		t.Errorf("with deliverCorrupt: %v, drops %+v", positions(out), drops)
	}

	// A page without aggregates is returned as it is.
	plain := []Record{page[0], page[5]}
	if out, drops := deaggregate(plain, kpl.FullRange, false); &out[0] != &plain[0] || len(out) != 2 || drops != nil {
		t.Errorf("a plain page was copied or changed: %v %v", out, drops)
	}
}

// The KCL's hash-range rule: an aggregate with any user record outside the
// shard's range is dropped whole; one inside is delivered.
func TestDeaggregateHashRange(t *testing.T) {
	hA, hB := kpl.PartitionKeyHash("a"), kpl.PartitionKeyHash("b")
	lo, hi := hA, hB
	if lo.Compare(hi) > 0 {
		lo, hi = hi, lo
	}
	keys := kpl.HashRange{Start: lo, End: lo} // holds the smaller of the two only
	inside, outside := "a", "b"
	if lo == hB {
		inside, outside = "b", "a"
	}
	mk := func(recs ...kpl.UserRecord) []byte {
		b, err := kpl.Encode(recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	page := []Record{
		{Sequence: "1", Data: mk(kpl.UserRecord{PartitionKey: inside, Data: []byte("in")}, kpl.UserRecord{PartitionKey: inside, Data: []byte("in2")})},
		{Sequence: "2", Data: mk(kpl.UserRecord{PartitionKey: inside, Data: []byte("x")}, kpl.UserRecord{PartitionKey: outside, Data: []byte("y")})},
		{Sequence: "3", Data: mk(kpl.UserRecord{PartitionKey: outside, ExplicitHashKey: lo.String(), Data: []byte("ehk")})},
		{Sequence: "4", Data: mk(kpl.UserRecord{PartitionKey: inside, ExplicitHashKey: kpl.MaxHashKey.String(), Data: []byte("ehk-out")})},
		{Sequence: "5", PartitionKey: outside, Data: []byte("plain records are never filtered")},
	}
	out, drops := deaggregate(page, keys, false)
	if got := positions(out); !slices.Equal(got, []string{"1=in", "1.1=in2", "3=ehk", "5=plain records are never filtered"}) {
		t.Errorf("delivered %v", got)
	}
	if len(drops) != 2 || drops[0].sequence != "2" || drops[0].count != 2 || drops[1].sequence != "4" ||
		!strings.HasPrefix(drops[0].reason, DropHashRange+": user record 1 of 2 has hash key") {
		t.Errorf("drops %+v", drops)
	}
	if out, drops := deaggregate(page, kpl.FullRange, false); len(out) != 7 || len(drops) != 0 {
		t.Errorf("the full range filtered: %v %v", positions(out), drops)
	}
}

func equalRecord(a, b Record) bool {
	return a.Sequence == b.Sequence && a.SubSequence == b.SubSequence && a.PartitionKey == b.PartitionKey &&
		a.ExplicitHashKey == b.ExplicitHashKey && bytes.Equal(a.Data, b.Data) && a.Arrival.Equal(b.Arrival) && a.Aggregated == b.Aggregated
}

// The processor gets the user records of aggregates, in order, between the
// plain records around them, and the trace names sub-sequence numbers.
func TestAggregatedRecordsReachProcessor(t *testing.T) {
	u := newUnit(t, Config{})
	key := shardKey(0)
	u.stream.add(key)
	u.stream.put(key, 1)
	u.stream.putData(key, aggregate(t, "x", 3))
	u.stream.put(key, 1)
	u.put(Lease{Key: key, Checkpoint: startSeq()})
	u.runTo(2 * time.Second)
	var got []Record
	for _, n := range u.noticesOf(NoticeRecords, key) {
		got = append(got, n.n.Records...)
	}
	recs := u.stream.recs[key]
	want := []string{recs[0].Sequence + "=", recs[1].Sequence + "=x-0", recs[1].Sequence + ".1=x-1", recs[1].Sequence + ".2=x-2", recs[2].Sequence + "="}
	if !slices.Equal(positions(got), want) {
		t.Fatalf("delivered %v, want %v", positions(got), want)
	}
	if !got[1].Aggregated || got[0].Aggregated || got[2].PartitionKey != "pk-x" || got[0].PartitionKey != recs[0].PartitionKey {
		t.Errorf("record fields: %+v", got)
	}
	d := u.traceOf(TraceDelivered, key)
	if len(d) != 1 || d[0].Count != 5 || d[0].First != recs[0].Sequence || d[0].Last != recs[2].Sequence {
		t.Errorf("delivered events %v", d)
	}
	// A checkpoint inside the aggregate is accepted and stored with its
	// sub-sequence number; one beyond what was delivered is not.
	cp := Checkpoint{Sequence: recs[1].Sequence, SubSequence: 1}
	if n, ok := u.checkpoint(key, cp); !ok || n.Err != nil {
		t.Fatalf("checkpoint %v: %v %v", cp, ok, n.Err)
	}
	if row := u.row(key); row.Checkpoint != cp {
		t.Errorf("stored checkpoint %v, want %v", row.Checkpoint, cp)
	}
	if n, ok := u.checkpoint(key, Checkpoint{Sequence: recs[2].Sequence, SubSequence: 1}); !ok || n.Err == nil {
		t.Errorf("a checkpoint beyond the records delivered was accepted")
	}
}

// A checkpoint at a user record of an aggregate survives a handoff: the
// next owner delivers exactly the user records after it, then the rest of
// the shard — nothing lost, nothing repeated. A checkpoint at the first
// user record (sub-sequence 0, the same checkpoint as a plain record) must
// not skip the rest of its aggregate; one at the last goes on with the
// next record, as the KCL does.
func TestSubSequenceCheckpointSurvivesHandoff(t *testing.T) {
	for _, sub := range []int64{-1, 0, 2, 4} { // -1: at the plain record before the aggregate
		t.Run(fmt.Sprint("sub_", sub), func(t *testing.T) {
			c := newCluster(t, 1, Config{})
			key := shardKey(0)
			c.stream.put(key, 1)
			c.stream.putData(key, aggregate(t, "x", 5))
			c.stream.put(key, 1)
			a := c.start("A")
			a.noCheckpoint = true
			c.runUntil(20*time.Second, "A delivers", func() bool { return len(a.recs[key]) == 7 })
			all := a.recs[key]
			at := 1 + int(sub) // index in all
			cp := pos(all[at])
			c.step(a, Input{Kind: InputCheckpoint, Key: key, Checkpoint: cp, Token: 1})
			if len(a.cpResults) != 1 || a.cpResults[0].Err != nil || c.row(key).Checkpoint != cp {
				t.Fatalf("checkpoint %v: %+v, row %v", cp, a.cpResults, c.row(key))
			}
			b := c.start("B")
			b.noCheckpoint = true
			a.down = true // crash
			c.runUntil(30*time.Second, "B takes over", func() bool { return len(c.held("B")) == 1 })
			c.runUntil(10*time.Second, "B delivers", func() bool { return len(b.recs[key]) > 0 })
			c.run(2 * time.Second)
			if got, want := positions(b.recs[key]), positions(all[at+1:]); !slices.Equal(got, want) {
				t.Errorf("B delivered %v, want %v", got, want)
			}
		})
	}
}

// Corrupt aggregates are dropped (or, with DeliverCorruptAggregates,
// delivered as they were read) and reported once, not silently; reading
// goes on.
func TestCorruptAggregateReported(t *testing.T) {
	for _, deliver := range []bool{false, true} {
		t.Run(fmt.Sprint("deliver_", deliver), func(t *testing.T) {
			u := newUnit(t, Config{DeliverCorruptAggregates: deliver})
			key := shardKey(0)
			u.stream.add(key)
			bad := aggregate(t, "x", 3)
			bad[10] ^= 0xff
			seqs := u.stream.putData(key, []byte("before"), bad, []byte("after"))
			u.put(Lease{Key: key, Checkpoint: startSeq()})
			u.runTo(2 * time.Second)
			var got []string
			for _, n := range u.noticesOf(NoticeRecords, key) {
				got = append(got, positions(n.n.Records)...)
			}
			want := []string{seqs[0] + "=before", seqs[2] + "=after"}
			kind := TraceAggregateDropped
			if deliver {
				want = []string{seqs[0] + "=before", seqs[1] + "=" + string(bad), seqs[2] + "=after"}
				kind = TraceAggregateUndecoded
			}
			if !slices.Equal(got, want) {
				t.Errorf("delivered %q, want %q", got, want)
			}
			ev := u.traceOf(kind, key)
			if len(ev) != 1 || ev[0].First != seqs[1] || !strings.HasPrefix(ev[0].Reason, DropCorrupt+": kpl: the MD5 digest") {
				t.Errorf("events %v", ev)
			}
			if n := len(u.traceOf(TraceAggregateDropped, key)) + len(u.traceOf(TraceAggregateUndecoded, key)); n != 1 {
				t.Errorf("%d events, want 1", n)
			}
		})
	}
}

// The hash key range of the lease row filters aggregates put to the wrong
// shard (the KPL's shard map was stale), with a trace event; a row without
// a range (a table written by an older KCL) falls back to the listing's.
func TestHashRangeFilterFromLease(t *testing.T) {
	hx := kpl.PartitionKeyHash("pk-x")
	for _, from := range []string{"row", "listing"} {
		t.Run(from, func(t *testing.T) {
			u := newUnit(t, Config{})
			key := shardKey(0)
			u.stream.add(key)
			// The shard owns everything below pk-x's hash key.
			end := kpl.HashKey{Hi: hx.Hi, Lo: hx.Lo - 1}
			if hx.Lo == 0 {
				t.Skip("pk-x hashes to a multiple of 2^64")
			}
			sh := u.stream.shard(key)
			sh.StartingHashKey, sh.EndingHashKey = "0", end.String()
			seqs := u.stream.putData(key, aggregate(t, "x", 2), []byte("plain"))
			row := Lease{Key: key, Checkpoint: startSeq()}
			if from == "row" {
				row.StartingHashKey, row.EndingHashKey = "0", end.String()
			}
			u.put(row)
			u.runTo(20 * time.Second) // a shard sync has listed the shard
			var got []string
			for _, n := range u.noticesOf(NoticeRecords, key) {
				got = append(got, positions(n.n.Records)...)
			}
			if !slices.Equal(got, []string{seqs[1] + "=plain"}) {
				t.Errorf("delivered %v", got)
			}
			ev := u.traceOf(TraceAggregateDropped, key)
			if len(ev) != 1 || ev[0].First != seqs[0] || ev[0].Count != 2 || !strings.HasPrefix(ev[0].Reason, DropHashRange) {
				t.Errorf("events %v", ev)
			}
		})
	}
}

// The driver logs a corrupt aggregate at WARN, one filtered by hash range
// at INFO (Consumer.observe).
func TestLogTrace(t *testing.T) {
	var buf bytes.Buffer
	c := &Consumer{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	c.observe(TraceEvent{Kind: TraceAggregateDropped, Key: "k", First: "11", Reason: DropCorrupt + ": bad"})
	c.observe(TraceEvent{Kind: TraceAggregateDropped, Key: "k", First: "12", Count: 3, Reason: DropHashRange + ": outside"})
	c.observe(TraceEvent{Kind: TraceAggregateUndecoded, Key: "k", First: "13", Reason: DropCorrupt + ": bad"})
	c.observe(TraceEvent{Kind: TraceDelivered, Key: "k"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "sequence=11") ||
		!strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[1], "user_records=3") ||
		!strings.Contains(lines[2], "level=WARN") || !strings.Contains(lines[2], "sequence=13") {
		t.Errorf("logged:\n%s", buf.String())
	}
}

// Resuming AT the checkpoint reads the checkpointed record again; a page
// that holds only it (or only dropped aggregates) is not an idle stream:
// the next page is read at once, not after IdleTimeBetweenReads.
func TestPageOfDeliveredRecordsIsNotIdle(t *testing.T) {
	u := newUnit(t, Config{GetRecordsLimit: 1, IdleTimeBetweenReads: time.Hour})
	key := shardKey(0)
	u.stream.add(key)
	bad := aggregate(t, "x", 2)
	bad[len(bad)-1] ^= 1
	seqs := u.stream.putData(key, []byte("r0"), bad, []byte("r2"))
	u.put(Lease{Key: key, Checkpoint: SequenceCheckpoint(seqs[0])})
	u.runTo(time.Second)
	var got []string
	for _, n := range u.noticesOf(NoticeRecords, key) {
		got = append(got, positions(n.n.Records)...)
	}
	if !slices.Equal(got, []string{seqs[2] + "=r2"}) {
		t.Errorf("delivered %v within a second, want %s", got, seqs[2])
	}
}

// BenchmarkDeaggregate: a page of 1,000 plain records (the cost every
// page pays: a look at four bytes each), and a page of 100 aggregates of
// 10 user records, filtered by a hash key range.
func BenchmarkDeaggregate(b *testing.B) {
	plain := make([]Record, 1000)
	for i := range plain {
		plain[i] = Record{Sequence: fmt.Sprint(i), Data: make([]byte, 64)}
	}
	aggs := make([]Record, 100)
	for i := range aggs {
		aggs[i] = Record{Sequence: fmt.Sprint(i), Data: aggregate(b, fmt.Sprint(i), 10)}
	}
	half := kpl.HashRange{End: kpl.HashKey{Hi: 1 << 63}}
	b.Run("plain-1000", func(b *testing.B) {
		for b.Loop() {
			deaggregate(plain, half, false)
		}
	})
	b.Run("aggregates-100x10", func(b *testing.B) {
		for b.Loop() {
			deaggregate(aggs, half, false)
		}
	})
}
