// Package kpl reads and writes the aggregated records of the Kinesis
// Producer Library (KPL): one Kinesis record that carries many user records.
//
// The format (github.com/awslabs/amazon-kinesis-producer,
// aggregation-format.md; the same in github.com/awslabs/kinesis-aggregation)
// is the 4 magic bytes F3 89 9A C2, a protobuf (proto2) message
//
//	message AggregatedRecord {
//	  repeated string partition_key_table     = 1;
//	  repeated string explicit_hash_key_table = 2;
//	  repeated Record records                 = 3;
//	}
//	message Record {
//	  required uint64 partition_key_index     = 1;
//	  optional uint64 explicit_hash_key_index = 2;
//	  required bytes  data                    = 3;
//	  repeated Tag    tags                    = 4;
//	}
//	message Tag {
//	  required string key   = 1;
//	  optional string value = 2;
//	}
//
// and the 16-byte MD5 digest of the protobuf bytes. The position of a user
// record in records is its sub-sequence number.
//
// Like the KCL (AggregatorUtil), Decode takes a record for an aggregate only
// if it starts with the magic bytes and has more than 16 bytes after them;
// any other record is not aggregated and is used as it is. Unlike the KCL,
// which hands a record that fails the digest or does not parse to the
// application as it is (and keeps the user records it decoded before an
// index out of range), Decode reports such a record as corrupt
// (ErrChecksum, ErrMalformed) and returns no user records of it: the
// caller decides.
//
// The package depends on nothing but the standard library and protowire, so
// that producers (tests, the simulator, cmd/live) and the engine share one
// implementation of the format.
package kpl

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Magic is the prefix of every aggregated record.
var Magic = [4]byte{0xF3, 0x89, 0x9A, 0xC2}

// DigestSize is the size of the MD5 digest that ends an aggregated record.
const DigestSize = md5.Size

// Errors of Decode. ErrChecksum and ErrMalformed mean the record has the
// magic prefix but cannot be de-aggregated.
var (
	ErrNotAggregated = errors.New("kpl: not an aggregated record")
	ErrChecksum      = errors.New("kpl: the MD5 digest does not match the protobuf message")
	ErrMalformed     = errors.New("kpl: malformed aggregated record")
)

// UserRecord is one record of an aggregate.
type UserRecord struct {
	PartitionKey string
	// ExplicitHashKey is the decimal 128-bit hash key that chose the shard
	// instead of the partition key's MD5, or "" if the record has none.
	ExplicitHashKey string
	Data            []byte
}

// HashKey returns the hash key that routes r: its explicit hash key if it
// has one, else the MD5 of its partition key.
func (r UserRecord) HashKey() (HashKey, error) {
	if r.ExplicitHashKey != "" {
		return ParseHashKey(r.ExplicitHashKey)
	}
	return PartitionKeyHash(r.PartitionKey), nil
}

// IsAggregated reports whether data is taken for an aggregated record: the
// magic prefix and more than DigestSize bytes after it (the KCL's test).
func IsAggregated(data []byte) bool {
	return len(data) > len(Magic)+DigestSize && bytes.Equal(data[:len(Magic)], Magic[:])
}

// Decode returns the user records of the aggregated record data, in order
// (the index of each is its sub-sequence number). Their Data alias data.
//
// It returns an error wrapping ErrNotAggregated if data is not taken for an
// aggregate (IsAggregated is false), ErrChecksum if the digest does not
// match, and ErrMalformed (with what is wrong) if the message does not
// parse as an AggregatedRecord: a truncated or invalid field, a field of the
// wrong wire type, a missing required field, a key index outside its
// table, or an explicit hash key that is not a decimal number below 2^128.
// An aggregate with no user records decodes to none, without error.
func Decode(data []byte) ([]UserRecord, error) {
	if !IsAggregated(data) {
		return nil, ErrNotAggregated
	}
	msg := data[len(Magic) : len(data)-DigestSize]
	if sum := md5.Sum(msg); !bytes.Equal(sum[:], data[len(data)-DigestSize:]) {
		return nil, ErrChecksum
	}
	return decodeMessage(msg)
}

// malformed returns an ErrMalformed error saying what is wrong.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// wireError describes a protowire error code (a negative length).
func wireError(n int) string { return protowire.ParseError(n).Error() }

// decodeMessage parses an AggregatedRecord. Fields may come in any order
// (the tables after the records, too), so the records are resolved against
// the tables once the whole message is read. Unknown fields are skipped, as
// protobuf parsers do.
func decodeMessage(b []byte) ([]UserRecord, error) {
	var pks, ehks []string
	var raw [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, malformed("field tag: %s", wireError(n))
		}
		b = b[n:]
		switch num {
		case 1, 2, 3:
			if typ != protowire.BytesType {
				return nil, malformed("field %d has wire type %d, want %d (length-delimited)", num, typ, protowire.BytesType)
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, malformed("field %d: %s", num, wireError(n))
			}
			b = b[n:]
			switch num {
			case 1:
				pks = append(pks, string(v))
			case 2:
				ehks = append(ehks, string(v))
			case 3:
				raw = append(raw, v)
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, malformed("unknown field %d: %s", num, wireError(n))
			}
			b = b[n:]
		}
	}
	// An explicit hash key is checked once per table entry, and only if a
	// record refers to it.
	checked := make([]bool, len(ehks))
	out := make([]UserRecord, 0, len(raw))
	for i, rb := range raw {
		r, err := decodeRecord(rb)
		if err != nil {
			return nil, fmt.Errorf("records[%d]: %w", i, err)
		}
		if r.pk >= uint64(len(pks)) {
			return nil, malformed("records[%d]: partition key index %d is outside the table of %d", i, r.pk, len(pks))
		}
		u := UserRecord{PartitionKey: pks[r.pk], Data: r.data}
		if r.hasEHK {
			if r.ehk >= uint64(len(ehks)) {
				return nil, malformed("records[%d]: explicit hash key index %d is outside the table of %d", i, r.ehk, len(ehks))
			}
			u.ExplicitHashKey = ehks[r.ehk]
			if !checked[r.ehk] {
				if _, err := ParseHashKey(u.ExplicitHashKey); err != nil {
					return nil, malformed("explicit_hash_key_table[%d]: %v", r.ehk, err)
				}
				checked[r.ehk] = true
			}
		}
		out = append(out, u)
	}
	return out, nil
}

type rawRecord struct {
	pk, ehk       uint64
	hasPK, hasEHK bool
	data          []byte
	hasData       bool
}

// decodeRecord parses one Record message.
func decodeRecord(b []byte) (rawRecord, error) {
	var r rawRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, malformed("field tag: %s", wireError(n))
		}
		b = b[n:]
		switch num {
		case 1, 2:
			if typ != protowire.VarintType {
				return r, malformed("field %d has wire type %d, want %d (varint)", num, typ, protowire.VarintType)
			}
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return r, malformed("field %d: %s", num, wireError(n))
			}
			b = b[n:]
			if num == 1 {
				r.pk, r.hasPK = v, true
			} else {
				r.ehk, r.hasEHK = v, true
			}
		case 3, 4:
			if typ != protowire.BytesType {
				return r, malformed("field %d has wire type %d, want %d (length-delimited)", num, typ, protowire.BytesType)
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return r, malformed("field %d: %s", num, wireError(n))
			}
			b = b[n:]
			if num == 3 {
				r.data, r.hasData = v, true
			} else if err := checkTag(v); err != nil {
				return r, err
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return r, malformed("unknown field %d: %s", num, wireError(n))
			}
			b = b[n:]
		}
	}
	switch {
	case !r.hasPK:
		return r, malformed("the required partition_key_index is missing")
	case !r.hasData:
		return r, malformed("the required data is missing")
	}
	if r.data == nil {
		r.data = []byte{}
	}
	return r, nil
}

// checkTag checks a Tag message: tags carry nothing the engine uses (the
// KPL and KCL do not implement them), but a Tag without its required key
// makes the whole aggregate invalid, as it does for a proto2 parser.
func checkTag(b []byte) error {
	hasKey := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return malformed("tag: field tag: %s", wireError(n))
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ != protowire.BytesType {
			return malformed("tag: field %d has wire type %d, want %d (length-delimited)", num, typ, protowire.BytesType)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return malformed("tag: field %d: %s", num, wireError(n))
		}
		b = b[n:]
		if num == 1 {
			hasKey = true
		}
	}
	if !hasKey {
		return malformed("tag: the required key is missing")
	}
	return nil
}
