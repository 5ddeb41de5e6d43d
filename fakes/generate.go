package fakes

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// GeneratedRecords describes the records of a generated stream
// (CreateGeneratedStream): records that the fake derives, whenever they
// are read, from the stream's seed, the shard and the record's position,
// and does not store. A day of them costs no memory per record.
//
// Each open shard receives a Poisson process of records (see
// arrivals.go): Rate times the share of the hash key space its range
// covers, per second, or none while it is quiet (SetQuiet). A rate that
// changes (SetPutRate, SetQuiet, a shard put to explicitly) starts a new
// segment of the shard's process where it changes; a shard keeps only its
// segments (a start time, a first index and a rate each), its count of
// records, and the records put explicitly. A record is present once put:
// the producer (PutGenerated) puts the records as they arrive, in arrival
// order across the stream's shards.
//
// Record j of a shard (counting from 0, in sequence order) is derived from
// a counter-based stream keyed by the shard and j: its partition key (one
// of PartitionKeys), whether it is a KPL aggregate (AggregateShare of the
// records are) and, if so, its user records: 2 to AggregateMax of them,
// each with a partition key of PartitionKeys and the aggregate's explicit
// hash key, drawn uniformly in the shard's range. Other records have no
// data. Its sequence number is the shard's j+1-th: the shard's counter
// counts its own records only (an explicitly stored stream's counts the
// whole stream's).
type GeneratedRecords struct {
	// Rate is how many records per second the whole hash key space gets.
	Rate float64
	// PartitionKeys are the records' partition keys; default pk-0 to
	// pk-63.
	PartitionKeys []string
	// AggregateShare is the share of the records that are KPL aggregates
	// (0 to 1); AggregateMax the most user records one holds (at least 2).
	AggregateShare float64
	AggregateMax   int
}

// genStream is the generated part of a stream.
type genStream struct {
	opts GeneratedRecords
	key  uint64
	rate float64   // records per ns over the whole hash key space
	heap []*kshard // open shards by the arrival of their next record
}

// genShard is how a shard of a generated stream holds its records.
type genShard struct {
	key   uint64
	share float64 // of the hash key space
	quiet bool
	n     int // records put
	segs  []segment
	// records put explicitly (PutRecord): what cannot be derived
	stored []storedRecord
	// next is when record n arrives (math.MaxInt64: never, at the
	// current rate); heapAt is the shard's place in the stream's heap
	next   int64
	heapAt int
	// cursors: on the next record, on the trim horizon, on reads
	tip, trim, read segCursor
}

// segment is a stretch of a shard's records that arrive at one rate: from
// t0 on (nanoseconds from the fake's origin), records i0 on. If stored >=
// 0 its first record is stored[stored], put explicitly at t0, and the
// process's points are its records after that one.
type segment struct {
	t0     int64
	i0     int
	rate   float64 // records per ns
	stored int
}

type storedRecord struct {
	pkey string
	data []byte
}

// segCursor is an arrCursor on one segment's process.
type segCursor struct {
	seg int
	ok  bool
	arr arrCursor
}

// CreateGeneratedStream creates stream name with shardCount open shards,
// as CreateStream does, whose records the fake generates (see
// GeneratedRecords) rather than stores. PutRecord still puts records to
// it explicitly (they are stored); the generated ones are put by
// PutGenerated.
func (k *Kinesis) CreateGeneratedStream(name string, shardCount int, g GeneratedRecords) error {
	switch {
	case !(g.Rate >= 0) || math.IsInf(g.Rate, 0):
		return &callError{msg: "CreateGeneratedStream " + name + ": rate " + strconv.FormatFloat(g.Rate, 'g', -1, 64) + " is not a finite number >= 0", err: ErrInvalidArgument}
	case !(g.AggregateShare >= 0 && g.AggregateShare <= 1):
		return &callError{msg: "CreateGeneratedStream " + name + ": aggregate share out of [0, 1]", err: ErrInvalidArgument}
	case g.AggregateShare > 0 && g.AggregateMax < 2:
		return &callError{msg: "CreateGeneratedStream " + name + ": an aggregate holds at least 2 user records (AggregateMax)", err: ErrInvalidArgument}
	}
	for _, pk := range g.PartitionKeys {
		if pk == "" || len(pk) > 256 {
			return &callError{msg: "CreateGeneratedStream " + name + ": partition key " + strconv.Quote(pk) + " must have 1 to 256 characters", err: ErrInvalidArgument}
		}
	}
	if len(g.PartitionKeys) == 0 {
		for i := 0; i < 64; i++ {
			g.PartitionKeys = append(g.PartitionKeys, "pk-"+strconv.Itoa(i))
		}
	}
	g.PartitionKeys = append([]string(nil), g.PartitionKeys...)
	gs := &genStream{opts: g, key: mix64(k.opts.Seed ^ 0x67656e7374726d ^ uint64(len(k.byIndex))*golden), rate: g.Rate / 1e9}
	return k.createStream(name, shardCount, gs)
}

// generated returns stream's generated part, or an error if it has none.
func (k *Kinesis) generated(call, stream string) (*kstream, error) {
	s := k.streams[stream]
	if s == nil {
		return nil, &callError{msg: call + " " + stream + ": no such stream", err: engine.ErrNotFound}
	}
	if s.gen == nil {
		return nil, &callError{msg: call + " " + stream + ": the stream's records are not generated (CreateGeneratedStream)", err: ErrInvalidArgument}
	}
	return s, nil
}

// SetPutRate sets the rate of stream's generated records (records per
// second over the whole hash key space; see GeneratedRecords) from the
// clock's reading on.
func (k *Kinesis) SetPutRate(stream string, perSecond float64) error {
	s, err := k.generated("SetPutRate", stream)
	if err != nil {
		return err
	}
	if !(perSecond >= 0) || math.IsInf(perSecond, 0) {
		return &callError{msg: "SetPutRate " + stream + ": rate " + strconv.FormatFloat(perSecond, 'g', -1, 64) + " is not a finite number >= 0", err: ErrInvalidArgument}
	}
	s.gen.rate = perSecond / 1e9
	k.rerate(s)
	return nil
}

// SetQuiet makes exactly the listed open shards of stream quiet from the
// clock's reading on: they receive no generated records (the shards made
// from them by splits inherit it, and a merge of two quiet shards), the
// others do. A shard that is not open is an invalid argument.
func (k *Kinesis) SetQuiet(stream string, shards []string) error {
	s, err := k.generated("SetQuiet", stream)
	if err != nil {
		return err
	}
	quiet := map[*kshard]bool{}
	for _, id := range shards {
		sh := s.byID[id]
		if sh == nil {
			return &callError{msg: "SetQuiet " + stream + "/" + id + ": no such shard", err: engine.ErrNotFound}
		}
		if !sh.closed.IsZero() {
			return &callError{msg: "SetQuiet " + stream + "/" + id + ": shard is closed", err: ErrInvalidArgument}
		}
		quiet[sh] = true
	}
	for _, sh := range s.open {
		sh.gen.quiet = quiet[sh]
	}
	k.rerate(s)
	return nil
}

// GeneratedPut is a generated record put by PutGenerated.
type GeneratedPut struct {
	Shard, Sequence string
	// Users is how many user records the record holds if it is a KPL
	// aggregate, 0 if it is not one.
	Users   int
	Arrival time.Time
}

// NextArrival returns when the next generated record of stream arrives
// (the earliest over its open shards), and false if none will at the
// current rates (or the stream is not generated).
func (k *Kinesis) NextArrival(stream string) (time.Time, bool) {
	s := k.streams[stream]
	if s == nil || s.gen == nil || len(s.gen.heap) == 0 || s.gen.heap[0].gen.next == math.MaxInt64 {
		return time.Time{}, false
	}
	return k.origin.Add(time.Duration(s.gen.heap[0].gen.next)), true
}

// PutGenerated puts the next generated record of stream if it has arrived
// by the clock's reading (the one NextArrival names; ties go to the shard
// created first), and reports false if none has. Like PutRecord, it is the
// workload, not an engine call: it is never faulted nor counted.
func (k *Kinesis) PutGenerated(stream string) (GeneratedPut, bool, error) {
	s, err := k.generated("PutGenerated", stream)
	if err != nil {
		return GeneratedPut{}, false, err
	}
	now := int64(k.clock.Now().Sub(k.origin))
	if len(s.gen.heap) == 0 || s.gen.heap[0].gen.next > now {
		return GeneratedPut{}, false, nil
	}
	sh := s.gen.heap[0]
	g := sh.gen
	at := g.next
	j := g.n
	k.appended(sh, at)
	g.next = g.arrivalOf(sh, g.n, &g.tip)
	s.gen.down(0)
	return GeneratedPut{Shard: sh.info.ID, Sequence: sh.seq.format(sh.counter(j)), Users: g.users(sh, j), Arrival: k.origin.Add(time.Duration(at))}, true, nil
}

// appended counts one more record of sh, arrived at at.
func (k *Kinesis) appended(sh *kshard, at int64) {
	g := sh.gen
	g.n++
	sh.lastArrival = at
	if sh.trimmed == g.n-1 {
		sh.trimmedBefore = at // the oldest retained record
	}
}

// putStored puts a record with explicit content to a shard of a generated
// stream: it opens a segment of its own, arriving now.
func (k *Kinesis) putStored(s *kstream, sh *kshard, partitionKey string, data []byte) (shardID, sequence string) {
	g := sh.gen
	now := max(int64(k.clock.Now().Sub(k.origin)), sh.lastArrival)
	g.stored = append(g.stored, storedRecord{pkey: partitionKey, data: bytes.Clone(data)})
	g.startSegment(now, s.gen.rateOf(sh), len(g.stored)-1)
	j := g.n
	k.appended(sh, now)
	k.retip(s, sh)
	return sh.info.ID, sh.seq.format(sh.counter(j))
}

// rerate gives every open shard of s the rate it has now, and rebuilds
// the heap.
func (k *Kinesis) rerate(s *kstream) {
	now := int64(k.clock.Now().Sub(k.origin))
	for _, sh := range s.open {
		g := sh.gen
		if r := s.gen.rateOf(sh); r != g.segs[len(g.segs)-1].rate {
			g.startSegment(max(now, sh.lastArrival), r, -1)
			g.next = g.arrivalOf(sh, g.n, &g.tip)
		}
	}
	s.gen.rebuild(s.open)
}

// retip recomputes when sh's next record arrives and its place in the heap.
func (k *Kinesis) retip(s *kstream, sh *kshard) {
	g := sh.gen
	g.next = g.arrivalOf(sh, g.n, &g.tip)
	s.gen.fix(g.heapAt)
}

// startGen starts the generated records of sh, a new open shard of s
// created now.
func (k *Kinesis) startGen(s *kstream, sh *kshard, quiet bool, now time.Time) {
	d := sh.end.sub(sh.start) // the range's width less one
	share := float64(d.hi)*0x1p-64 + (float64(d.lo)+1)*0x1p-128
	sh.gen = &genShard{key: mix64(s.gen.key + uint64(sh.index+1)*golden), share: share, quiet: quiet, heapAt: -1}
	sh.gen.startSegment(int64(now.Sub(k.origin)), s.gen.rateOf(sh), -1)
	sh.gen.next = sh.gen.arrivalOf(sh, 0, &sh.gen.tip)
}

// rateOf returns the rate of sh's records now (per ns).
func (gs *genStream) rateOf(sh *kshard) float64 {
	if sh.gen.quiet || !sh.closed.IsZero() {
		return 0
	}
	return gs.rate * sh.gen.share
}

// startSegment starts a segment at t0 (not before the last record's
// arrival) with rate r. A last segment that holds no record yet is
// replaced: it changes nothing any record's arrival depends on.
func (g *genShard) startSegment(t0 int64, r float64, stored int) {
	sg := segment{t0: t0, i0: g.n, rate: r, stored: stored}
	if n := len(g.segs); n > 0 && g.segs[n-1].i0 == g.n {
		g.segs[n-1] = sg
		g.tip.ok, g.trim.ok, g.read.ok = false, false, false
		return
	}
	g.segs = append(g.segs, sg)
}

// proc returns segment k's process.
func (g *genShard) proc(k int) process {
	return process{key: mix64(g.key ^ uint64(k+1)*0xa0761d6478bd642f), rate: g.segs[k].rate}
}

// on returns c on segment k.
func (g *genShard) on(c *segCursor, k int) *arrCursor {
	if !c.ok || c.seg != k {
		c.seg, c.ok = k, true
		c.arr.reset(g.proc(k))
	}
	return &c.arr
}

// segOf returns the segment of record j.
func (g *genShard) segOf(j int) int {
	if n := len(g.segs); g.segs[n-1].i0 <= j {
		return n - 1
	}
	return sort.Search(len(g.segs), func(k int) bool { return g.segs[k].i0 > j }) - 1
}

// arrivalOf returns when record j of sh arrives (nanoseconds from the
// origin), using cursor c: for j = g.n, the next record, math.MaxInt64 if
// none will (a closed shard, or no rate).
func (g *genShard) arrivalOf(sh *kshard, j int, c *segCursor) int64 {
	if j >= g.n && !sh.closed.IsZero() {
		return math.MaxInt64
	}
	k := g.segOf(j)
	sg := &g.segs[k]
	p := j - sg.i0
	if sg.stored >= 0 {
		if p == 0 {
			return sg.t0
		}
		p--
	}
	if g.proc(k).none() {
		return math.MaxInt64 // only for j >= g.n: a record put lies in its segment
	}
	return sg.t0 + g.on(c, k).point(p)
}

// firstFrom returns the index of the first record with an arrival at or
// after t (nanoseconds from the origin), or g.n, using cursor c.
func (g *genShard) firstFrom(t int64, c *segCursor) int {
	k := sort.Search(len(g.segs), func(k int) bool { return g.segs[k].t0 >= t }) - 1
	if k < 0 {
		return 0
	}
	sg := &g.segs[k]
	end := g.n
	if k+1 < len(g.segs) {
		end = g.segs[k+1].i0
	}
	j := sg.i0
	if sg.stored >= 0 {
		j++ // it arrived at t0, before t
	}
	if j < end && !g.proc(k).none() {
		j += min(g.on(c, k).countBefore(t-sg.t0), end-j)
	}
	return min(j, end)
}

// genRecords returns the engine.Records from..to-1 of sh, a generated
// shard.
func (k *Kinesis) genRecords(sh *kshard, from, to int) []engine.Record {
	g := sh.gen
	out := make([]engine.Record, to-from)
	for i := range out {
		j := from + i
		pk, data := g.genRecord(sh, j)
		out[i] = engine.Record{Sequence: sh.seq.format(sh.counter(j)), PartitionKey: pk, Data: data,
			Arrival: k.origin.Add(time.Duration(g.arrivalOf(sh, j, &g.read)))}
	}
	return out
}

// genTrim advances the trim horizon of sh, a generated shard, to horizon.
func (g *genShard) genTrim(sh *kshard, horizon int64) {
	sh.trimmed = max(sh.trimmed, g.firstFrom(horizon, &g.trim))
	sh.trimmedBefore = math.MaxInt64
	if sh.trimmed < g.n {
		sh.trimmedBefore = g.arrivalOf(sh, sh.trimmed, &g.trim)
	}
}

// genSearch returns the index of the first record of sh, a generated
// shard, with a sequence number at or above seq (above, with after).
func (g *genShard) genSearch(sh *kshard, seq string, after bool) int {
	var buf [maxSeqDigits + 20]byte
	return sort.Search(g.n, func(j int) bool {
		c := compareDecimal(sh.seq.appendFormat(buf[:0], sh.counter(j)), seq)
		return c > 0 || c == 0 && !after
	})
}

// The heap of a generated stream's open shards, by (next arrival, index).

func (gs *genStream) less(i, j int) bool {
	a, b := gs.heap[i], gs.heap[j]
	if a.gen.next != b.gen.next {
		return a.gen.next < b.gen.next
	}
	return a.index < b.index
}

func (gs *genStream) swap(i, j int) {
	h := gs.heap
	h[i], h[j] = h[j], h[i]
	h[i].gen.heapAt, h[j].gen.heapAt = i, j
}

func (gs *genStream) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !gs.less(i, p) {
			return
		}
		gs.swap(i, p)
		i = p
	}
}

func (gs *genStream) down(i int) {
	n := len(gs.heap)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && gs.less(c+1, c) {
			c++
		}
		if !gs.less(c, i) {
			return
		}
		gs.swap(i, c)
		i = c
	}
}

func (gs *genStream) fix(i int) {
	if i < 0 {
		return
	}
	gs.up(i)
	gs.down(i)
}

// rebuild makes the heap of the open shards.
func (gs *genStream) rebuild(open []*kshard) {
	for _, sh := range gs.heap {
		sh.gen.heapAt = -1
	}
	gs.heap = append(gs.heap[:0], open...)
	for i, sh := range gs.heap {
		sh.gen.heapAt = i
	}
	for i := len(gs.heap)/2 - 1; i >= 0; i-- {
		gs.down(i)
	}
}
