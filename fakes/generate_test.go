package fakes

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kpl"
)

// genModel is what a test saw a generated stream put, shard by shard.
type genModel struct {
	puts    map[string][]GeneratedPut
	trimmed map[string]int // from OnTrimRange
	quiet   map[string]bool
	order   []GeneratedPut
	stored  map[string][]byte // the data of explicit puts, by sequence number
	checked map[string]int    // records whose data a check has seen
}

// genWorld drives a generated stream of 4 shards for 40 virtual minutes
// with 10 minutes of retention: splits, a merge, a burst, quiet shards
// and explicit puts at set times. check, if set, runs every minute of
// virtual time with the model so far.
func genWorld(t *testing.T, seed uint64, check func(k *Kinesis, clock *ManualClock, m *genModel)) (*Kinesis, *genModel) {
	t.Helper()
	m := &genModel{puts: map[string][]GeneratedPut{}, trimmed: map[string]int{}, quiet: map[string]bool{}, stored: map[string][]byte{}, checked: map[string]int{}}
	var k *Kinesis
	opts := KinesisOptions{Seed: seed, Retention: 10 * time.Minute, OnTrimRange: func(stream, shard, first, last string, n int) {
		got := m.puts[shard]
		from := m.trimmed[shard]
		if from+n > len(got) || got[from].Sequence != first || got[from+n-1].Sequence != last {
			t.Fatalf("OnTrimRange %s %s..%s (%d) after %d trimmed of %d", shard, first, last, n, from, len(got))
		}
		m.trimmed[shard] = from + n
	}}
	k, clock := newKinesis(t, opts)
	must(t, k.CreateGeneratedStream("g", 4, GeneratedRecords{Rate: 8, AggregateShare: 0.3, AggregateMax: 5}))
	step := 0
	actions := []struct {
		at time.Duration
		do func()
	}{
		{3 * time.Minute, func() { _, err := k.SplitShardEvenly("g", shardID(1)); must(t, err) }},
		{5 * time.Minute, func() {
			must(t, k.SetQuiet("g", []string{shardID(0), shardID(5)}))
			m.quiet[shardID(0)], m.quiet[shardID(5)] = true, true
		}},
		{6 * time.Minute, func() {
			_, err := k.SplitShardEvenly("g", shardID(5))
			must(t, err)
			m.quiet[shardID(6)], m.quiet[shardID(7)] = true, true
		}},
		{8 * time.Minute, func() { _, err := k.MergeShards("g", shardID(2), shardID(3)); must(t, err) }},
		{10 * time.Minute, func() { must(t, k.SetPutRate("g", 80)) }},
		{11 * time.Minute, func() { must(t, k.SetPutRate("g", 8)) }},
		{13 * time.Minute, func() {
			for i := 0; i < 3; i++ {
				data := []byte("stored-" + fmt.Sprint(i))
				sh, seq, err := k.PutRecordWithHash("g", "explicit", uint64(i)<<62, 0, data)
				must(t, err)
				m.stored[seq] = data
				m.puts[sh] = append(m.puts[sh], GeneratedPut{Shard: sh, Sequence: seq, Arrival: clock.Now()})
			}
		}},
		{15 * time.Minute, func() { must(t, k.SetQuiet("g", nil)); m.quiet = map[string]bool{} }},
		{40 * time.Minute, nil},
	}
	start := clock.Now()
	next := time.Minute
	for _, a := range actions {
		for {
			at, ok := k.NextArrival("g")
			stop := start.Add(min(a.at, next))
			if !ok || at.After(stop) {
				clock.Set(stop)
			} else {
				clock.Set(at)
			}
			for {
				p, ok, err := k.PutGenerated("g")
				must(t, err)
				if !ok {
					break
				}
				if m.quiet[p.Shard] {
					t.Fatalf("a quiet shard %s got record %s", p.Shard, p.Sequence)
				}
				if !p.Arrival.Equal(clock.Now()) {
					t.Fatalf("%s arrived at %v, put at %v", p.Sequence, p.Arrival, clock.Now())
				}
				if n := len(m.order); n > 0 && p.Arrival.Before(m.order[n-1].Arrival) {
					t.Fatalf("put out of arrival order: %+v after %+v", p, m.order[n-1])
				}
				m.order = append(m.order, p)
				m.puts[p.Shard] = append(m.puts[p.Shard], p)
				step++
			}
			if clock.Now().Equal(start.Add(next)) {
				if check != nil {
					check(k, clock, m)
				}
				next += time.Minute
			}
			if !clock.Now().Before(start.Add(a.at)) {
				break
			}
		}
		if a.do != nil {
			a.do()
		}
	}
	if step < 1000 {
		t.Fatalf("only %d records generated", step)
	}
	return k, m
}

// TestGeneratedStream: a generated stream answers every read as a stored
// stream holding the records it put would: Records, retention and its
// hook, iterators of every type, GetRecords pages and MillisBehind, ending
// sequence numbers, KPL aggregates inside their shard's range, quiet
// shards and rate changes.
func TestGeneratedStream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checks := 0
	k, m := genWorld(t, 11, func(k *Kinesis, clock *ManualClock, m *genModel) {
		checks++
		infos, err := k.Shards("g")
		must(t, err)
		for _, info := range infos {
			want := m.puts[info.ID]
			all, err := k.Records("g", info.ID)
			must(t, err)
			if len(all) != len(want) || info.Records != len(want) {
				t.Fatalf("%s: Records has %d, Shards %d, %d were put", info.ID, len(all), info.Records, len(want))
			}
			horizon := clock.Now().Add(-10 * time.Minute)
			trimmed := 0
			for i, rec := range all {
				if rec.Sequence != want[i].Sequence || !rec.Arrival.Equal(want[i].Arrival) {
					t.Fatalf("%s record %d: %s at %v, put %s at %v", info.ID, i, rec.Sequence, rec.Arrival, want[i].Sequence, want[i].Arrival)
				}
				if i > 0 && engine.CompareSequences(all[i-1].Sequence, rec.Sequence) >= 0 {
					t.Fatalf("%s: %s after %s", info.ID, rec.Sequence, all[i-1].Sequence)
				}
				if rec.Arrival.Before(horizon) {
					trimmed = i + 1
				}
				if i >= m.checked[info.ID] {
					checkGenData(t, info, rec, want[i], m)
					m.checked[info.ID] = i + 1
				}
			}
			if info.Trimmed != trimmed || m.trimmed[info.ID] != trimmed {
				t.Fatalf("%s: %d trimmed, OnTrimRange %d, want %d", info.ID, info.Trimmed, m.trimmed[info.ID], trimmed)
			}
			if info.Closed() && len(all) > 0 && engine.CompareSequences(info.EndingSequence, all[len(all)-1].Sequence) <= 0 {
				t.Fatalf("%s ends at %s, below its last record %s", info.ID, info.EndingSequence, all[len(all)-1].Sequence)
			}
			if !info.Listed {
				continue
			}
			checkGenReads(t, k, clock, r, info, all[trimmed:])
		}
	})
	if checks < 40 {
		t.Fatalf("only %d checks", checks)
	}
	if len(m.stored) != 3 {
		t.Fatalf("%d explicit puts", len(m.stored))
	}
	for _, info := range mustShards(t, k) {
		for _, rec := range mustRetained(t, k, info.ID) {
			if next, ok, err := k.RecordAfter("g", info.ID, rec.Sequence); err != nil || ok && engine.CompareSequences(next.Sequence, rec.Sequence) <= 0 {
				t.Fatalf("RecordAfter %s: %s %v", rec.Sequence, next.Sequence, err)
			}
		}
	}
	agg := 0
	for _, p := range m.order {
		if p.Users > 0 {
			agg++
		}
	}
	if agg == 0 || agg > len(m.order)/2 {
		t.Fatalf("%d aggregates of %d records", agg, len(m.order))
	}
}

// checkGenData checks a record's content: an aggregate of p.Users user
// records inside the shard's range, or no data; an explicit one its own.
func checkGenData(t *testing.T, info ShardInfo, rec engine.Record, p GeneratedPut, m *genModel) {
	if data, ok := m.stored[rec.Sequence]; ok {
		if !bytes.Equal(rec.Data, data) || rec.PartitionKey != "explicit" {
			t.Fatalf("%s: an explicit put reads back as %q %q", rec.Sequence, rec.PartitionKey, rec.Data)
		}
		return
	}
	if p.Users == 0 {
		if rec.Data != nil || len(rec.PartitionKey) < 4 || rec.PartitionKey[:3] != "pk-" {
			t.Fatalf("%s: a plain record with partition key %q, data %q", rec.Sequence, rec.PartitionKey, rec.Data)
		}
		return
	}
	users, err := kpl.Decode(rec.Data)
	if err != nil || len(users) != p.Users || rec.PartitionKey != "a" {
		t.Fatalf("%s: aggregate of %d (pk %q) decodes to %d: %v", rec.Sequence, p.Users, rec.PartitionKey, len(users), err)
	}
	rg, err := kpl.ParseHashRange(info.StartingHashKey, info.EndingHashKey)
	must(t, err)
	for _, u := range users {
		h, err := u.HashKey()
		if err != nil || !rg.Contains(h) {
			t.Fatalf("%s: user record hash key %s outside %v: %v", rec.Sequence, u.ExplicitHashKey, rg, err)
		}
	}
}

// checkGenReads reads shard info (whose retained records are want) with
// every iterator type and compares with want.
func checkGenReads(t *testing.T, k *Kinesis, clock *ManualClock, r *rand.Rand, info ShardInfo, want []engine.Record) {
	t.Helper()
	read := func(pos engine.Position) []engine.Record {
		it, err := k.GetShardIterator(ctx, "g", info.ID, pos)
		must(t, err)
		var out []engine.Record
		for it != "" {
			page, err := k.GetRecords(ctx, it, 1+r.IntN(40))
			must(t, err)
			if len(page.Records) > 0 {
				last := page.Records[len(page.Records)-1]
				behind := max(clock.Now().Sub(last.Arrival).Milliseconds(), 0)
				if last.Sequence == want[len(want)-1].Sequence {
					behind = 0
				}
				if page.MillisBehind != behind {
					t.Fatalf("%s: MillisBehind %d, want %d", info.ID, page.MillisBehind, behind)
				}
			}
			out = append(out, page.Records...)
			if len(page.Records) == 0 {
				break
			}
			it = page.NextIterator
		}
		return out
	}
	same := func(what string, got, want []engine.Record) {
		t.Helper()
		if !slices.Equal(seqs(got), seqs(want)) {
			t.Fatalf("%s %s: %d records %v, want %d %v", info.ID, what, len(got), seqs(got), len(want), seqs(want))
		}
		for i := range got {
			if !got[i].Arrival.Equal(want[i].Arrival) || got[i].PartitionKey != want[i].PartitionKey || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("%s %s: record %d differs: %+v, want %+v", info.ID, what, i, got[i], want[i])
			}
		}
	}
	same("TRIM_HORIZON", read(engine.Position{Type: engine.IterTrimHorizon}), want)
	if got := read(engine.Position{Type: engine.IterLatest}); len(got) != 0 {
		t.Fatalf("%s LATEST read %d records", info.ID, len(got))
	}
	if len(want) == 0 {
		return
	}
	i := r.IntN(len(want))
	same("AT_SEQUENCE_NUMBER", read(engine.Position{Type: engine.IterAtSequenceNumber, Sequence: want[i].Sequence}), want[i:])
	same("AFTER_SEQUENCE_NUMBER", read(engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: want[i].Sequence}), want[i+1:])
	// a number between two records' (one above record i's) positions after it
	one := new(big.Int).Add(bigOf(t, want[i].Sequence), big.NewInt(1)).String()
	if i+1 < len(want) && engine.CompareSequences(one, want[i+1].Sequence) < 0 {
		same("AT_SEQUENCE_NUMBER between", read(engine.Position{Type: engine.IterAtSequenceNumber, Sequence: one}), want[i+1:])
	}
	for range 3 {
		at := want[0].Arrival.Add(time.Duration(r.Int64N(int64(clock.Now().Sub(want[0].Arrival)) + 1)))
		j, _ := slices.BinarySearchFunc(want, at, func(rec engine.Record, at time.Time) int { return rec.Arrival.Compare(at) })
		same("AT_TIMESTAMP "+at.String(), read(engine.Position{Type: engine.IterAtTimestamp, Timestamp: at}), want[j:])
	}
	same("AT_TIMESTAMP before the horizon", read(engine.Position{Type: engine.IterAtTimestamp, Timestamp: want[0].Arrival.Add(-time.Hour)}), want)
}

// TestGeneratedDeterministic: the same seed and calls put the same
// records whatever is read in between; another seed puts others; and a
// shard keeps no memory per record (its segments are the rate changes'
// and explicit puts', not the records').
func TestGeneratedDeterministic(t *testing.T) {
	k1, m1 := genWorld(t, 11, nil)
	r := rand.New(rand.NewPCG(9, 9))
	_, m2 := genWorld(t, 11, func(k *Kinesis, clock *ManualClock, m *genModel) {
		for _, info := range mustShards(t, k) {
			if info.Listed {
				checkGenReads(t, k, clock, r, info, mustRetained(t, k, info.ID))
			}
		}
	})
	if !slices.Equal(m1.order, m2.order) {
		t.Fatal("the same seed put other records when read in between")
	}
	_, m3 := genWorld(t, 12, nil)
	if slices.Equal(m1.order[:100], m3.order[:100]) {
		t.Fatal("another seed put the same records")
	}
	s := k1.streams["g"]
	for _, sh := range s.shards {
		if len(sh.gen.segs) > 4+len(sh.gen.stored) || sh.log.len() != 0 {
			t.Errorf("%s: %d segments, %d stored, %d logged for %d records", sh.info.ID, len(sh.gen.segs), len(sh.gen.stored), sh.log.len(), sh.gen.n)
		}
	}
}

func mustShards(t *testing.T, k *Kinesis) []ShardInfo {
	t.Helper()
	infos, err := k.Shards("g")
	must(t, err)
	return infos
}

func mustRetained(t *testing.T, k *Kinesis, shard string) []engine.Record {
	t.Helper()
	recs, err := k.Retained("g", shard)
	must(t, err)
	return recs
}

// TestGeneratedRateAndQuiet: the put rate is split by hash range width,
// follows SetPutRate, and quiet shards get nothing; wrong calls are
// refused with their reason.
func TestGeneratedRateAndQuiet(t *testing.T) {
	k, clock := newKinesis(t, KinesisOptions{Seed: 3})
	must(t, k.CreateGeneratedStream("g", 2, GeneratedRecords{Rate: 100}))
	_, err := k.SplitShardEvenly("g", shardID(0)) // shards 2 and 3 get a quarter each
	must(t, err)
	counts := func(d time.Duration) map[string]int {
		out := map[string]int{}
		end := clock.Now().Add(d)
		for {
			at, ok := k.NextArrival("g")
			if !ok || at.After(end) {
				clock.Set(end)
				return out
			}
			clock.Set(at)
			p, ok, err := k.PutGenerated("g")
			must(t, err)
			if !ok {
				t.Fatal("NextArrival's record was not put")
			}
			out[p.Shard]++
		}
	}
	c := counts(100 * time.Second)
	within(t, "records of a half-range shard in 100 s", float64(c[shardID(1)]), 5000, 0.05)
	within(t, "records of a quarter-range shard in 100 s", float64(c[shardID(2)]), 2500, 0.07)
	must(t, k.SetPutRate("g", 10))
	must(t, k.SetQuiet("g", []string{shardID(1)}))
	c = counts(100 * time.Second)
	within(t, "records at rate 10 in 100 s", float64(c[shardID(2)]+c[shardID(3)]), 500, 0.15)
	if c[shardID(1)] != 0 {
		t.Fatalf("a quiet shard got %d records", c[shardID(1)])
	}
	must(t, k.SetPutRate("g", 0))
	if _, ok := k.NextArrival("g"); ok {
		t.Fatal("a record arrives at rate 0")
	}
	must(t, k.CreateStream("stored", 1))
	for _, err := range []error{
		k.SetPutRate("stored", 1), k.SetPutRate("g", -1), k.SetQuiet("g", []string{shardID(0)}), k.SetQuiet("nope", nil),
		k.CreateGeneratedStream("bad", 1, GeneratedRecords{Rate: -1}), k.CreateGeneratedStream("bad", 1, GeneratedRecords{AggregateShare: 0.5, AggregateMax: 1}),
		k.CreateGeneratedStream("bad", 1, GeneratedRecords{PartitionKeys: []string{""}}),
	} {
		if err == nil {
			t.Error("a wrong call was accepted")
		} else {
			t.Log(err)
		}
	}
	if _, _, err := k.PutGenerated("stored"); err == nil {
		t.Error("PutGenerated on a stored stream")
	}
}

// TestEncodeAggregate: the generated aggregates' encoder writes what
// kpl.Encode writes for the same user records.
func TestEncodeAggregate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pkeys := []string{"pk-0", "a", "a-much-longer-partition-key-than-the-others", "pk-3", "x"}
	for range 2000 {
		n := 1 + r.IntN(20)
		users := make([]int, n)
		recs := make([]kpl.UserRecord, n)
		ehk := kpl.HashKey{Hi: r.Uint64() >> r.IntN(64), Lo: r.Uint64()}.String()
		for i := range users {
			users[i] = r.IntN(len(pkeys))
			recs[i] = kpl.UserRecord{PartitionKey: pkeys[users[i]], ExplicitHashKey: ehk}
		}
		want, err := kpl.Encode(recs)
		must(t, err)
		if got := encodeAggregate(pkeys, users, ehk); !bytes.Equal(got, want) {
			t.Fatalf("users %v ehk %s:\n got %x\nwant %x", users, ehk, got, want)
		}
	}
}
