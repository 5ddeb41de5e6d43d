package check

import (
	"cmp"
	"math"
	"strconv"
	"strings"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// Seq is a record's position in its shard as the checkers compare it: a
// Kinesis sequence number parsed once from its decimal string, and a
// sub-sequence number (0 for records that are not parts of an aggregated
// record). The checkers do not use the engine's comparison: they order
// what the engine does with their own.
//
// Sequence numbers are decimal integers of any length. Parsing drops
// leading zeros, so a canonical string orders numerically by its length
// first, then byte by byte. The zero Seq (from "") orders before every
// number. A string that is not decimal is kept as it is and ordered the
// same way (the engine never records one).
type Seq struct {
	digits string
	sub    int64
}

// ParseSeq parses a sequence number ("" gives the zero Seq).
func ParseSeq(s string) Seq { return Seq{digits: canonical(s)} }

// ParseSubSeq parses a sequence number with its sub-sequence number.
func ParseSubSeq(s string, sub int64) Seq { return Seq{digits: canonical(s), sub: sub} }

// canonical drops the leading zeros of a decimal string ("000" is "0").
func canonical(s string) string {
	i := 0
	for i < len(s)-1 && s[i] == '0' {
		i++
	}
	if i > 0 {
		for j := i; j < len(s); j++ {
			if s[j] < '0' || s[j] > '9' {
				return s // not decimal: as it is
			}
		}
	}
	return s[i:]
}

// FirstOf returns the position of r's First (with FirstSub) and LastOf
// that of its Last (with LastSub): the first and last user records of a
// batch.
func FirstOf(r *trace.Record) Seq { return ParseSubSeq(r.First, int64(r.FirstSub)) }

// LastOf: see FirstOf.
func LastOf(r *trace.Record) Seq { return ParseSubSeq(r.Last, int64(r.LastSub)) }

// wholeRecord returns the position after every user record of the Kinesis
// record s: retention trims whole Kinesis records, aggregates included.
func wholeRecord(s string) Seq { return ParseSubSeq(s, math.MaxInt64) }

// seqName names the user record raw (a sequence number) with sub-sequence
// number sub as a message shows it: "raw", or "raw/sub" past the first.
func seqName(raw string, sub int64) string {
	if sub == 0 {
		return raw
	}
	return raw + "/" + strconv.FormatInt(sub, 10)
}

// IsZero reports whether q is the zero Seq (no sequence number).
func (q Seq) IsZero() bool { return q.digits == "" && q.sub == 0 }

// Compare returns -1, 0 or +1 as q is before, equal to or after r.
func (q Seq) Compare(r Seq) int {
	if len(q.digits) != len(r.digits) {
		if len(q.digits) < len(r.digits) {
			return -1
		}
		return 1
	}
	if c := strings.Compare(q.digits, r.digits); c != 0 {
		return c // one pass over the digits (!= then < made two)
	}
	return cmp.Compare(q.sub, r.sub)
}

// Pos is a checkpoint as the checkers order it: the start sentinels
// (TRIM_HORIZON, LATEST, AT_TIMESTAMP, or none) before every sequence
// number, SHARD_END after every one, sequence numbers by Seq.
type Pos struct {
	rank uint8 // 0 start, 1 sequence number, 2 SHARD_END
	seq  Seq
}

// PosOf parses a checkpoint.
func PosOf(c engine.Checkpoint) Pos {
	switch c.Sequence {
	case "", engine.TrimHorizon, engine.Latest, engine.AtTimestamp:
		return Pos{}
	case engine.ShardEnd:
		return Pos{rank: 2}
	}
	return Pos{rank: 1, seq: ParseSubSeq(c.Sequence, c.SubSequence)}
}

// IsStart reports whether p is a start sentinel (nothing checkpointed).
func (p Pos) IsStart() bool { return p.rank == 0 }

// IsEnd reports whether p is SHARD_END.
func (p Pos) IsEnd() bool { return p.rank == 2 }

// Compare returns -1, 0 or +1 as p is before, equal to or after q. The
// start sentinels compare equal to each other.
func (p Pos) Compare(q Pos) int {
	if p.rank != q.rank {
		if p.rank < q.rank {
			return -1
		}
		return 1
	}
	if p.rank != 1 {
		return 0
	}
	return p.seq.Compare(q.seq)
}

// Covers reports whether a checkpoint at p covers the record at q: p is
// SHARD_END, or a sequence number at or after q.
func (p Pos) Covers(q Seq) bool {
	return p.rank == 2 || (p.rank == 1 && p.seq.Compare(q) >= 0)
}
