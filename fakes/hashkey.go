package fakes

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
)

// hashKey is a Kinesis hash key: an unsigned 128-bit integer.
type hashKey struct{ hi, lo uint64 }

// maxHashKey is 2^128-1, the top of the hash key space.
var maxHashKey = hashKey{^uint64(0), ^uint64(0)}

// hashOf returns the hash key of a partition key, as Kinesis computes it:
// the MD5 digest of its UTF-8 bytes read as a big-endian unsigned integer.
func hashOf(partitionKey string) hashKey {
	sum := md5.Sum([]byte(partitionKey))
	return hashKey{binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:])}
}

// cmp returns -1, 0 or +1 as a is less than, equal to or greater than b.
func (a hashKey) cmp(b hashKey) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// inc returns a+1 (wrapping at 2^128).
func (a hashKey) inc() hashKey {
	a.lo++
	if a.lo == 0 {
		a.hi++
	}
	return a
}

// dec returns a-1 (wrapping at 0).
func (a hashKey) dec() hashKey {
	if a.lo == 0 {
		a.hi--
	}
	a.lo--
	return a
}

// add returns a+b (wrapping at 2^128).
func (a hashKey) add(b hashKey) hashKey {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, carry)
	return hashKey{hi, lo}
}

// sub returns a-b (wrapping at 0).
func (a hashKey) sub(b hashKey) hashKey {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return hashKey{hi, lo}
}

// scale returns ⌊a·u / 2^64⌋, which is at most a.
func (a hashKey) scale(u uint64) hashKey {
	hi, lo := bits.Mul64(a.hi, u)
	mid, _ := bits.Mul64(a.lo, u)
	lo, carry := bits.Add64(lo, mid, 0)
	return hashKey{hi + carry, lo}
}

// big returns a as a big.Int.
func (a hashKey) big() *big.Int {
	b := new(big.Int).SetUint64(a.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(a.lo))
}

// String returns a in decimal, as Kinesis spells hash keys.
func (a hashKey) String() string { return a.big().String() }

// hashKeyFromBig converts b, which must be in [0, 2^128).
func hashKeyFromBig(b *big.Int) hashKey {
	lo := new(big.Int).And(b, new(big.Int).SetUint64(^uint64(0)))
	hi := new(big.Int).Rsh(b, 64)
	return hashKey{hi.Uint64(), lo.Uint64()}
}

// parseHashKey parses a decimal hash key.
func parseHashKey(s string) (hashKey, error) {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok || b.Sign() < 0 || b.BitLen() > 128 || s == "" || s[0] == '+' || s[0] == '-' {
		return hashKey{}, fmt.Errorf("hash key %q is not a decimal integer in [0, 2^128)", s)
	}
	return hashKeyFromBig(b), nil
}

// evenRanges splits the hash key space into n contiguous ranges as
// CreateStream does: range i starts at i·⌊2^128/n⌋, and the last one ends
// at 2^128-1.
func evenRanges(n int) [][2]hashKey {
	space := new(big.Int).Lsh(big.NewInt(1), 128)
	step := new(big.Int).Div(space, big.NewInt(int64(n)))
	out := make([][2]hashKey, n)
	start := new(big.Int)
	for i := range out {
		end := new(big.Int).Add(start, step)
		out[i][0] = hashKeyFromBig(start)
		out[i][1] = hashKeyFromBig(end).dec()
		start = end
	}
	out[n-1][1] = maxHashKey
	return out
}
