package trace

import "math"

// Hash is an incremental 64-bit hash over a canonical encoding of records,
// taken a 64-bit word at a time: every field in a fixed order, small
// integers packed several to a word, the lengths of the strings packed
// four to a word, then each string's bytes in 8-byte little-endian words
// (the last one padded with zeros). Each word is mixed in with a multiply
// and a shift. The hash is a pure function of the records (it is the
// simulator's determinism check, not a cryptographic hash), and it
// allocates nothing. The zero value is not ready: use NewHash.
type Hash struct{ h uint64 }

const (
	hashSeed = 0x243f6a8885a308d3 // the digits of pi
	hashMul  = 0x9e3779b97f4a7c15 // 2^64 / golden ratio, odd
)

// NewHash returns an empty hash.
func NewHash() Hash { return Hash{h: hashSeed} }

// Sum returns the hash of everything added so far.
func (h *Hash) Sum() uint64 { return h.h }

// word mixes one word in.
func (h *Hash) word(v uint64) {
	x := (h.h ^ v) * hashMul
	h.h = x ^ (x >> 29)
}

// bytes mixes in the bytes of s, 8 at a time (not its length).
func (h *Hash) bytes(s string) {
	x := h.h
	i := 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		v := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		x = (x ^ v) * hashMul
		x ^= x >> 29
	}
	if i < len(s) {
		var v uint64
		for j := len(s) - 1; j >= i; j-- {
			v = v<<8 | uint64(s[j])
		}
		x = (x ^ v) * hashMul
		x ^= x >> 29
	}
	h.h = x
}

// nonEmpty mixes in the bytes of s if it has any: most of a record's
// strings are empty, and an empty string mixes nothing in, so skipping the
// call leaves the hash as it was.
func (h *Hash) nonEmpty(s string) {
	if len(s) > 0 {
		h.bytes(s)
	}
}

// lengths packs four string lengths (16 bits each) into one word.
func lengths(a, b, c, d string) uint64 {
	return uint64(uint16(len(a))) | uint64(uint16(len(b)))<<16 | uint64(uint16(len(c)))<<32 | uint64(uint16(len(d)))<<48
}

// Float adds a float64 (by its bits).
func (h *Hash) Float(f float64) { h.word(math.Float64bits(f)) }

// Uint adds an integer.
func (h *Hash) Uint(v uint64) { h.word(v) }

// String adds a string (its length, then its bytes).
func (h *Hash) String(s string) {
	h.word(uint64(len(s)))
	h.bytes(s)
}

// Add adds one record.
func (h *Hash) Add(r *Record) {
	h.word(r.Seq)
	h.word(uint64(r.T))
	var unconditional uint64
	if r.Unconditional {
		unconditional = 1
	}
	h.word(uint64(r.Kind) | uint64(r.Op)<<8 | unconditional<<16 | uint64(uint32(r.Worker))<<32)
	h.word(uint64(uint32(r.Proc)) | uint64(uint32(r.Count))<<32)
	h.word(uint64(r.Mono))
	h.word(uint64(r.Wall))
	h.word(uint64(r.Counter))
	h.word(uint64(r.Checkpoint.SubSequence))
	h.word(r.Call)
	h.word(uint64(r.Sent))
	h.word(uint64(r.Applied))
	h.word(uint64(r.ExpCounter))
	h.word(lengths(r.Owner, r.Key, r.Checkpoint.Sequence, r.First))
	h.word(lengths(r.Last, r.Reason, r.Previous, r.Outcome))
	h.word(lengths(r.Fault, r.ExpOwner, r.RowOwner, r.Parent))
	h.word(uint64(uint16(len(r.Parent2))))
	if r.FirstSub != 0 || r.LastSub != 0 {
		// only when set, so that histories without KPL aggregates hash as
		// they did before the fields existed
		h.word(uint64(uint32(r.FirstSub)) | uint64(uint32(r.LastSub))<<32)
	}
	h.nonEmpty(r.Owner)
	h.nonEmpty(r.Key)
	h.nonEmpty(r.Checkpoint.Sequence)
	h.nonEmpty(r.First)
	h.nonEmpty(r.Last)
	h.nonEmpty(r.Reason)
	h.nonEmpty(r.Previous)
	h.nonEmpty(r.Outcome)
	h.nonEmpty(r.Fault)
	h.nonEmpty(r.ExpOwner)
	h.nonEmpty(r.RowOwner)
	h.nonEmpty(r.Parent)
	h.nonEmpty(r.Parent2)
}

// HashRecords returns the hash of a whole history.
func HashRecords(recs []Record) uint64 {
	h := NewHash()
	for i := range recs {
		h.Add(&recs[i])
	}
	return h.Sum()
}
