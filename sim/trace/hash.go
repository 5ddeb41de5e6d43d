package trace

import "math"

// Hash is an incremental FNV-1a (64-bit) hash over a canonical binary
// encoding of records: every field in a fixed order, integers as 8
// little-endian bytes, strings length-prefixed. It allocates nothing.
// The zero value is not ready: use NewHash.
type Hash struct{ h uint64 }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// NewHash returns an empty hash.
func NewHash() Hash { return Hash{h: fnvOffset} }

// Sum returns the hash of everything added so far.
func (h *Hash) Sum() uint64 { return h.h }

func (h *Hash) u64(v uint64) {
	x := h.h
	for i := 0; i < 8; i++ {
		x ^= v & 0xff
		x *= fnvPrime
		v >>= 8
	}
	h.h = x
}

func (h *Hash) str(s string) {
	h.u64(uint64(len(s)))
	x := h.h
	for i := 0; i < len(s); i++ {
		x ^= uint64(s[i])
		x *= fnvPrime
	}
	h.h = x
}

// Float adds a float64 (by its bits).
func (h *Hash) Float(f float64) { h.u64(math.Float64bits(f)) }

// Uint adds an integer.
func (h *Hash) Uint(v uint64) { h.u64(v) }

// String adds a string.
func (h *Hash) String(s string) { h.str(s) }

// Add adds one record.
func (h *Hash) Add(r *Record) {
	h.u64(r.Seq)
	h.u64(uint64(r.T))
	h.u64(uint64(r.Kind))
	h.u64(uint64(uint32(r.Worker)))
	h.u64(uint64(uint32(r.Proc)))
	h.str(r.Owner)
	h.u64(uint64(r.Mono))
	h.u64(uint64(r.Wall))
	h.str(r.Key)
	h.u64(uint64(r.Counter))
	h.str(r.Checkpoint.Sequence)
	h.u64(uint64(r.Checkpoint.SubSequence))
	h.str(r.First)
	h.str(r.Last)
	h.u64(uint64(r.Count))
	h.str(r.Reason)
	h.str(r.Previous)
	h.u64(r.Call)
	h.u64(uint64(r.Op))
	h.u64(uint64(r.Sent))
	h.u64(uint64(r.Applied))
	h.str(r.Outcome)
	h.str(r.Fault)
	h.str(r.ExpOwner)
	h.u64(uint64(r.ExpCounter))
	if r.Unconditional {
		h.u64(1)
	} else {
		h.u64(0)
	}
	h.str(r.RowOwner)
	h.str(r.Parent)
	h.str(r.Parent2)
}

// HashRecords returns the hash of a whole history.
func HashRecords(recs []Record) uint64 {
	h := NewHash()
	for i := range recs {
		h.Add(&recs[i])
	}
	return h.Sum()
}
