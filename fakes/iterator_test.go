package fakes

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

const shard0 = "shardId-000000000000"

// oneShard returns a one-shard stream "s" holding n records, put one
// second apart starting one second after the clock's start.
func oneShard(t testing.TB, opts KinesisOptions, n int) (*Kinesis, *ManualClock, []engine.Record) {
	t.Helper()
	k, clock := newKinesis(t, opts)
	must(t, k.CreateStream("s", 1))
	for i := range n {
		clock.Advance(time.Second)
		_, _, err := k.PutRecord("s", "pk", []byte{byte(i)})
		must(t, err)
	}
	recs, err := k.Records("s", shard0)
	must(t, err)
	return k, clock, recs
}

// readAll follows iterator to the end of what the shard holds now and
// returns the records and the last page.
func readAll(t testing.TB, k *Kinesis, it string, limit int) ([]engine.Record, engine.RecordsPage) {
	t.Helper()
	var out []engine.Record
	for {
		page, err := k.GetRecords(ctx, it, limit)
		must(t, err)
		out = append(out, page.Records...)
		if page.NextIterator == "" || len(page.Records) == 0 {
			return out, page
		}
		it = page.NextIterator
	}
}

func seqs(recs []engine.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Sequence
	}
	return out
}

func TestIteratorTypes(t *testing.T) {
	k, clock, recs := oneShard(t, KinesisOptions{}, 10)
	shardInfo := shardByID(t, listShards(t, k, "s"), shard0)
	tests := []struct {
		name string
		pos  engine.Position
		from int // index of the first record read
	}{
		{"trim horizon", engine.Position{Type: engine.IterTrimHorizon}, 0},
		{"latest", engine.Position{Type: engine.IterLatest}, 10},
		{"at timestamp exact", engine.Position{Type: engine.IterAtTimestamp, Timestamp: recs[3].Arrival}, 3},
		{"at timestamp between", engine.Position{Type: engine.IterAtTimestamp, Timestamp: recs[3].Arrival.Add(time.Millisecond)}, 4},
		{"at timestamp before all", engine.Position{Type: engine.IterAtTimestamp, Timestamp: defaultStart.Add(-time.Hour)}, 0},
		{"at timestamp after all", engine.Position{Type: engine.IterAtTimestamp, Timestamp: clock.Now().Add(time.Hour)}, 10},
		{"at sequence", engine.Position{Type: engine.IterAtSequenceNumber, Sequence: recs[5].Sequence}, 5},
		{"after sequence", engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: recs[5].Sequence}, 6},
		{"after last sequence", engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: recs[9].Sequence}, 10},
		{"at starting sequence", engine.Position{Type: engine.IterAtSequenceNumber, Sequence: shardInfo.StartingSequence}, 0},
		{"at sequence with leading zeros", engine.Position{Type: engine.IterAtSequenceNumber, Sequence: "000" + recs[2].Sequence}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, err := k.GetShardIterator(ctx, "s", shard0, tc.pos)
			must(t, err)
			// Records put after the iterator was made are read too.
			got, _ := readAll(t, k, it, 3)
			if want := seqs(recs[tc.from:]); !slices.Equal(seqs(got), want) {
				t.Fatalf("read %d records %v, want %d %v", len(got), got, len(want), want)
			}
		})
	}
	// LATEST is after the last record present at creation: a record put
	// later is read.
	it, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterLatest})
	must(t, err)
	_, seq, err := k.PutRecord("s", "later", nil)
	must(t, err)
	got, _ := readAll(t, k, it, 100)
	if len(got) != 1 || got[0].Sequence != seq {
		t.Fatalf("LATEST then put: read %v", got)
	}
}

func TestIteratorErrors(t *testing.T) {
	k, _, _ := oneShard(t, KinesisOptions{}, 3)
	must(t, k.CreateStream("other", 1))
	_, otherSeq, err := k.PutRecord("other", "pk", nil)
	must(t, err)
	tests := []struct {
		name          string
		stream, shard string
		pos           engine.Position
		want          error
	}{
		{"missing stream", "nope", shard0, engine.Position{Type: engine.IterTrimHorizon}, engine.ErrNotFound},
		{"missing shard", "s", "shardId-000000000001", engine.Position{Type: engine.IterTrimHorizon}, engine.ErrNotFound},
		{"unknown type", "s", shard0, engine.Position{Type: "SOMEWHERE"}, ErrInvalidArgument},
		{"timestamp missing", "s", shard0, engine.Position{Type: engine.IterAtTimestamp}, ErrInvalidArgument},
		{"sequence missing", "s", shard0, engine.Position{Type: engine.IterAtSequenceNumber}, ErrInvalidArgument},
		{"sequence not decimal", "s", shard0, engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: "TRIM_HORIZON"}, ErrInvalidArgument},
		{"sequence below shard", "s", shard0, engine.Position{Type: engine.IterAtSequenceNumber, Sequence: "1"}, ErrInvalidArgument},
		{"sequence of another stream", "s", shard0, engine.Position{Type: engine.IterAtSequenceNumber, Sequence: otherSeq}, ErrInvalidArgument},
	}
	for _, tc := range tests {
		if _, err := k.GetShardIterator(ctx, tc.stream, tc.shard, tc.pos); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	it, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	for _, bad := range []string{"", "garbage", it + "0", it[:len(it)-1] + "z"} {
		if _, err := k.GetRecords(ctx, bad, 10); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("GetRecords(%q): %v", bad, err)
		}
	}
	for _, limit := range []int{0, -1, 10001} {
		if _, err := k.GetRecords(ctx, it, limit); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	// An iterator of another fake is not accepted.
	k2, _, _ := oneShard(t, KinesisOptions{Seed: 99}, 3)
	if _, err := k2.GetRecords(ctx, it, 10); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("foreign iterator: %v", err)
	}
}

func TestGetRecordsPagingAndMillisBehind(t *testing.T) {
	k, clock, recs := oneShard(t, KinesisOptions{}, 10)
	clock.Advance(time.Minute)
	it, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	page, err := k.GetRecords(ctx, it, 4)
	must(t, err)
	if !slices.Equal(seqs(page.Records), seqs(recs[:4])) || page.NextIterator == "" {
		t.Fatalf("page 1: %+v", page)
	}
	if want := clock.Now().Sub(recs[3].Arrival).Milliseconds(); page.MillisBehind != want {
		t.Fatalf("MillisBehind %d, want %d", page.MillisBehind, want)
	}
	page, err = k.GetRecords(ctx, page.NextIterator, 100)
	must(t, err)
	if !slices.Equal(seqs(page.Records), seqs(recs[4:])) || page.MillisBehind != 0 || page.NextIterator == "" || page.ChildShards != nil {
		t.Fatalf("page 2 (caught up on an open shard): %+v", page)
	}
	page, err = k.GetRecords(ctx, page.NextIterator, 100)
	must(t, err)
	if len(page.Records) != 0 || page.NextIterator == "" || page.MillisBehind != 0 {
		t.Fatalf("page 3 (empty, open shard): %+v", page)
	}
	// Reading the same iterator twice returns the same page.
	a, err := k.GetRecords(ctx, it, 2)
	must(t, err)
	b, err := k.GetRecords(ctx, it, 2)
	must(t, err)
	if !slices.Equal(seqs(a.Records), seqs(b.Records)) {
		t.Fatal("re-reading an iterator gave other records")
	}
}

func TestShardEnd(t *testing.T) {
	tests := []struct {
		name       string
		opts       KinesisOptions
		pages      int  // pages (limit 4) to read the 10 records and reach the end
		wantChilds bool // ChildShards on the last page
	}{
		{"children with the last records", KinesisOptions{}, 3, true},
		{"kinesalite: no children", KinesisOptions{OmitChildShards: true}, 3, false},
		{"end on a separate page", KinesisOptions{SeparateEndPage: true}, 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, _, recs := oneShard(t, tc.opts, 10)
			it, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon})
			must(t, err)
			children, err := k.SplitShardEvenly("s", shard0)
			must(t, err)
			var got []engine.Record
			var page engine.RecordsPage
			for n := 1; ; n++ {
				page, err = k.GetRecords(ctx, it, 4)
				must(t, err)
				got = append(got, page.Records...)
				if page.NextIterator == "" {
					if n != tc.pages {
						t.Fatalf("end after %d pages, want %d", n, tc.pages)
					}
					break
				}
				if page.ChildShards != nil {
					t.Fatalf("ChildShards before the end: %+v", page)
				}
				it = page.NextIterator
			}
			if !slices.Equal(seqs(got), seqs(recs)) {
				t.Fatalf("read %v, want %v", seqs(got), seqs(recs))
			}
			var ids []string
			for _, c := range page.ChildShards {
				ids = append(ids, c.ID)
				if c.Parent != shard0 {
					t.Fatalf("child %+v", c)
				}
			}
			if tc.wantChilds != slices.Equal(ids, children) || !tc.wantChilds && ids != nil {
				t.Fatalf("ChildShards %v, children %v", ids, children)
			}
		})
	}
	// An iterator made at the end of a closed shard ends at once.
	k, _, _ := oneShard(t, KinesisOptions{}, 2)
	_, err := k.SplitShardEvenly("s", shard0)
	must(t, err)
	it, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterLatest})
	must(t, err)
	page, err := k.GetRecords(ctx, it, 10)
	must(t, err)
	if len(page.Records) != 0 || page.NextIterator != "" || len(page.ChildShards) != 2 {
		t.Fatalf("LATEST on a closed shard: %+v", page)
	}
}

func TestIteratorExpiry(t *testing.T) {
	k, clock, _ := oneShard(t, KinesisOptions{}, 3)
	it, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	clock.Advance(DefaultIteratorTTL)
	page, err := k.GetRecords(ctx, it, 1)
	must(t, err) // exactly at the TTL: still valid
	clock.Advance(time.Millisecond)
	if _, err := k.GetRecords(ctx, it, 1); !errors.Is(err, engine.ErrExpiredIterator) {
		t.Fatalf("past the TTL: %v", err)
	}
	// The next iterator was issued later and is still valid.
	page, err = k.GetRecords(ctx, page.NextIterator, 1)
	must(t, err)

	k.ExpireIterators()
	if _, err := k.GetRecords(ctx, page.NextIterator, 1); !errors.Is(err, engine.ErrExpiredIterator) {
		t.Fatalf("after ExpireIterators: %v", err)
	}
	fresh, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	k.FailNext(engine.OpGetRecords, engine.ErrExpiredIterator)
	if _, err := k.GetRecords(ctx, fresh, 1); !errors.Is(err, engine.ErrExpiredIterator) {
		t.Fatalf("FailNext: %v", err)
	}
	if _, err := k.GetRecords(ctx, fresh, 1); err != nil {
		t.Fatalf("a fresh iterator after ExpireIterators: %v", err)
	}
	if s := k.Stats().Of(engine.OpGetRecords); s.Failed != 2 || s.Injected != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Short TTL option.
	k2, clock2, _ := oneShard(t, KinesisOptions{IteratorTTL: time.Second}, 1)
	it2, err := k2.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterLatest})
	must(t, err)
	clock2.Advance(2 * time.Second)
	if _, err := k2.GetRecords(ctx, it2, 1); !errors.Is(err, engine.ErrExpiredIterator) {
		t.Fatalf("short TTL: %v", err)
	}
}

func TestRetention(t *testing.T) {
	const retention = time.Hour
	k, clock := newKinesis(t, KinesisOptions{Retention: retention, IteratorTTL: 2 * time.Hour})
	must(t, k.CreateStream("s", 1))
	put := func(n int) {
		for range n {
			clock.Advance(time.Minute)
			_, _, err := k.PutRecord("s", "pk", nil)
			must(t, err)
		}
	}
	put(30) // t = 1..30 min
	old, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	put(60) // t = 31..90 min; at 90 min records before 30 min are trimmed
	recs, _ := k.Records("s", shard0)
	if len(recs) != 90 {
		t.Fatalf("%d records kept", len(recs))
	}
	trimmed, err := k.Trimmed("s", shard0)
	must(t, err)
	if trimmed != 29 { // arrivals 1..29 min are before now-1h = 30 min
		t.Fatalf("trimmed %d", trimmed)
	}
	for _, tc := range []struct {
		name string
		pos  engine.Position
	}{
		{"trim horizon", engine.Position{Type: engine.IterTrimHorizon}},
		{"at a trimmed sequence", engine.Position{Type: engine.IterAtSequenceNumber, Sequence: recs[3].Sequence}},
		{"at a trimmed timestamp", engine.Position{Type: engine.IterAtTimestamp, Timestamp: recs[3].Arrival}},
	} {
		it, err := k.GetShardIterator(ctx, "s", shard0, tc.pos)
		must(t, err)
		got, _ := readAll(t, k, it, 1000)
		if !slices.Equal(seqs(got), seqs(recs[29:])) {
			t.Errorf("%s: read from %s, want the oldest retained %s", tc.name, got[0].Sequence, recs[29].Sequence)
		}
	}
	// An iterator made before the trim reads from the trim horizon.
	got, _ := readAll(t, k, old, 1000)
	if got[0].Sequence != recs[29].Sequence {
		t.Errorf("old iterator read from %s", got[0].Sequence)
	}

	// Closed shards disappear from ListShards once closed for longer than
	// the retention period.
	children, err := k.SplitShardEvenly("s", shard0)
	must(t, err)
	clock.Advance(retention)
	if got := len(listShards(t, k, "s")); got != 3 {
		t.Fatalf("at the retention limit %d shards listed", got)
	}
	it, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	page, err := k.GetRecords(ctx, it, 1000)
	must(t, err)
	// The last record arrived when the shard closed: it is retained
	// exactly as long as the shard is listed.
	if len(page.Records) != 1 || page.Records[0].Sequence != recs[89].Sequence || page.NextIterator != "" || len(page.ChildShards) != 2 {
		t.Fatalf("closed shard at the retention limit: %+v", page)
	}
	clock.Advance(time.Millisecond)
	page, err = k.GetRecords(ctx, it, 1000)
	must(t, err)
	if len(page.Records) != 0 || page.NextIterator != "" || len(page.ChildShards) != 2 {
		t.Fatalf("fully trimmed closed shard: %+v", page)
	}
	shards := listShards(t, k, "s")
	if ids := []string{shards[0].ID, shards[1].ID}; len(shards) != 2 || !slices.Equal(ids, children) {
		t.Fatalf("after retention: %v", shards)
	}
	if _, err := k.GetShardIterator(ctx, "s", shard0, engine.Position{Type: engine.IterTrimHorizon}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("iterator on an expired shard: %v", err)
	}
	infos, err := k.Shards("s")
	must(t, err)
	if len(infos) != 3 || infos[0].Listed || infos[0].Records != 90 || infos[0].Trimmed != 90 || !infos[1].Listed {
		t.Fatalf("graph after retention: %+v", infos)
	}
	if n, _ := k.Trimmed("s", shard0); n != 90 {
		t.Fatalf("trimmed %d", n)
	}
}

// TestFreeTrimmed reads a stream whose trimmed records were freed from
// every kind of position and gets what a stream that keeps them returns.
func TestFreeTrimmed(t *testing.T) {
	const retention = 5 * time.Minute
	keep, kc := newKinesis(t, KinesisOptions{Seed: 3, Retention: retention, IteratorTTL: 2 * time.Hour})
	free, fc := newKinesis(t, KinesisOptions{Seed: 3, Retention: retention, IteratorTTL: 2 * time.Hour, FreeTrimmed: true})
	for _, k := range []*Kinesis{keep, free} {
		must(t, k.CreateStream("s", 1))
	}
	for i := range 1000 {
		for j, k := range []*Kinesis{keep, free} {
			[]*ManualClock{kc, fc}[j].Advance(time.Second + time.Duration(i%7)*time.Millisecond)
			_, _, err := k.PutRecord("s", "pk", nil)
			must(t, err)
		}
	}
	all, _ := keep.Records("s", shard0)
	trimmed, _ := free.Trimmed("s", shard0)
	held, _ := free.Records("s", shard0)
	_, sh, err := free.lookup(0, "s", shard0)
	must(t, err)
	if len(all) != 1000 || trimmed < 600 || sh.log.base != trimmed/chunkRecords || len(held) != 1000-sh.log.base*chunkRecords || len(sh.log.chunks) != (len(held)+chunkRecords-1)/chunkRecords {
		t.Fatalf("%d records, %d trimmed, %d chunks freed, %d held, %d chunks left", len(all), trimmed, sh.log.base, len(held), len(sh.log.chunks))
	}
	if ret, _ := free.Retained("s", shard0); !slices.Equal(seqs(ret), seqs(all[trimmed:])) {
		t.Fatalf("Retained: %d records, want %d", len(ret), 1000-trimmed)
	}
	positions := []engine.Position{{Type: engine.IterTrimHorizon}, {Type: engine.IterLatest}}
	for i := 0; i < len(all); i += 13 {
		positions = append(positions,
			engine.Position{Type: engine.IterAtSequenceNumber, Sequence: all[i].Sequence},
			engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: all[i].Sequence},
			engine.Position{Type: engine.IterAtTimestamp, Timestamp: all[i].Arrival})
	}
	// RecordAfter answers alike for retained records
	for i := trimmed; i < len(all); i += 5 {
		a, okA, _ := keep.RecordAfter("s", shard0, all[i].Sequence)
		b, okB, _ := free.RecordAfter("s", shard0, all[i].Sequence)
		if okA != okB || a.Sequence != b.Sequence {
			t.Fatalf("RecordAfter(%s): %s %v, freeing %s %v", all[i].Sequence, a.Sequence, okA, b.Sequence, okB)
		}
	}
	// at every trim horizon (some on a chunk boundary), positions about it
	// read alike
	same := func(pos engine.Position) {
		t.Helper()
		var got [2][]string
		for j, k := range []*Kinesis{keep, free} {
			it, err := k.GetShardIterator(ctx, "s", shard0, pos)
			must(t, err)
			recs, _ := readAll(t, k, it, 1000)
			got[j] = seqs(recs)
		}
		if !slices.Equal(got[0], got[1]) {
			t.Fatalf("%+v: read %d records from a freeing stream, %d from a keeping one", pos, len(got[1]), len(got[0]))
		}
	}
	for _, pos := range positions {
		same(pos)
	}
	for step := 0; step < 400; step++ {
		kc.Advance(time.Second)
		fc.Advance(time.Second)
		n, _ := free.Trimmed("s", shard0)
		for i := max(n-3, 0); i < min(n+3, len(all)); i++ {
			same(engine.Position{Type: engine.IterAtSequenceNumber, Sequence: all[i].Sequence})
			same(engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: all[i].Sequence})
			same(engine.Position{Type: engine.IterAtTimestamp, Timestamp: all[i].Arrival})
		}
	}
}
