package fakes

import "math/rand/v2"

// Sequence numbers are 56 decimal digits, like the ones Kinesis issues:
// "49", an 18-digit stream tag drawn from the fake's seeded source, and a
// 36-digit per-stream counter. All numbers of a stream have the same width
// and tag, so they order like their counters, as strings and as numbers.
const (
	seqDigits       = 56
	seqPrefixDigits = 20 // "49" + the stream tag
)

// seqGen issues the sequence numbers of one stream. One counter per stream
// orders every number issued after another above it: a shard's starting
// number, its records, and its ending number in that order, and a child's
// numbers above its parents' (children are created when the parents
// close).
type seqGen struct {
	prefix [seqPrefixDigits]byte
	next   uint64 // counter of the next number
}

// newSeqGen returns a generator whose stream tag is drawn from rng.
func newSeqGen(rng *rand.Rand) seqGen {
	var g seqGen
	g.prefix[0], g.prefix[1] = '4', '9'
	for i := 2; i < seqPrefixDigits; i++ {
		g.prefix[i] = '0' + byte(rng.IntN(10))
	}
	g.next = 1
	return g
}

// take issues the next sequence number.
func (g *seqGen) take() string {
	s := g.format(g.next)
	g.next++
	return s
}

// last returns the latest number issued (the counter before next).
func (g *seqGen) last() string { return g.format(g.next - 1) }

// format returns the sequence number with counter n.
func (g *seqGen) format(n uint64) string {
	var b [seqDigits]byte
	return string(g.appendFormat(b[:0], n))
}

// appendFormat appends the sequence number with counter n to dst.
func (g *seqGen) appendFormat(dst []byte, n uint64) []byte {
	dst = append(dst, g.prefix[:]...)
	var b [seqDigits - seqPrefixDigits]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = '0' + byte(n%10)
		n /= 10
	}
	return append(dst, b[:]...)
}
