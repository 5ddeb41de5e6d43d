package streamtest

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// MaxHashKey is the last 128-bit hash key.
const MaxHashKey = "340282366920938463463374607431768211455"

// callTimeout bounds every call the suite makes.
const callTimeout = 15 * time.Second

// maxPolls bounds the GetRecords calls the suite makes to drain a shard.
const maxPolls = 50

// Run runs the contract suite against h.
func Run(t *testing.T, h Harness) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(&suite{t: t, h: h, s: h.Stream()})
		})
	}
}

type suite struct {
	t *testing.T
	h Harness
	s engine.Stream
}

// put records one record written by the suite.
type put struct {
	shard, seq, key string
	data            []byte
}

func (x *suite) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

func (x *suite) listShards(stream string) ([]engine.Shard, error) {
	ctx, cancel := x.ctx()
	defer cancel()
	return x.s.ListShards(ctx, stream)
}

func (x *suite) mustListShards(stream string) []engine.Shard {
	x.t.Helper()
	shards, err := x.listShards(stream)
	if err != nil {
		x.t.Fatalf("ListShards(%q): %v", stream, err)
	}
	return shards
}

func (x *suite) iterator(stream, shard string, pos engine.Position) (string, error) {
	ctx, cancel := x.ctx()
	defer cancel()
	return x.s.GetShardIterator(ctx, stream, shard, pos)
}

func (x *suite) mustIterator(stream, shard string, pos engine.Position) string {
	x.t.Helper()
	it, err := x.iterator(stream, shard, pos)
	if err != nil {
		x.t.Fatalf("GetShardIterator(%s, %s, %+v): %v", stream, shard, pos, err)
	}
	if it == "" {
		x.t.Fatalf("GetShardIterator(%s, %s, %+v) returned an empty iterator", stream, shard, pos)
	}
	return it
}

func (x *suite) records(it string, limit int) (engine.RecordsPage, error) {
	ctx, cancel := x.ctx()
	defer cancel()
	return x.s.GetRecords(ctx, it, limit)
}

func (x *suite) mustRecords(it string, limit int) engine.RecordsPage {
	x.t.Helper()
	p, err := x.records(it, limit)
	if err != nil {
		x.t.Fatalf("GetRecords(limit %d): %v", limit, err)
	}
	if limit > 0 && len(p.Records) > limit {
		x.t.Fatalf("GetRecords(limit %d) returned %d records", limit, len(p.Records))
	}
	return p
}

// putOn writes n records on shard sh (by its starting hash key).
func (x *suite) putOn(stream string, sh engine.Shard, n int, tag string) []put {
	x.t.Helper()
	var out []put
	for i := 0; i < n; i++ {
		p := put{data: []byte(fmt.Sprintf("%s record %d", tag, i))}
		w := x.h.Put(x.t, stream, sh.StartingHashKey, p.data)
		p.key, p.shard, p.seq = w.PartitionKey, w.Shard, w.Sequence
		if p.shard != sh.ID {
			x.t.Fatalf("record with hash key %s went to shard %s, want %s", sh.StartingHashKey, p.shard, sh.ID)
		}
		if err := engine.ValidateSequence(p.seq); err != nil {
			x.t.Fatalf("Put returned sequence number %q: %v", p.seq, err)
		}
		out = append(out, p)
	}
	return out
}

// readN reads from it until n records have come, returning them and the
// iterator after them.
func (x *suite) readN(it string, n, limit int) ([]engine.Record, string) {
	x.t.Helper()
	var got []engine.Record
	for i := 0; len(got) < n; i++ {
		if i == maxPolls || it == "" {
			x.t.Fatalf("read %d of %d records in %d GetRecords calls (next iterator %q)", len(got), n, i, it)
		}
		p := x.mustRecords(it, limit)
		got = append(got, p.Records...)
		it = p.NextIterator
	}
	if len(got) > n {
		x.t.Fatalf("read %d records, want %d", len(got), n)
	}
	return got, it
}

// drain reads a closed shard from it to its end and returns the records
// and the last page (whose NextIterator is "").
func (x *suite) drain(it string, limit int) ([]engine.Record, engine.RecordsPage) {
	x.t.Helper()
	var got []engine.Record
	for i := 0; i < maxPolls; i++ {
		p := x.mustRecords(it, limit)
		got = append(got, p.Records...)
		if p.NextIterator == "" {
			return got, p
		}
		it = p.NextIterator
	}
	x.t.Fatalf("closed shard not ended after %d GetRecords calls (%d records read)", maxPolls, len(got))
	return nil, engine.RecordsPage{}
}

// wantRecords asserts that got are the records of want, in order.
func (x *suite) wantRecords(got []engine.Record, want []put) {
	x.t.Helper()
	if len(got) != len(want) {
		x.t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Sequence != w.seq || g.PartitionKey != w.key || string(g.Data) != string(w.data) {
			x.t.Fatalf("record %d = {seq %s key %s data %q}, want {seq %s key %s data %q}",
				i, g.Sequence, g.PartitionKey, g.Data, w.seq, w.key, w.data)
		}
		if i > 0 && engine.CompareSequences(got[i-1].Sequence, g.Sequence) >= 0 {
			x.t.Fatalf("sequence numbers out of order: %s then %s", got[i-1].Sequence, g.Sequence)
		}
	}
}

// shardByID finds a shard in a listing.
func (x *suite) shardByID(shards []engine.Shard, id string) engine.Shard {
	x.t.Helper()
	for _, s := range shards {
		if s.ID == id {
			return s
		}
	}
	x.t.Fatalf("shard %s not listed (listing: %+v)", id, shards)
	return engine.Shard{}
}

// childrenOf returns the listed shards that name parent as a parent.
func childrenOf(shards []engine.Shard, parent string) []engine.Shard {
	var out []engine.Shard
	for _, s := range shards {
		if slices.Contains(s.ParentIDs(), parent) {
			out = append(out, s)
		}
	}
	return out
}

func hashInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil
	}
	return n
}

// midHash returns the key that splits [start, end] in halves.
func midHash(start, end string) string {
	a, b := hashInt(start), hashInt(end)
	m := new(big.Int).Add(a, b)
	m.Add(m, big.NewInt(1))
	return m.Rsh(m, 1).String()
}

// minusOne returns s-1 as a decimal string.
func minusOne(s string) string {
	return new(big.Int).Sub(hashInt(s), big.NewInt(1)).String()
}

func wantErrIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s = %v, want an error wrapping %v", what, err, target)
	}
}
