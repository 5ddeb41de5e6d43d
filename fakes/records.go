package fakes

import (
	"encoding/binary"
	"sort"
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
	chunks []recChunk
	n      int
	last   krec
}

type recChunk struct {
	first  krec
	deltas []byte
}

const chunkRecords = 64

func (l *recordLog) len() int { return l.n }

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
	c := cursor{l: l, chunk: i / chunkRecords, i: i / chunkRecords * chunkRecords}
	c.cur = l.chunks[c.chunk].first
	for c.i < i {
		c.next()
	}
	return c
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
// hold for every record after one that does), or l.len().
func (l *recordLog) search(ok func(*krec) bool) int {
	// the first chunk whose first record is ok; the answer is in the one
	// before it, or is its first record
	c := sort.Search(len(l.chunks), func(j int) bool { return ok(&l.chunks[j].first) })
	if c == 0 {
		return 0
	}
	cur := l.at((c - 1) * chunkRecords)
	end := min(c*chunkRecords, l.n)
	for cur.i < end && !ok(&cur.cur) {
		cur.next()
	}
	return cur.i
}
