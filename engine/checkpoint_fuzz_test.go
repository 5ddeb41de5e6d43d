package engine

import (
	"cmp"
	"math/big"
	"strings"
	"testing"
)

// bigSeq is the oracle's reading of a sequence number: 1 to 129 decimal
// digits (the API's pattern 0|([1-9]\d{0,128}), leading zeros allowed),
// no sign, read by math/big.
func bigSeq(s string) (*big.Int, bool) {
	if len(s) == 0 || len(s) > MaxSequenceDigits || s[0] == '+' || s[0] == '-' {
		return nil, false
	}
	return new(big.Int).SetString(s, 10)
}

// oracleRank orders checkpoints as the oracle sees them: start sentinels,
// then sequence numbers, then SHARD_END.
func oracleRank(s string) int {
	switch s {
	case TrimHorizon, Latest, AtTimestamp, "":
		return 0
	case ShardEnd:
		return 2
	}
	return 1
}

// oracleCompare compares two checkpoints with math/big.
func oracleCompare(a, b Checkpoint) int {
	ra, rb := oracleRank(a.Sequence), oracleRank(b.Sequence)
	if ra != rb || ra != 1 {
		return cmp.Compare(ra, rb)
	}
	x, _ := bigSeq(a.Sequence)
	y, _ := bigSeq(b.Sequence)
	if c := x.Cmp(y); c != 0 {
		return c
	}
	return cmp.Compare(a.SubSequence, b.SubSequence)
}

// FuzzSequences checks ValidateSequence, CompareSequences and
// Checkpoint.Compare/Validate against an independent math/big oracle.
func FuzzSequences(f *testing.F) {
	f.Add("9", "10", int64(0), int64(0))
	f.Add("010", "10", int64(1), int64(0))
	f.Add(seq56a, seq56b, int64(3), int64(3))
	f.Add(max128, "340282366920938463463374607431768211456", int64(0), int64(-1))
	f.Add(strings.Repeat("9", 128), "1"+strings.Repeat("0", 128), int64(0), int64(0))
	f.Add("not-a-seq-!!", "+5", int64(0), int64(0))
	f.Add("-0", "0", int64(0), int64(0))
	f.Add(ShardEnd, TrimHorizon, int64(2), int64(0))
	f.Add("", Latest, int64(0), int64(0))
	f.Add("١٢", "12", int64(0), int64(0)) // Arabic-Indic digits are not decimal digits here
	f.Fuzz(func(t *testing.T, a, b string, subA, subB int64) {
		xa, okA := bigSeq(a)
		xb, okB := bigSeq(b)
		if (ValidateSequence(a) == nil) != okA {
			t.Fatalf("ValidateSequence(%q) = %v; the oracle says valid = %v", a, ValidateSequence(a), okA)
		}
		if okA && okB {
			if got, want := CompareSequences(a, b), xa.Cmp(xb); got != want {
				t.Fatalf("CompareSequences(%q, %q) = %d, want %d", a, b, got, want)
			}
			if CompareSequences(a, b) != -CompareSequences(b, a) {
				t.Fatalf("CompareSequences(%q, %q) is not antisymmetric", a, b)
			}
		}
		ca, cb := Checkpoint{Sequence: a, SubSequence: subA}, Checkpoint{Sequence: b, SubSequence: subB}
		sentinel := oracleRank(a) != 1 && a != ""
		wantValid := sentinel && subA == 0 || !sentinel && okA && subA >= 0
		if (ca.Validate() == nil) != wantValid {
			t.Fatalf("Checkpoint{%q, %d}.Validate() = %v; the oracle says valid = %v", a, subA, ca.Validate(), wantValid)
		}
		validB := oracleRank(b) != 1 || okB
		if (okA || oracleRank(a) != 1) && validB {
			if got, want := ca.Compare(cb), oracleCompare(ca, cb); got != want {
				t.Fatalf("%v.Compare(%v) = %d, want %d", ca, cb, got, want)
			}
			if ca.Compare(cb) != -cb.Compare(ca) {
				t.Fatalf("Compare of %v and %v is not antisymmetric", ca, cb)
			}
		}
	})
}
