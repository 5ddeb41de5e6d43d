package fakes

import (
	"encoding/binary"
	"sort"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// krec is one stored record: its sequence number's counter, its arrival
// (nanoseconds from the fake's origin), its partition key and data
// (indexes into the stream's).
type krec struct {
	n       uint64
	arrival int64
	pkey    uint32
	data    uint32
}

// recordLog is a shard's records in arrival order, stored compactly so
// that a stream holding a day of records costs a few bytes per record:
// chunks of up to chunkRecords records, each holding its first record in
// full and every later one as varints of its differences from the one
// before (counters and arrivals only grow within a shard). Reading record
// i decodes its chunk from the start.
type recordLog struct {
	// chunks[j] holds the records from (base+j)·chunkRecords on: the base
	// chunks before them were freed (see freeBefore)
	chunks []recChunk
	base   int
	n      int
	last   krec
	// hint is a cursor where a read last stopped: a consumer reads on
	// from there, so the next read need not decode its chunk again
	hint cursor
}

type recChunk struct {
	first  krec
	deltas []byte
}

const chunkRecords = 64

func (l *recordLog) len() int { return l.n }

// held returns the index of the oldest record still held (not freed).
func (l *recordLog) held() int { return min(l.base*chunkRecords, l.n) }

// freeBefore frees the chunks all of whose records are below index i.
// Nothing reads a freed record again; search answers held() for a record
// among them (see search).
func (l *recordLog) freeBefore(i int) {
	k := i/chunkRecords - l.base // the chunks wholly below i (all full)
	if k <= 0 {
		return
	}
	clear(l.chunks[:k])
	l.chunks = l.chunks[k:] // the next append that grows it lets go of the rest
	l.base += k
	l.hint = cursor{}
}

// append adds r, whose counter and arrival are at least the last record's.
func (l *recordLog) append(r krec) {
	if l.n%chunkRecords == 0 {
		l.chunks = append(l.chunks, recChunk{first: r, deltas: make([]byte, 0, 8*(chunkRecords-1))})
	} else {
		c := &l.chunks[len(l.chunks)-1]
		c.deltas = binary.AppendUvarint(c.deltas, r.n-l.last.n)
		c.deltas = binary.AppendUvarint(c.deltas, uint64(r.arrival-l.last.arrival))
		k := uint64(r.pkey) << 1
		if r.data != 0 {
			k |= 1
		}
		c.deltas = binary.AppendUvarint(c.deltas, k)
		if r.data != 0 {
			c.deltas = binary.AppendUvarint(c.deltas, uint64(r.data))
		}
	}
	l.last = r
	l.n++
}

// cursor reads a log record by record from any index.
type cursor struct {
	l     *recordLog
	i     int // index of cur
	chunk int
	off   int
	cur   krec
}

// at returns a cursor on record i (< l.len()).
func (l *recordLog) at(i int) cursor {
	var c cursor
	if h := l.hint; h.l == l && h.chunk == i/chunkRecords-l.base && h.i <= i {
		c = h // on from the last read
	} else {
		c = cursor{l: l, chunk: i/chunkRecords - l.base, i: i / chunkRecords * chunkRecords}
		c.cur = l.chunks[c.chunk].first
	}
	for c.i < i {
		c.next()
	}
	return c
}

// remember keeps c (on a record, or at the end) as the next read's hint.
func (l *recordLog) remember(c cursor) {
	if c.i < l.n {
		l.hint = c
	}
}

// next moves the cursor to the following record (if any).
func (c *cursor) next() {
	c.i++
	if c.i >= c.l.n {
		return
	}
	if c.i%chunkRecords == 0 {
		c.chunk++
		c.off = 0
		c.cur = c.l.chunks[c.chunk].first
		return
	}
	b := c.l.chunks[c.chunk].deltas[c.off:]
	dn, m := binary.Uvarint(b)
	da, m2 := binary.Uvarint(b[m:])
	k, m3 := binary.Uvarint(b[m+m2:])
	c.off += m + m2 + m3
	c.cur.n += dn
	c.cur.arrival += int64(da)
	c.cur.pkey, c.cur.data = uint32(k>>1), 0
	if k&1 != 0 {
		d, m4 := binary.Uvarint(c.l.chunks[c.chunk].deltas[c.off:])
		c.off += m4
		c.cur.data = uint32(d)
	}
}

// get returns record i.
func (l *recordLog) get(i int) krec {
	c := l.at(i)
	return c.cur
}

// search returns the smallest index whose record satisfies ok (which must
// hold for every record after one that does), or l.len(). An answer among
// freed records is not known: search then returns held(), which its
// callers treat alike, as both are trimmed.
func (l *recordLog) search(ok func(*krec) bool) int {
	// the first chunk whose first record is ok; the answer is in the one
	// before it, or is its first record
	c := sort.Search(len(l.chunks), func(j int) bool { return ok(&l.chunks[j].first) })
	if c == 0 {
		return l.held()
	}
	cur := l.at((l.base + c - 1) * chunkRecords)
	end := min((l.base+c)*chunkRecords, l.n)
	for cur.i < end && !ok(&cur.cur) {
		cur.next()
	}
	return cur.i
}

// record returns the engine.Record of r (its Data is shared).
func (k *Kinesis) record(s *kstream, sh *kshard, r *krec) engine.Record {
	return engine.Record{Sequence: sh.seq.format(r.n), PartitionKey: s.pkeys[r.pkey], Data: s.data[r.data], Arrival: k.origin.Add(time.Duration(r.arrival))}
}

// records returns the engine.Records from..to-1 of sh.
func (k *Kinesis) records(s *kstream, sh *kshard, from, to int) []engine.Record {
	if to <= from {
		return nil
	}
	if sh.gen != nil {
		return k.genRecords(sh, from, to)
	}
	out := make([]engine.Record, to-from)
	c := sh.log.at(from)
	for i := range out {
		if i > 0 {
			c.next()
		}
		out[i] = k.record(s, sh, &c.cur)
	}
	// the hint stays on the last record read (a cursor past the end
	// cannot be kept): the next read, from the record after it, decodes
	// one record, not its chunk from the start
	sh.log.remember(c)
	return out
}

// RecordAfter returns the first record of the shard (trimmed or not) whose
// sequence number is above seq, and false if there is none.
func (k *Kinesis) RecordAfter(stream, shard, seq string) (engine.Record, bool, error) {
	s, sh, err := k.lookup(0, stream, shard)
	if err != nil {
		return engine.Record{}, false, err
	}
	i := s.search(sh, seq, true)
	if i == sh.count() {
		return engine.Record{}, false, nil
	}
	if sh.gen != nil {
		return k.genRecords(sh, i, i+1)[0], true, nil
	}
	r := sh.log.get(i)
	return k.record(s, sh, &r), true, nil
}

// search returns the index of the first record of sh with a sequence
// number at or above seq (above, with after).
func (s *kstream) search(sh *kshard, seq string, after bool) int {
	if sh.gen != nil {
		return sh.gen.genSearch(sh, seq, after)
	}
	var buf [maxSeqDigits + 20]byte
	return sh.log.search(func(r *krec) bool {
		c := compareDecimal(sh.seq.appendFormat(buf[:0], r.n), seq)
		return c > 0 || c == 0 && !after
	})
}

// count returns how many records were ever put to sh.
func (sh *kshard) count() int {
	if sh.gen != nil {
		return sh.gen.n
	}
	return sh.log.len()
}

// held returns the index of the oldest record sh can still return: every
// one of a generated shard.
func (sh *kshard) held() int {
	if sh.gen != nil {
		return 0
	}
	return sh.log.held()
}

// counter returns the sequence counter of record j of sh, a generated
// shard: its own counter runs from its starting number's.
func (sh *kshard) counter(j int) uint64 { return sh.seq.n0 + 1 + uint64(j) }

// sequenceAt returns the sequence number of record i of sh (held).
func (sh *kshard) sequenceAt(i int) string {
	if sh.gen != nil {
		return sh.seq.format(sh.counter(i))
	}
	return sh.seq.format(sh.log.get(i).n)
}

// lastNumber returns the counter of the latest sequence number sh has
// issued or covers: a stored stream numbers its shards' records from one
// counter, so its latest number; a generated shard its last record's (or
// its starting number's).
func (sh *kshard) lastNumber() uint64 {
	if sh.gen != nil {
		return sh.counter(sh.gen.n - 1)
	}
	return sh.stream.seq.last()
}

// compareDecimal compares the decimal numbers a and b (valid, leading
// zeros ignored) numerically.
func compareDecimal(a []byte, b string) int {
	for len(a) > 1 && a[0] == '0' {
		a = a[1:]
	}
	for len(b) > 1 && b[0] == '0' {
		b = b[1:]
	}
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
