package fakes

import (
	"crypto/md5"
	"slices"

	"github.com/shardlease/shardlease/engine/kpl"
	"google.golang.org/protobuf/encoding/protowire"
)

// The content of a generated stream's records (see GeneratedRecords).

// content returns the counter-based stream of record j's content.
func (g *genShard) content(j int) counterRNG {
	return newCounterRNG(mix64(mix64(g.key^0x636f6e74656e74) + uint64(j)*golden))
}

// stored returns the stored record that is record j, or nil.
func (g *genShard) storedAt(j int) *storedRecord {
	sg := &g.segs[g.segOf(j)]
	if sg.stored >= 0 && sg.i0 == j {
		return &g.stored[sg.stored]
	}
	return nil
}

// users returns how many user records record j holds if it is a KPL
// aggregate, else 0.
func (g *genShard) users(sh *kshard, j int) int {
	if g.storedAt(j) != nil {
		return 0
	}
	o := &sh.stream.gen.opts
	if o.AggregateShare == 0 {
		return 0
	}
	r := g.content(j)
	r.next() // the partition key
	if r.float() >= o.AggregateShare {
		return 0
	}
	return 2 + int(r.next()%uint64(o.AggregateMax-1))
}

// genRecord returns record j's partition key and data.
func (g *genShard) genRecord(sh *kshard, j int) (string, []byte) {
	if st := g.storedAt(j); st != nil {
		return st.pkey, st.data
	}
	o := &sh.stream.gen.opts
	r := g.content(j)
	pk := o.PartitionKeys[r.next()%uint64(len(o.PartitionKeys))]
	if o.AggregateShare == 0 || r.float() >= o.AggregateShare {
		return pk, nil
	}
	n := 2 + int(r.next()%uint64(o.AggregateMax-1))
	h := sh.start.add(sh.end.sub(sh.start).scale(r.next()))
	var keys [maxAggregateKeys]int
	users := keys[:0]
	if n > len(keys) {
		users = make([]int, 0, n)
	}
	for range n {
		users = append(users, int(r.next()%uint64(len(o.PartitionKeys))))
	}
	return aggregatePartitionKey, encodeAggregate(o.PartitionKeys, users, kpl.HashKey{Hi: h.hi, Lo: h.lo}.String())
}

// aggregatePartitionKey is the partition key the KPL puts an aggregate
// with (kpl.Route).
const aggregatePartitionKey = "a"

const maxAggregateKeys = 16

// encodeAggregate returns what kpl.Encode returns for user records with
// partition keys pkeys[users[i]], explicit hash key ehk and no data,
// without its checks (the keys were checked at CreateGeneratedStream) and
// its maps: a generated aggregate is encoded whenever it is read.
func encodeAggregate(pkeys []string, users []int, ehk string) []byte {
	var first [maxAggregateKeys]int // the table: key indexes in the order of first use
	table := first[:0]
	if len(users) > len(first) {
		table = make([]int, 0, len(users))
	}
	size := len(kpl.Magic) + 2 + len(ehk) + md5.Size
	for _, u := range users {
		if !slices.Contains(table, u) {
			table = append(table, u)
			size += 3 + len(pkeys[u])
		}
		size += 8
	}
	b := append(make([]byte, 0, size), kpl.Magic[:]...)
	for _, u := range table {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, pkeys[u])
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, ehk)
	for _, u := range users {
		var rec [16]byte
		r := protowire.AppendTag(rec[:0], 1, protowire.VarintType)
		r = protowire.AppendVarint(r, uint64(slices.Index(table, u)))
		r = protowire.AppendTag(r, 2, protowire.VarintType)
		r = protowire.AppendVarint(r, 0)
		r = protowire.AppendTag(r, 3, protowire.BytesType)
		r = protowire.AppendBytes(r, nil)
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, r)
	}
	sum := md5.Sum(b[len(kpl.Magic):])
	return append(b, sum[:]...)
}
