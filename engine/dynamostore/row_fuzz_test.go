package dynamostore_test

import (
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
)

// Attribute kinds the fuzzer draws for each attribute of a row.
const (
	aAbsent = iota
	aS
	aN
	aSS
	aNULL
	aBOOL
	aL
	aKinds
)

// fuzzAttr builds one attribute of kind k (mod aKinds) from v; SS splits v
// at commas.
func fuzzAttr(item dynamostore.Item, name string, k uint8, v string) {
	switch k % aKinds {
	case aS:
		item[name] = &types.AttributeValueMemberS{Value: v}
	case aN:
		item[name] = &types.AttributeValueMemberN{Value: v}
	case aSS:
		item[name] = &types.AttributeValueMemberSS{Value: strings.Split(v, ",")}
	case aNULL:
		item[name] = &types.AttributeValueMemberNULL{Value: true}
	case aBOOL:
		item[name] = &types.AttributeValueMemberBOOL{Value: v != ""}
	case aL:
		item[name] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: v}}}
	}
}

var maxInt64 = new(big.Int).SetUint64(1<<63 - 1)

// oracleInt: an optional N attribute read as an int64, with math/big.
func oracleInt(k uint8, v string, required bool) (int64, bool) {
	switch k % aKinds {
	case aAbsent, aNULL:
		return 0, !required
	case aN:
		n, ok := new(big.Int).SetString(v, 10)
		if !ok || n.Sign() < 0 && n.Cmp(new(big.Int).Neg(maxInt64)) < 0 || n.Cmp(maxInt64) > 0 {
			return 0, false
		}
		return n.Int64(), true
	}
	return 0, false
}

// oracleSeq: a sequence number is 1 to 129 decimal digits (math/big reads
// it; no sign).
func oracleSeq(s string) bool {
	if len(s) == 0 || len(s) > 129 || s[0] == '+' || s[0] == '-' {
		return false
	}
	_, ok := new(big.Int).SetString(s, 10)
	return ok
}

// oracleValid decides, independently of the decoder, whether a row built
// from these attributes is a lease.
func oracleValid(keyK uint8, key string, ownerK uint8, counterK uint8, counter string, cpK uint8, cp string, subK uint8, sub string, parentsK uint8, parents string) bool {
	if keyK%aKinds != aS || key == "" {
		return false
	}
	if k := ownerK % aKinds; k != aAbsent && k != aNULL && k != aS {
		return false
	}
	if k := parentsK % aKinds; k != aAbsent && k != aNULL && k != aSS || k == aSS && slices.Contains(strings.Split(parents, ","), "") {
		return false
	}
	n, ok := oracleInt(counterK, counter, true)
	if !ok || n < 0 {
		return false
	}
	subN, ok := oracleInt(subK, sub, false)
	if !ok || cpK%aKinds != aS {
		return false
	}
	switch cp {
	case engine.TrimHorizon, engine.Latest, engine.AtTimestamp, engine.ShardEnd:
		return subN == 0
	}
	return oracleSeq(cp) && subN >= 0
}

// FuzzDecodeLease decodes rows built from drawn attributes: the decoder
// never panics, accepts exactly the rows the math/big oracle accepts, and
// every lease it accepts survives EncodeLease and DecodeLease unchanged.
func FuzzDecodeLease(f *testing.F) {
	// the rows of TestDecodeMalformedKinds and a valid one
	f.Add(uint8(aS), "shardId-000000000001", uint8(aS), "w", uint8(aN), "7", uint8(aS), "49590338271490256608559692538361571095921575989136588802", uint8(aN), "3", uint8(aSS), "a,b")
	f.Add(uint8(aS), "k", uint8(aN), "1", uint8(aN), "1", uint8(aS), "TRIM_HORIZON", uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aS), "7", uint8(aS), "LATEST", uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "1", uint8(aS), "not-a-seq-!!", uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "100000000000000000000000", uint8(aS), "1", uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "1", uint8(aS), strings.Repeat("9", 200), uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "-1", uint8(aS), "1", uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "1.5", uint8(aS), "1", uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "1", uint8(aS), "1", uint8(aAbsent), "", uint8(aS), "shardId-0")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "1", uint8(aS), "SHARD_END", uint8(aN), "2", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "1", uint8(aS), "5", uint8(aN), "-2", uint8(aAbsent), "")
	f.Add(uint8(aN), "5", uint8(aS), "w", uint8(aN), "1", uint8(aS), "5", uint8(aAbsent), "", uint8(aAbsent), "")
	f.Add(uint8(aS), "k", uint8(aS), "w", uint8(aN), "+007", uint8(aS), "0005", uint8(aNULL), "", uint8(aNULL), "")
	f.Fuzz(func(t *testing.T, keyK uint8, key string, ownerK uint8, owner string, counterK uint8, counter string,
		cpK uint8, cp string, subK uint8, sub string, parentsK uint8, parents string) {
		item := dynamostore.Item{}
		fuzzAttr(item, dynamostore.AttrKey, keyK, key)
		fuzzAttr(item, dynamostore.AttrOwner, ownerK, owner)
		fuzzAttr(item, dynamostore.AttrCounter, counterK, counter)
		fuzzAttr(item, dynamostore.AttrCheckpoint, cpK, cp)
		fuzzAttr(item, dynamostore.AttrSubSequence, subK, sub)
		fuzzAttr(item, dynamostore.AttrParents, parentsK, parents)
		l, gotKey, err := dynamostore.DecodeLease(item)
		want := oracleValid(keyK, key, ownerK, counterK, counter, cpK, cp, subK, sub, parentsK, parents)
		if (err == nil) != want {
			t.Fatalf("DecodeLease(%v) err = %v; the oracle says valid = %v", item, err, want)
		}
		if keyK%aKinds == aS && gotKey != key {
			t.Fatalf("DecodeLease returned key %q, the row's leaseKey is %q", gotKey, key)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a reason")
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("decoded a lease that does not validate: %v", err)
		}
		if l.Checkpoint.Sequence != cp {
			t.Fatalf("checkpoint %q decoded as %q", cp, l.Checkpoint.Sequence)
		}
		if n, _ := oracleInt(counterK, counter, true); l.Counter != n {
			t.Fatalf("leaseCounter %q decoded as %d, want %d", counter, l.Counter, n)
		}
		back, _, err := dynamostore.DecodeLease(dynamostore.EncodeLease(l))
		if err != nil || !back.Equal(l) {
			t.Fatalf("round trip of %+v: %+v, %v", l, back, err)
		}
	})
}
