package fakes

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

func newKinesis(t testing.TB, opts KinesisOptions) (*Kinesis, *ManualClock) {
	t.Helper()
	c := NewManualClock(defaultStart)
	opts.Clock = c
	return NewKinesis(opts), c
}

// md5Hash computes a partition key's hash independently of hashOf.
func md5Hash(pk string) *big.Int {
	sum := md5.Sum([]byte(pk))
	return new(big.Int).SetBytes(sum[:])
}

func bigOf(t testing.TB, s string) *big.Int {
	t.Helper()
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("not a decimal: %q", s)
	}
	return b
}

// inRange reports whether the shard's hash range contains h.
func inRange(t testing.TB, sh engine.Shard, h *big.Int) bool {
	return bigOf(t, sh.StartingHashKey).Cmp(h) <= 0 && h.Cmp(bigOf(t, sh.EndingHashKey)) <= 0
}

func listShards(t testing.TB, k *Kinesis, stream string) []engine.Shard {
	t.Helper()
	shards, err := k.ListShards(ctx, stream)
	must(t, err)
	return shards
}

func shardByID(t testing.TB, shards []engine.Shard, id string) engine.Shard {
	t.Helper()
	for _, s := range shards {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no shard %s in %v", id, shards)
	return engine.Shard{}
}

func TestCreateStreamRanges(t *testing.T) {
	const max128 = "340282366920938463463374607431768211455"
	tests := []struct {
		shards int
		want   [][2]string
	}{
		{1, [][2]string{{"0", max128}}},
		// The ranges real Kinesis gives a two-shard stream.
		{2, [][2]string{
			{"0", "170141183460469231731687303715884105727"},
			{"170141183460469231731687303715884105728", max128},
		}},
		{3, [][2]string{
			{"0", "113427455640312821154458202477256070484"},
			{"113427455640312821154458202477256070485", "226854911280625642308916404954512140969"},
			{"226854911280625642308916404954512140970", max128},
		}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.shards), func(t *testing.T) {
			k, _ := newKinesis(t, KinesisOptions{})
			must(t, k.CreateStream("s", tc.shards))
			shards := listShards(t, k, "s")
			if len(shards) != tc.shards {
				t.Fatalf("%d shards", len(shards))
			}
			for i, sh := range shards {
				if want := fmt.Sprintf("shardId-%012d", i); sh.ID != want {
					t.Errorf("shard %d id %s, want %s", i, sh.ID, want)
				}
				if got := [2]string{sh.StartingHashKey, sh.EndingHashKey}; got != tc.want[i] {
					t.Errorf("shard %d range %v, want %v", i, got, tc.want[i])
				}
				if sh.Closed() || sh.Parent != "" || engine.ValidateSequence(sh.StartingSequence) != nil {
					t.Errorf("shard %d: %+v", i, sh)
				}
			}
		})
	}
	// Larger counts: contiguous, covering the space.
	k, _ := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("big", 1000))
	shards := listShards(t, k, "big")
	next := big.NewInt(0)
	for _, sh := range shards {
		if bigOf(t, sh.StartingHashKey).Cmp(next) != 0 {
			t.Fatalf("gap before %s", sh.ID)
		}
		next = bigOf(t, sh.EndingHashKey)
		next.Add(next, big.NewInt(1))
	}
	if next.Cmp(new(big.Int).Lsh(big.NewInt(1), 128)) != 0 {
		t.Fatalf("ranges end at %v", next)
	}
}

func TestCreateStreamErrors(t *testing.T) {
	k, _ := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 1))
	for _, tc := range []struct {
		name   string
		shards int
	}{{"s", 1}, {"", 1}, {"bad name", 1}, {"t", 0}, {strings.Repeat("x", 129), 1}} {
		if err := k.CreateStream(tc.name, tc.shards); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("CreateStream(%q, %d) = %v", tc.name, tc.shards, err)
		}
	}
	if _, err := k.ListShards(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("ListShards of a missing stream: %v", err)
	}
	if _, _, err := k.PutRecord("nope", "pk", nil); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("PutRecord to a missing stream: %v", err)
	}
	if _, _, err := k.PutRecord("s", "", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("PutRecord with an empty key: %v", err)
	}
}

// TestPutRecordRoutingAndSequences puts records with many partition keys
// and checks that each lands in the shard whose range holds its MD5, with
// valid sequence numbers increasing within the shard.
func TestPutRecordRoutingAndSequences(t *testing.T) {
	k, clock := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 7))
	shards := listShards(t, k, "s")
	last := map[string]string{}
	for i := range 2000 {
		clock.Advance(time.Millisecond)
		pk := fmt.Sprintf("pk-%d", i)
		data := []byte{byte(i)}
		id, seq, err := k.PutRecord("s", pk, data)
		must(t, err)
		data[0]++ // the fake must have copied it
		if !inRange(t, shardByID(t, shards, id), md5Hash(pk)) {
			t.Fatalf("%s routed to %s", pk, id)
		}
		if engine.ValidateSequence(seq) != nil || seq[0] == '0' {
			t.Fatalf("sequence %q", seq)
		}
		if p, ok := last[id]; ok && engine.CompareSequences(p, seq) >= 0 {
			t.Fatalf("sequence %s after %s in %s", seq, p, id)
		}
		last[id] = seq
	}
	if len(last) != 7 {
		t.Fatalf("only %d shards got records", len(last))
	}
	recs, err := k.Records("s", "shardId-000000000000")
	must(t, err)
	for _, r := range recs {
		var i int
		if _, err := fmt.Sscanf(r.PartitionKey, "pk-%d", &i); err != nil || r.Arrival.IsZero() {
			t.Fatalf("record %+v", r)
		}
		if r.Data[0] != byte(i) {
			t.Fatalf("record data %v changed with the caller's buffer", r.Data)
		}
	}
}

// TestArrivalNeverDecreases: a clock set back does not reorder arrivals.
func TestArrivalNeverDecreases(t *testing.T) {
	k, clock := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 1))
	_, _, err := k.PutRecord("s", "a", nil)
	must(t, err)
	clock.Advance(-time.Second)
	_, _, err = k.PutRecord("s", "b", nil)
	must(t, err)
	recs, _ := k.Records("s", "shardId-000000000000")
	if recs[1].Arrival.Before(recs[0].Arrival) {
		t.Fatalf("arrivals %v then %v", recs[0].Arrival, recs[1].Arrival)
	}
}

func TestKinesisThrottleAndHook(t *testing.T) {
	k, clock := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 1))
	it, err := k.GetShardIterator(ctx, "s", "shardId-000000000000", engine.Position{Type: engine.IterTrimHorizon})
	must(t, err)
	calls := []struct {
		op engine.Op
		do func() error
	}{
		{engine.OpListShards, func() error { _, err := k.ListShards(ctx, "s"); return err }},
		{engine.OpGetIterator, func() error {
			_, err := k.GetShardIterator(ctx, "s", "shardId-000000000000", engine.Position{Type: engine.IterLatest})
			return err
		}},
		{engine.OpGetRecords, func() error { _, err := k.GetRecords(ctx, it, 10); return err }},
	}
	for _, c := range calls {
		k.Throttle(clock.Now().Add(time.Second), c.op)
		for _, d := range calls {
			err := d.do()
			if throttled := errors.Is(err, engine.ErrThrottled); throttled != (c.op == d.op) || !throttled && err != nil {
				t.Errorf("throttling %v: %v returned %v", c.op, d.op, err)
			}
		}
		k.Throttle(time.Time{})
	}
	if s := k.Stats().Of(engine.OpGetRecords); s.Calls != 3 || s.Injected != 1 {
		t.Errorf("GetRecords stats %+v", s)
	}

	var keys []string
	k.SetHook(func(op engine.Op, key string) error {
		keys = append(keys, op.String()+" "+key)
		if op == engine.OpGetRecords {
			return engine.ErrThrottled
		}
		return nil
	})
	for _, c := range calls {
		err := c.do()
		if (c.op == engine.OpGetRecords) != errors.Is(err, engine.ErrThrottled) {
			t.Errorf("hook: %v returned %v", c.op, err)
		}
	}
	want := []string{"ListShards s", "GetShardIterator s/shardId-000000000000", "GetRecords s/shardId-000000000000"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("hook keys %q, want %q", keys, want)
	}
	k.ClearFaults()
	if _, err := k.GetRecords(ctx, it, 10); err != nil {
		t.Errorf("after ClearFaults: %v", err)
	}
}

// TestKinesisDeterminism runs the same workload twice with one seed and
// compares everything observable.
func TestKinesisDeterminism(t *testing.T) {
	run := func(seed uint64) string {
		k, clock := newKinesis(t, KinesisOptions{Seed: seed, Retention: time.Hour})
		must(t, k.CreateStream("a", 3))
		must(t, k.CreateStream("b", 2))
		var out strings.Builder
		for i := range 500 {
			clock.Advance(7 * time.Second)
			stream := []string{"a", "b"}[i%2]
			id, seq, err := k.PutRecord(stream, fmt.Sprint("key", i%37), []byte{byte(i)})
			must(t, err)
			fmt.Fprintln(&out, id, seq)
			switch i {
			case 100:
				_, err = k.SplitShardEvenly("a", "shardId-000000000001")
			case 200:
				_, err = k.MergeShards("b", "shardId-000000000000", "shardId-000000000001")
			case 300:
				_, err = k.MergeShards("a", "shardId-000000000003", "shardId-000000000004")
			}
			must(t, err)
		}
		for _, stream := range []string{"a", "b"} {
			infos, err := k.Shards(stream)
			must(t, err)
			fmt.Fprintf(&out, "%+v\n", infos)
			for _, sh := range listShards(t, k, stream) {
				it, err := k.GetShardIterator(ctx, stream, sh.ID, engine.Position{Type: engine.IterTrimHorizon})
				must(t, err)
				page, err := k.GetRecords(ctx, it, 10000)
				must(t, err)
				fmt.Fprintln(&out, it, len(page.Records), page.NextIterator, page.MillisBehind, page.ChildShards)
			}
		}
		return out.String()
	}
	a, b := run(3), run(3)
	if a != b {
		t.Fatal("same seed, different results")
	}
	if a == run(4) {
		t.Error("different seeds, identical sequence numbers")
	}
}

func TestKinesisFailNextAppliedAndContext(t *testing.T) {
	k, _ := newKinesis(t, KinesisOptions{})
	must(t, k.CreateStream("s", 1))
	errLost := errors.New("reply lost")
	k.FailNextApplied(engine.OpGetIterator, errLost)
	if _, err := k.GetShardIterator(ctx, "s", "shardId-000000000000", engine.Position{Type: engine.IterLatest}); !errors.Is(err, errLost) {
		t.Fatalf("FailNextApplied: %v", err)
	}
	if _, err := k.GetShardIterator(ctx, "s", "shardId-000000000000", engine.Position{Type: engine.IterLatest}); err != nil {
		t.Fatalf("next call: %v", err)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := k.ListShards(c, "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ListShards: %v", err)
	}
	if s := k.Stats().Total(); s.Calls != 3 || s.Injected != 1 || s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
}
