package kpl

import (
	"cmp"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// HashKey is a Kinesis hash key: an unsigned 128-bit integer Hi·2^64 + Lo.
type HashKey struct{ Hi, Lo uint64 }

// MaxHashKey is 2^128-1, the top of the hash key space.
var MaxHashKey = HashKey{^uint64(0), ^uint64(0)}

// PartitionKeyHash returns the hash key of a partition key, as Kinesis and
// the KCL compute it: the MD5 digest of its UTF-8 bytes read as a
// big-endian unsigned integer.
func PartitionKeyHash(partitionKey string) HashKey {
	sum := md5.Sum([]byte(partitionKey))
	return HashKey{binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:])}
}

// ParseHashKey parses a decimal hash key: digits only (leading zeros
// allowed), at most 2^128-1.
func ParseHashKey(s string) (HashKey, error) {
	if s == "" {
		return HashKey{}, fmt.Errorf("empty hash key")
	}
	var h HashKey
	for i := 0; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return HashKey{}, fmt.Errorf("hash key %.50q is not a decimal integer", s)
		}
		// h = h*10 + d, failing on overflow.
		carry, lo := bits.Mul64(h.Lo, 10)
		top, hi := bits.Mul64(h.Hi, 10)
		hi, c1 := bits.Add64(hi, carry, 0)
		lo, c2 := bits.Add64(lo, uint64(d-'0'), 0)
		hi, c3 := bits.Add64(hi, 0, c2)
		if top != 0 || c1 != 0 || c3 != 0 {
			return HashKey{}, fmt.Errorf("hash key %.50q is not below 2^128", s)
		}
		h = HashKey{hi, lo}
	}
	return h, nil
}

// Compare returns -1, 0 or +1 as a is less than, equal to or greater than b.
func (a HashKey) Compare(b HashKey) int {
	if c := cmp.Compare(a.Hi, b.Hi); c != 0 {
		return c
	}
	return cmp.Compare(a.Lo, b.Lo)
}

// String returns a in decimal, as Kinesis spells hash keys.
func (a HashKey) String() string {
	if a.Hi == 0 {
		return fmt.Sprint(a.Lo)
	}
	var buf [39]byte
	i := len(buf)
	for a.Hi != 0 || a.Lo != 0 {
		var r uint64
		a.Hi, r = bits.Div64(0, a.Hi, 10)
		a.Lo, r = bits.Div64(r, a.Lo, 10)
		i--
		buf[i] = byte('0' + r)
	}
	return string(buf[i:])
}

// HashRange is an inclusive range of hash keys: a shard's.
type HashRange struct{ Start, End HashKey }

// FullRange is the whole hash key space.
var FullRange = HashRange{End: MaxHashKey}

// ParseHashRange parses a shard's StartingHashKey and EndingHashKey.
func ParseHashRange(start, end string) (HashRange, error) {
	s, err := ParseHashKey(start)
	if err != nil {
		return HashRange{}, fmt.Errorf("starting hash key: %w", err)
	}
	e, err := ParseHashKey(end)
	if err != nil {
		return HashRange{}, fmt.Errorf("ending hash key: %w", err)
	}
	if s.Compare(e) > 0 {
		return HashRange{}, fmt.Errorf("starting hash key %s is above the ending hash key %s", start, end)
	}
	return HashRange{s, e}, nil
}

// Contains reports whether h is in r.
func (r HashRange) Contains(h HashKey) bool { return r.Start.Compare(h) <= 0 && h.Compare(r.End) <= 0 }

// IsFull reports whether r is the whole hash key space.
func (r HashRange) IsFull() bool { return r == FullRange }

func (r HashRange) String() string { return "[" + r.Start.String() + ", " + r.End.String() + "]" }
