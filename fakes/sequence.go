package fakes

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Sequence numbers are decimal strings of varying length, as the API's
// pattern 0|([1-9]\d{0,128}) allows: code that compares them as strings
// rather than as numbers must break on them. Each shard draws its own
// layout from the fake's seeded source when it is created: some shards
// number their records with a few digits, some with more than a hundred,
// and most numbers grow across a digit boundary within their shard after
// a few records (…998, …999, 1000…).
//
// One counter per stream still orders every number issued after another
// above it within a shard: a shard's starting number, its records, and its
// ending number in that order. (A generated stream's shard counts from its
// starting number's counter on its own: record j has counter n0+1+j, its
// end n0+1+count; the layouts are the same.) Numbers of different shards
// are not comparable (a child may number its records with fewer digits
// than its parent did), as on Kinesis, where nothing promises they are.
const (
	maxSeqDigits = 129 // the API's longest sequence number
	loDigits     = 18  // digits of a layout's low part
	loBase       = 1_000_000_000_000_000_000
)

// seqGen is the counter of one stream.
type seqGen struct {
	next uint64 // counter of the next number
}

func newSeqGen() seqGen { return seqGen{next: 1} }

// take returns the next counter.
func (g *seqGen) take() uint64 {
	n := g.next
	g.next++
	return n
}

// last returns the latest counter issued.
func (g *seqGen) last() uint64 { return g.next - 1 }

// seqLayout maps a stream's counters to one shard's sequence numbers:
// counter n (at or after n0, the counter of the shard's starting number)
// is the number hi·10^18 + lo + (n−n0)·step, written without leading
// zeros. hi is a decimal string (empty for 0).
type seqLayout struct {
	n0   uint64
	lo   uint64 // < 10^18
	step uint64
	hi   []string // hi, hi+1, ... (grown as carries need them)
}

// drawLayout draws the layout of a shard whose starting number has
// counter n0.
func drawLayout(rng *rand.Rand, n0 uint64) seqLayout {
	l := seqLayout{n0: n0, step: 1 + uint64(rng.IntN(1000))}
	if rng.IntN(4) == 0 {
		l.step = 1
	}
	// how many of the shard's numbers come before a digit boundary:
	// log-uniform from 1 to about 10,000
	before := uint64(1) << rng.IntN(14)
	before += uint64(rng.IntN(int(before)))
	gap := before * l.step
	switch rng.IntN(3) {
	case 0: // short: 1 to 18 digits, growing by one digit soon
		digits := 1 + rng.IntN(loDigits)
		p := pow10(digits)
		l.lo = 1
		if gap < p {
			l.lo = p - gap
		}
		l.hi = []string{""}
	case 1: // long, all nines above the low part: grows to 10^j·10^18
		j := 1 + rng.IntN(maxSeqDigits-loDigits-1)
		l.hi = []string{strings.Repeat("9", j)}
		l.lo = loBase - min(gap, loBase-1)
	default: // any length up to 128 digits, and a carry in the middle
		j := 1 + rng.IntN(maxSeqDigits-loDigits-1)
		b := make([]byte, j)
		b[0] = '1' + byte(rng.IntN(9))
		for i := 1; i < j; i++ {
			b[i] = '0' + byte(rng.IntN(10))
		}
		l.hi = []string{string(b)}
		l.lo = loBase - min(gap, loBase-1)
	}
	return l
}

func pow10(d int) uint64 {
	p := uint64(1)
	for ; d > 0; d-- {
		p *= 10
	}
	return p
}

// format returns the sequence number of counter n.
func (l *seqLayout) format(n uint64) string {
	var b [maxSeqDigits + 20]byte
	return string(l.appendFormat(b[:0], n))
}

// appendFormat appends the sequence number of counter n (>= n0) to dst.
func (l *seqLayout) appendFormat(dst []byte, n uint64) []byte {
	v := l.lo + (n-l.n0)*l.step // < 2^64 for any counter a run reaches
	carry, lo := v/loBase, v%loBase
	hi := l.high(int(carry))
	if hi == "" {
		return strconv.AppendUint(dst, lo, 10)
	}
	dst = append(dst, hi...)
	var b [loDigits]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = '0' + byte(lo%10)
		lo /= 10
	}
	return append(dst, b[:]...)
}

// high returns hi+c as a decimal string ("" for 0).
func (l *seqLayout) high(c int) string {
	for len(l.hi) <= c {
		l.hi = append(l.hi, incDecimal(l.hi[len(l.hi)-1]))
	}
	return l.hi[c]
}

// incDecimal returns the decimal string s plus one ("" is 0).
func incDecimal(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}
