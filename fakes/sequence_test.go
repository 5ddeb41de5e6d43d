package fakes

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// TestSequenceLayouts: every layout writes counter n as the number
// hi·10^18 + lo + (n−n0)·step, checked with math/big, without leading
// zeros and within the API's 129 digits.
func TestSequenceLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		n0 := uint64(rng.IntN(1000))
		l := drawLayout(rng, n0)
		hi, _ := new(big.Int).SetString("0"+l.hi[0], 10)
		base := new(big.Int).Add(new(big.Int).Mul(hi, new(big.Int).Exp(big.NewInt(10), big.NewInt(loDigits), nil)), new(big.Int).SetUint64(l.lo))
		for _, d := range []uint64{0, 1, 2, 7, 100, 5000, 20000, 1 << 20} {
			got := l.format(n0 + d)
			want := new(big.Int).Add(base, new(big.Int).SetUint64(d*l.step)).String()
			if got != want {
				t.Fatalf("layout %+v, counter n0+%d: %s, want %s", l, d, got, want)
			}
			if len(got) > maxSeqDigits || engine.ValidateSequence(got) != nil {
				t.Fatalf("layout %+v: %q is not a valid sequence number", l, got)
			}
		}
	}
	for _, c := range [][2]string{{"", "1"}, {"9", "10"}, {"199", "200"}, {"999", "1000"}, {"1234", "1235"}} {
		if got := incDecimal(c[0]); got != c[1] {
			t.Errorf("incDecimal(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}

// TestSequenceLengthsVary: the shards of a stream number their records
// with short and long numbers, and within a shard numbers grow across a
// digit boundary, so that a string comparison of two numbers of one shard
// gives the wrong order.
func TestSequenceLengthsVary(t *testing.T) {
	k, clock := newKinesis(t, KinesisOptions{Seed: 7})
	must(t, k.CreateStream("s", 24))
	for i := range 20000 {
		clock.Advance(time.Millisecond)
		_, _, err := k.PutRecord("s", fmt.Sprintf("pk-%d", i), nil)
		must(t, err)
	}
	infos, err := k.Shards("s")
	must(t, err)
	short, long, grew, misordered := 0, 0, 0, 0
	for _, sh := range infos {
		recs, err := k.Records("s", sh.ID)
		must(t, err)
		if len(recs) == 0 {
			continue
		}
		first, last := recs[0].Sequence, recs[len(recs)-1].Sequence
		switch {
		case len(first) < 20:
			short++
		case len(first) > 56:
			long++
		}
		if len(last) > len(first) {
			grew++
			if last < first {
				misordered++ // as strings
			}
		}
	}
	t.Logf("24 shards: %d short, %d long, %d grew across a digit boundary (%d misordered as strings)", short, long, grew, misordered)
	if short == 0 || long == 0 || grew < 8 || misordered == 0 {
		t.Fatalf("lengths do not vary enough: %d short, %d long, %d grew, %d misordered as strings", short, long, grew, misordered)
	}
}
