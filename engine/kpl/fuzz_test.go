package kpl

import (
	"bytes"
	"crypto/md5"
	"errors"
	"testing"
)

// FuzzDecode feeds Decode arbitrary records, both as they are and sealed
// with a valid magic prefix and digest (so that the parser, not only the
// digest check, is reached). Decode must never panic; it fails only with
// its three errors; and what it decodes encodes back to records that
// decode the same, each with a hash key.
func FuzzDecode(f *testing.F) {
	for _, v := range kplVectors {
		b := mustB64(f, v.b64)
		f.Add(b)
		f.Add(b[len(Magic) : len(b)-DigestSize])
	}
	f.Add([]byte{})
	f.Add(Magic[:])
	f.Add([]byte("\x0a\x01k\x1a\x05\x08\x00\x1a\x01x"))
	f.Add([]byte("\x0a\x01k\x12\x0112\x1a\x07\x08\x00\x10\x00\x1a\x01x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		sum := md5.Sum(data)
		check(t, append(append(append([]byte(nil), Magic[:]...), data...), sum[:]...))
	})
}

func check(t *testing.T, data []byte) {
	in := bytes.Clone(data)
	recs, err := Decode(data)
	if !bytes.Equal(in, data) {
		t.Fatal("Decode changed its input")
	}
	if err != nil {
		if recs != nil {
			t.Fatalf("records %v with error %v", recs, err)
		}
		if !errors.Is(err, ErrNotAggregated) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("unexpected error %v", err)
		}
		if errors.Is(err, ErrNotAggregated) == IsAggregated(data) {
			t.Fatalf("IsAggregated = %v but Decode said %v", IsAggregated(data), err)
		}
		return
	}
	for i, r := range recs {
		h, err := r.HashKey()
		if err != nil {
			t.Fatalf("record %d: hash key: %v", i, err)
		}
		if r.ExplicitHashKey != "" {
			if back, err := ParseHashKey(h.String()); err != nil || back != h {
				t.Fatalf("hash key %s does not print and parse back: %v %v", r.ExplicitHashKey, back, err)
			}
		}
	}
	if len(recs) == 0 {
		return
	}
	if !validForEncode(recs) {
		return
	}
	enc, err := Encode(recs)
	if err != nil {
		t.Fatalf("Encode of decoded records: %v", err)
	}
	again, err := Decode(enc)
	if err != nil || !equalRecords(again, recs) {
		t.Fatalf("re-encoded records decode to %v, %v; want %v", again, err, recs)
	}
}

// validForEncode reports whether Encode accepts recs: Decode takes any
// partition key, Kinesis (and Encode) only 1 to 256 characters.
func validForEncode(recs []UserRecord) bool {
	for _, r := range recs {
		if n := len([]rune(r.PartitionKey)); n < 1 || n > 256 {
			return false
		}
	}
	return true
}
