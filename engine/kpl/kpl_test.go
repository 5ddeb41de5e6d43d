package kpl

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// Aggregated records written by the real KPL, as published with the tests
// of github.com/awslabs/kinesis-aggregation (python/test/test_deagg.py):
// with explicit hash keys, without, and with one partition key and one
// explicit hash key shared by all four records (deduplicated tables).
var kplVectors = []struct {
	name string
	b64  string
	pks  []string
	ehks []string // "" for none
	data []string
}{
	{"with_ehks",
		"84mawgokZmMwM2RkODgtM2U3OS00NDhhLWIwMWEtN2NmMWJkNDdiNzg0CiRjYWU0MWIxYy1lYTYxLTQzZjItOTBiZS1iODc1NWViZjg4ZTIKJGQ0OTA2OTBjLWU3NGQtNGRiMi1hM2M4LWQ4ZjJmMTg0ZmQyMwokYzkyNGJjMDktYjg1ZS00N2YxLWIzMmUtMzM2NTIyZWU1M2M4EiYzODQ4NjQ5NTg2NzUwODM5OTA3ODE1OTcyMzg0NjA1MTgwNzAyMBInMTkzNzg3NjAwMDM3NjgxNzA2OTUyMTQzMzU3MDcxOTE2MzUyNjA0EicyNjY4ODA0MzY5NjQ5MzI0MjQyNjU0NjY5MTY3MzQwNjg2ODQ0MzkSJzMzOTYwNjYwMDk0Mjk2NzM5MTg1NDYwMzU1MjQwMjAyMTg0NzI5MhomCAAQABogUkVDT1JEIDIyIHBlZW9iaGN6YnpkbXNrYm91cGd5cQoaJggBEAEaIFJFQ09SRCAyMyB1c3dreGZ0eHJvZXVzc2N4c2pobm8KGiYIAhACGiBSRUNPUkQgMjQgY2FzZWhkZ2l2ZmF4ZXVzdGx5c3p5ChomCAMQAxogUkVDT1JEIDI1IG52ZmZ2cG11b2dkb3BqaGFtZXZyawpRwVPQ3go0yp4Y6kvM0q3V",
		[]string{"fc03dd88-3e79-448a-b01a-7cf1bd47b784", "cae41b1c-ea61-43f2-90be-b8755ebf88e2", "d490690c-e74d-4db2-a3c8-d8f2f184fd23", "c924bc09-b85e-47f1-b32e-336522ee53c8"},
		[]string{"38486495867508399078159723846051807020", "193787600037681706952143357071916352604", "266880436964932424265466916734068684439", "339606600942967391854603552402021847292"},
		[]string{"RECORD 22 peeobhczbzdmskboupgyq\n", "RECORD 23 uswkxftxroeusscxsjhno\n", "RECORD 24 casehdgivfaxeustlyszy\n", "RECORD 25 nvffvpmuogdopjhamevrk\n"}},
	{"without_ehks",
		"84mawgokNzhmZWIxMmEtZGJhMC00NWNhLWE5MWUtYmIxZjJmMTgxOWI0CiRjMmE3NTc4Ny00NjliLTQzMTAtODQwZC1kNDg2ZGNhN2ViNWUKJDY1MGU5MzYyLTU3MmItNDQyNy1iM2ZjLTEzNTQ5ZDdlNWFlNQokMWQ4ZDk2MDAtMDBiNy00NmYzLWE5ODMtZGU4MzQ3NzU0MGMwCiRmMmU3MThhMC0zODliLTQ5NGEtYjc5Ni0zMzU1YjA3NTY5Y2MKJDk2NWI4ZGE0LWE2YmQtNDc1NS04MWM5LWU3MTgxYWI3ZGM5YQokZDY5M2M1ZjAtNTc3Mi00NmM5LThkODYtMDhjNzA1NWJkYjc1CiQ4ZDkyNDc2Yi1lYjg5LTRlODEtOTlmYi1jMmJhNjNhZDZkOTAaJAgAGiBSRUNPUkQgMTggaWtscnBzdnloeG5lcm9kZmVoZXJ1ChokCAEaIFJFQ09SRCAxOSBsbm1udWR5aHZwdmNncm9rZm16ZGgKGiQIAhogUkVDT1JEIDIwIHBqcXJjZmJ4YWZ6ZG5kem1iZ2FuZQoaJAgDGiBSRUNPUkQgMjEgYWFmcmV5cm50d3V3eGxpeWdrYmhrChokCAQaIFJFQ09SRCAyMiBxc2FhZGhic2dtdnFnZGlmZ3V5b3UKGiQIBRogUkVDT1JEIDIzIHdqb2tvaXd2enpobGZ0bHpocWZqawoaJAgGGiBSRUNPUkQgMjQgem9wY2FzY3J0aGJicG5qaXd1aGpiChokCAcaIFJFQ09SRCAyNSB0eGJidm5venJ3c2JveHVvbXFib3EKvV1rrLdU+Sy2v8xkgZ5YaA==",
		[]string{"78feb12a-dba0-45ca-a91e-bb1f2f1819b4", "c2a75787-469b-4310-840d-d486dca7eb5e", "650e9362-572b-4427-b3fc-13549d7e5ae5", "1d8d9600-00b7-46f3-a983-de83477540c0",
			"f2e718a0-389b-494a-b796-3355b07569cc", "965b8da4-a6bd-4755-81c9-e7181ab7dc9a", "d693c5f0-5772-46c9-8d86-08c7055bdb75", "8d92476b-eb89-4e81-99fb-c2ba63ad6d90"},
		[]string{"", "", "", "", "", "", "", ""},
		[]string{"RECORD 18 iklrpsvyhxnerodfeheru\n", "RECORD 19 lnmnudyhvpvcgrokfmzdh\n", "RECORD 20 pjqrcfbxafzdndzmbgane\n", "RECORD 21 aafreyrntwuwxliygkbhk\n",
			"RECORD 22 qsaadhbsgmvqgdifguyou\n", "RECORD 23 wjokoiwvzzhlftlzhqfjk\n", "RECORD 24 zopcascrthbbpnjiwuhjb\n", "RECORD 25 txbbvnozrwsboxuomqboq\n"}},
	{"shared_keys",
		"84mawgoNMTU2MjYwMjA3NDg5NhInMzM5NjA2NjAwOTQyOTY3MzkxODU0NjAzNTUyNDAyMDIxODQ3MjkyGicIABAAGiFSRUNPUkQgMjAwNSBwanFyY2ZieGFmemRuZHptYmdhbmUaJwgAEAAaIVJFQ09SRCAyMDA2IHBqcXJjZmJ4YWZ6ZG5kem1iZ2FuZRonCAAQABohUkVDT1JEIDIwMDcgcGpxcmNmYnhhZnpkbmR6bWJnYW5lGicIABAAGiFSRUNPUkQgMjAwOCBwanFyY2ZieGFmemRuZHptYmdhbmUHrLqXAgpJOT8v1lp81gM/",
		[]string{"1562602074896", "1562602074896", "1562602074896", "1562602074896"},
		[]string{"339606600942967391854603552402021847292", "339606600942967391854603552402021847292", "339606600942967391854603552402021847292", "339606600942967391854603552402021847292"},
		[]string{"RECORD 2005 pjqrcfbxafzdndzmbgane", "RECORD 2006 pjqrcfbxafzdndzmbgane", "RECORD 2007 pjqrcfbxafzdndzmbgane", "RECORD 2008 pjqrcfbxafzdndzmbgane"}},
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Decode reads what the KPL wrote, and Encode writes the same bytes back.
func TestKPLVectors(t *testing.T) {
	for _, v := range kplVectors {
		t.Run(v.name, func(t *testing.T) {
			b := mustB64(t, v.b64)
			if !IsAggregated(b) {
				t.Fatal("not taken for an aggregate")
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			var want []UserRecord
			for i := range v.pks {
				want = append(want, UserRecord{PartitionKey: v.pks[i], ExplicitHashKey: v.ehks[i], Data: []byte(v.data[i])})
			}
			if !equalRecords(got, want) {
				t.Fatalf("decoded\n%v\nwant\n%v", got, want)
			}
			enc, err := Encode(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, b) {
				t.Errorf("Encode does not write the KPL's bytes:\n%x\n%x", enc, b)
			}
		})
	}
}

func equalRecords(a, b []UserRecord) bool {
	return slices.EqualFunc(a, b, func(x, y UserRecord) bool {
		return x.PartitionKey == y.PartitionKey && x.ExplicitHashKey == y.ExplicitHashKey && bytes.Equal(x.Data, y.Data)
	})
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	cases := map[string][]UserRecord{
		"single":        {{PartitionKey: "k", Data: []byte("only")}},
		"empty_data":    {{PartitionKey: "k", Data: nil}, {PartitionKey: "k", Data: []byte{}}},
		"binary":        {{PartitionKey: "p", Data: []byte{0, 0xF3, 0x89, 0x9A, 0xC2, 0xff}}},
		"unicode_key":   {{PartitionKey: strings.Repeat("é", 256), Data: []byte("x")}},
		"mixed_ehk":     {{PartitionKey: "a", ExplicitHashKey: "0", Data: []byte("1")}, {PartitionKey: "b", Data: []byte("2")}, {PartitionKey: "a", ExplicitHashKey: MaxHashKey.String(), Data: []byte("3")}},
		"shared_tables": {{PartitionKey: "a", Data: []byte("1")}, {PartitionKey: "b", Data: []byte("2")}, {PartitionKey: "a", Data: []byte("3")}},
	}
	for name, recs := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Encode(recs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !equalRecords(got, recs) {
				t.Fatalf("got %v, want %v", got, recs)
			}
			for _, r := range got {
				if r.Data == nil {
					t.Errorf("nil Data for an empty record")
				}
			}
		})
	}
	// Shared keys take one table entry each.
	b, _ := Encode(cases["shared_tables"])
	if n := bytes.Count(b, []byte("\x0a\x01a")); n != 1 {
		t.Errorf("partition key a written %d times", n)
	}
}

// seal wraps a protobuf message as an aggregated record with a valid
// digest.
func seal(msg []byte) []byte {
	sum := md5.Sum(msg)
	return append(append(append([]byte(nil), Magic[:]...), msg...), sum[:]...)
}

// pb builds protobuf messages by hand.
type pb []byte

func (b pb) str(num protowire.Number, s string) pb {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}
func (b pb) bytes(num protowire.Number, v []byte) pb {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}
func (b pb) varint(num protowire.Number, v uint64) pb {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}
func (b pb) raw(v ...byte) pb { return append(b, v...) }

// record is a Record with a partition key index and data.
func record(pk uint64, data string) pb { return pb(nil).varint(1, pk).bytes(3, []byte(data)) }

func TestNotAggregated(t *testing.T) {
	valid, _ := Encode([]UserRecord{{PartitionKey: "k", Data: []byte("v")}})
	otherMagic := bytes.Clone(valid)
	otherMagic[3] ^= 1
	cases := map[string][]byte{
		"nil":             nil,
		"short":           {0xF3, 0x89, 0x9A},
		"magic_only":      Magic[:],
		"plain":           []byte("a plain record that is long enough to hold a digest"),
		"other_magic":     otherMagic,
		"empty_message":   seal(nil),                                     // magic + 16 bytes: the KCL passes it through
		"magic_digest_15": append(Magic[:], make([]byte, DigestSize)...), // same length
	}
	for name, b := range cases {
		if IsAggregated(b) {
			t.Errorf("%s: taken for an aggregate", name)
		}
		if recs, err := Decode(b); !errors.Is(err, ErrNotAggregated) || recs != nil {
			t.Errorf("%s: Decode = %v, %v; want ErrNotAggregated", name, recs, err)
		}
	}
}

// An aggregate with tables but no records holds no user records; it is
// not an error.
func TestEmptyAggregate(t *testing.T) {
	recs, err := Decode(seal(pb(nil).str(1, "k").str(2, "5")))
	if err != nil || len(recs) != 0 {
		t.Fatalf("got %v, %v; want no records, no error", recs, err)
	}
}

func TestChecksum(t *testing.T) {
	valid, _ := Encode([]UserRecord{{PartitionKey: "k", Data: []byte("value")}})
	for i := len(Magic); i < len(valid); i++ {
		b := bytes.Clone(valid)
		b[i] ^= 0x10
		if recs, err := Decode(b); !errors.Is(err, ErrChecksum) || recs != nil {
			t.Fatalf("byte %d flipped: Decode = %v, %v; want ErrChecksum", i, recs, err)
		}
	}
}

func TestMalformed(t *testing.T) {
	huge := pb(nil).raw(0x1a).raw(protowire.AppendVarint(nil, 1<<62)...).raw(1, 2, 3)
	cases := []struct {
		name, want string
		msg        pb
	}{
		{"truncated_record", "field 3", pb(nil).str(1, "k").bytes(3, record(0, "data"))[:12]},
		{"truncated_varint", "field tag", pb(nil).str(1, "k").raw(0x80)},
		{"huge_length", "field 3", huge},
		{"huge_pk_index", "partition key index 18446744073709551615", pb(nil).str(1, "k").bytes(3, record(^uint64(0), "x"))},
		{"pk_index_outside", "partition key index 1 is outside the table of 1", pb(nil).str(1, "k").bytes(3, record(1, "x"))},
		{"no_pk_table", "outside the table of 0", pb(nil).bytes(3, record(0, "x"))},
		{"ehk_index_outside", "explicit hash key index 2", pb(nil).str(1, "k").str(2, "7").bytes(3, record(0, "x").varint(2, 2))},
		{"ehk_not_decimal", "not a decimal", pb(nil).str(1, "k").str(2, "12a").bytes(3, record(0, "x").varint(2, 0))},
		{"ehk_too_big", "not below 2^128", pb(nil).str(1, "k").str(2, "340282366920938463463374607431768211456").bytes(3, record(0, "x").varint(2, 0))},
		{"ehk_empty", "empty hash key", pb(nil).str(1, "k").str(2, "").bytes(3, record(0, "x").varint(2, 0))},
		{"no_pk_index", "partition_key_index is missing", pb(nil).str(1, "k").bytes(3, pb(nil).bytes(3, []byte("x")))},
		{"no_data", "data is missing", pb(nil).str(1, "k").bytes(3, pb(nil).varint(1, 0))},
		{"table_as_varint", "field 1 has wire type 0", pb(nil).varint(1, 3)},
		{"records_as_varint", "field 3 has wire type 0", pb(nil).str(1, "k").varint(3, 3)},
		{"index_as_bytes", "field 1 has wire type 2", pb(nil).str(1, "k").bytes(3, pb(nil).str(1, "0").bytes(3, nil))},
		{"data_as_varint", "field 3 has wire type 0", pb(nil).str(1, "k").bytes(3, pb(nil).varint(1, 0).varint(3, 1))},
		{"tag_without_key", "tag: the required key is missing", pb(nil).str(1, "k").bytes(3, record(0, "x").bytes(4, pb(nil).str(2, "v")))},
		{"field_zero", "field tag", pb(nil).raw(0x00, 0x01)},
		{"bad_unknown_field", "unknown field 9", pb(nil).str(1, "k").raw(0x4a, 0x05, 'a')},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := Decode(seal(tc.msg))
			if !errors.Is(err, ErrMalformed) || recs != nil {
				t.Fatalf("Decode = %v, %v; want ErrMalformed", recs, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// Every cut of a valid message either fails as malformed or, at a field
// boundary, yields a prefix of its records: never other records, never a
// panic.
func TestTruncatedEverywhere(t *testing.T) {
	recs := []UserRecord{{PartitionKey: "a", ExplicitHashKey: "12345", Data: []byte("one")}, {PartitionKey: "b", Data: []byte("two")}, {PartitionKey: "a", Data: []byte("three")}}
	full, _ := Encode(recs)
	msg := full[len(Magic) : len(full)-DigestSize]
	prefixes := 0
	for cut := 1; cut < len(msg); cut++ {
		got, err := Decode(seal(msg[:cut]))
		switch {
		case err == nil:
			if !equalRecords(got, recs[:len(got)]) {
				t.Fatalf("cut at %d: %v is not a prefix of %v", cut, got, recs)
			}
			prefixes++
		case !errors.Is(err, ErrMalformed):
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	if prefixes < 3 {
		t.Errorf("only %d cuts decoded: the boundaries were not reached", prefixes)
	}
}

func TestDecodeTolerates(t *testing.T) {
	cases := []struct {
		name string
		msg  pb
		want []UserRecord
	}{
		{"tables_after_records", pb(nil).bytes(3, record(1, "x").varint(2, 0)).str(2, "99").str(1, "k0").str(1, "k1"),
			[]UserRecord{{PartitionKey: "k1", ExplicitHashKey: "99", Data: []byte("x")}}},
		{"unknown_fields", pb(nil).varint(15, 7).str(1, "k").bytes(3, record(0, "x").varint(9, 1).raw(0x5b, 0x08, 0x01, 0x5c)).raw(0x2d, 1, 2, 3, 4),
			[]UserRecord{{PartitionKey: "k", Data: []byte("x")}}},
		{"tags", pb(nil).str(1, "k").bytes(3, record(0, "x").bytes(4, pb(nil).str(1, "key")).bytes(4, pb(nil).str(1, "k2").str(2, "v"))),
			[]UserRecord{{PartitionKey: "k", Data: []byte("x")}}},
		{"unused_bad_ehk", pb(nil).str(1, "k").str(2, "not a key").bytes(3, record(0, "x")),
			[]UserRecord{{PartitionKey: "k", Data: []byte("x")}}},
		{"leading_zeros_ehk", pb(nil).str(1, "k").str(2, "007").bytes(3, record(0, "x").varint(2, 0)),
			[]UserRecord{{PartitionKey: "k", ExplicitHashKey: "007", Data: []byte("x")}}},
		{"repeated_index_last_wins", pb(nil).str(1, "k0").str(1, "k1").bytes(3, record(0, "x").varint(1, 1)),
			[]UserRecord{{PartitionKey: "k1", Data: []byte("x")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(seal(tc.msg))
			if err != nil {
				t.Fatal(err)
			}
			if !equalRecords(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// A large count of small records decodes in full; the count is bounded by
// the bytes, never by a number the message claims.
func TestManyRecords(t *testing.T) {
	const n = 100_000
	recs := make([]UserRecord, n)
	for i := range recs {
		recs[i] = UserRecord{PartitionKey: "k", Data: []byte{byte(i)}}
	}
	b, err := Encode(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil || len(got) != n || got[n-1].Data[0] != byte((n-1)%256) {
		t.Fatalf("got %d records, %v", len(got), err)
	}
}

func TestEncodeRejects(t *testing.T) {
	cases := map[string][]UserRecord{
		"none":          nil,
		"empty_pk":      {{PartitionKey: "", Data: []byte("x")}},
		"long_pk":       {{PartitionKey: strings.Repeat("k", 257), Data: []byte("x")}},
		"bad_ehk":       {{PartitionKey: "k", ExplicitHashKey: "-1", Data: []byte("x")}},
		"ehk_overflows": {{PartitionKey: "k", ExplicitHashKey: "340282366920938463463374607431768211456", Data: []byte("x")}},
	}
	for name, recs := range cases {
		if b, err := Encode(recs); err == nil {
			t.Errorf("%s: Encode = %x, want an error", name, b)
		}
	}
}

func TestHashKeys(t *testing.T) {
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	for _, s := range []string{"0", "1", "9", "18446744073709551615", "18446744073709551616", "170141183460469231731687303715884105728",
		"340282366920938463463374607431768211455"} {
		h, err := ParseHashKey(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if h.String() != s {
			t.Errorf("%s parsed and printed as %s", s, h)
		}
		b, _ := new(big.Int).SetString(s, 10)
		if want := fmt.Sprintf("%032x", b); fmt.Sprintf("%016x%016x", h.Hi, h.Lo) != want {
			t.Errorf("%s = %x %x, want %s", s, h.Hi, h.Lo, want)
		}
	}
	if h, _ := ParseHashKey("000042"); h != (HashKey{0, 42}) {
		t.Errorf("leading zeros: %v", h)
	}
	for _, s := range []string{"", "-1", "+1", "1.5", "0x10", " 1", two128.String(), strings.Repeat("9", 40)} {
		if h, err := ParseHashKey(s); err == nil {
			t.Errorf("ParseHashKey(%q) = %v, want an error", s, h)
		}
	}
	// The MD5 of "a" (0cc175b9c0f1b6a831c399e269772661) as a big-endian number.
	if h := PartitionKeyHash("a"); h != (HashKey{0x0cc175b9c0f1b6a8, 0x31c399e269772661}) {
		t.Errorf("PartitionKeyHash(a) = %x %x", h.Hi, h.Lo)
	}
	r, err := ParseHashRange("100", "200")
	if err != nil {
		t.Fatal(err)
	}
	for v, in := range map[uint64]bool{99: false, 100: true, 150: true, 200: true, 201: false} {
		if r.Contains(HashKey{0, v}) != in {
			t.Errorf("%v contains %d: %v", r, v, !in)
		}
	}
	if _, err := ParseHashRange("200", "100"); err == nil {
		t.Error("an inverted range parsed")
	}
	if _, err := ParseHashRange("", "100"); err == nil {
		t.Error("an empty start parsed")
	}
	if full, _ := ParseHashRange("0", MaxHashKey.String()); !full.IsFull() || r.IsFull() {
		t.Error("IsFull")
	}
}

func TestRoute(t *testing.T) {
	pk, h, err := Route([]UserRecord{{PartitionKey: "x", ExplicitHashKey: "77"}, {PartitionKey: "y"}})
	if err != nil || pk != "a" || h != (HashKey{0, 77}) {
		t.Errorf("Route = %q %v %v", pk, h, err)
	}
	if _, h, _ := Route([]UserRecord{{PartitionKey: "a"}}); h != PartitionKeyHash("a") {
		t.Errorf("Route without an explicit hash key = %v", h)
	}
	if _, _, err := Route(nil); err == nil {
		t.Error("Route(nil) did not fail")
	}
}
