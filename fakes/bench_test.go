package fakes

import (
	"strconv"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// BenchmarkPutGetRecords measures one PutRecord and one GetRecords that
// returns it, on a 16-shard stream read through one shard's iterator chain.
func BenchmarkPutGetRecords(b *testing.B) {
	k, clock := newKinesis(b, KinesisOptions{})
	must(b, k.CreateStream("s", 16))
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "pk-" + strconv.Itoa(i)
	}
	data := make([]byte, 100)
	var its [16]string
	for i := range its {
		it, err := k.GetShardIterator(ctx, "s", shardID(i), engine.Position{Type: engine.IterLatest})
		must(b, err)
		its[i] = it
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		clock.Advance(time.Millisecond)
		id, _, err := k.PutRecord("s", keys[i%len(keys)], data)
		if err != nil {
			b.Fatal(err)
		}
		n := int(id[len(id)-2]-'0')*10 + int(id[len(id)-1]-'0')
		page, err := k.GetRecords(ctx, its[n], 100)
		if err != nil || len(page.Records) != 1 {
			b.Fatalf("%v %v", page, err)
		}
		its[n] = page.NextIterator
	}
}

// BenchmarkUpdateLease measures a renewal: a conditional update of one of
// 1000 rows, without and with a stale-read history.
func BenchmarkUpdateLease(b *testing.B) {
	for _, lag := range []time.Duration{0, time.Second} {
		b.Run("lag="+lag.String(), func(b *testing.B) {
			tb, clock := newTable(b, lag, 1)
			rows := make([]engine.Lease, 1000)
			for i := range rows {
				rows[i] = lease("stream:shardId-"+strconv.Itoa(i), "w1", 1)
				must(b, tb.CreateLease(ctx, rows[i]))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				clock.Advance(time.Millisecond)
				l := &rows[i%len(rows)]
				next := *l
				next.Counter++
				if err := tb.UpdateLease(ctx, engine.ExpectOf(*l), next); err != nil {
					b.Fatal(err)
				}
				*l = next
			}
		})
	}
}

// BenchmarkGeneratedPutGetRecords measures one generated record put as it
// arrives (PutGenerated) and one GetRecords that returns it, on a 16-shard
// generated stream (a tenth of the records KPL aggregates of 2..8) read
// through each shard's iterator chain: BenchmarkPutGetRecords's loop on a
// stream that stores nothing.
func BenchmarkGeneratedPutGetRecords(b *testing.B) {
	k, clock := newKinesis(b, KinesisOptions{})
	must(b, k.CreateGeneratedStream("s", 16, GeneratedRecords{Rate: 1000, AggregateShare: 0.1, AggregateMax: 8}))
	its := map[string]string{}
	for i := 0; i < 16; i++ {
		it, err := k.GetShardIterator(ctx, "s", shardID(i), engine.Position{Type: engine.IterLatest})
		must(b, err)
		its[shardID(i)] = it
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		at, ok := k.NextArrival("s")
		if !ok {
			b.Fatal("no arrival")
		}
		clock.Set(at)
		p, ok, err := k.PutGenerated("s")
		if err != nil || !ok {
			b.Fatalf("%v %v", ok, err)
		}
		page, err := k.GetRecords(ctx, its[p.Shard], 100)
		if err != nil || len(page.Records) != 1 {
			b.Fatalf("%v %v", page, err)
		}
		its[p.Shard] = page.NextIterator
	}
}
