package check

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/engine"
)

// TestSeqAcrossDigitBoundaries: the checkers' own comparison orders
// sequence numbers numerically across changes of length, with leading
// zeros, at the 56-digit width Kinesis uses and beyond.
func TestSeqAcrossDigitBoundaries(t *testing.T) {
	ordered := []string{"0", "1", "9", "10", "11", "99", "100", "101", "999", "1000",
		"18446744073709551615", "18446744073709551616", // 2^64-1, 2^64
		strings.Repeat("9", 55), "1" + strings.Repeat("0", 55), "1" + strings.Repeat("0", 54) + "1",
		strings.Repeat("9", 56), "1" + strings.Repeat("0", 56), strings.Repeat("9", 128)}
	for i := range ordered {
		for j := range ordered {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := ParseSeq(ordered[i]).Compare(ParseSeq(ordered[j])); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	for _, s := range ordered {
		if got := ParseSeq("000" + s).Compare(ParseSeq(s)); got != 0 {
			t.Errorf("Compare(000%s, %s) = %d, want 0", s, s, got)
		}
	}
	if ParseSeq("").Compare(ParseSeq("0")) >= 0 || ParseSeq("0").Compare(ParseSeq("")) <= 0 || ParseSeq("").Compare(ParseSeq("")) != 0 {
		t.Error(`"" must order before every sequence number and equal itself`)
	}
	// sub-sequence numbers order records within one sequence number
	a, b := ParseSubSeq("100", 0), ParseSubSeq("100", 3)
	if a.Compare(b) >= 0 || b.Compare(ParseSubSeq("101", 0)) >= 0 || b.Compare(ParseSubSeq("0100", 3)) != 0 {
		t.Error("sub-sequence numbers out of order")
	}
}

// TestSeqMatchesBigInts: on random decimal strings of 1 to 70 digits (with
// leading zeros), the comparison agrees with math/big.
func TestSeqMatchesBigInts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	digits := func() string {
		n := 1 + r.IntN(70)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		if r.IntN(3) == 0 {
			return "00" + string(b)
		}
		return string(b)
	}
	for range 20000 {
		x, y := digits(), digits()
		if r.IntN(10) == 0 {
			y = x // equal values
		}
		bx, _ := new(big.Int).SetString(x, 10)
		by, _ := new(big.Int).SetString(y, 10)
		if got, want := ParseSeq(x).Compare(ParseSeq(y)), bx.Cmp(by); got != want {
			t.Fatalf("Compare(%s, %s) = %d, math/big says %d", x, y, got, want)
		}
	}
}

// TestPosOrder: start sentinels before sequence numbers before SHARD_END.
func TestPosOrder(t *testing.T) {
	th, seq9, seq10, end := PosOf(engine.Checkpoint{Sequence: engine.TrimHorizon}), PosOf(engine.SequenceCheckpoint("9")),
		PosOf(engine.SequenceCheckpoint("10")), PosOf(engine.Checkpoint{Sequence: engine.ShardEnd})
	if !(th.Compare(seq9) < 0 && seq9.Compare(seq10) < 0 && seq10.Compare(end) < 0 && th.Compare(PosOf(engine.Checkpoint{Sequence: engine.Latest})) == 0) {
		t.Error("checkpoints out of order")
	}
	if !seq10.Covers(ParseSeq("9")) || !seq10.Covers(ParseSeq("10")) || seq10.Covers(ParseSeq("11")) || !end.Covers(ParseSeq("11")) || th.Covers(ParseSeq("0")) {
		t.Error("Covers is wrong")
	}
	if !th.IsStart() || !end.IsEnd() || seq9.IsStart() || seq9.IsEnd() {
		t.Error("IsStart/IsEnd are wrong")
	}
}
