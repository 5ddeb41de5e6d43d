package kpl

import (
	"crypto/md5"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Encode returns the aggregated record that carries recs, in order, in the
// KPL's format: what the KPL puts as one Kinesis record. Equal partition
// keys (and explicit hash keys) share one table entry, in the order of
// their first use.
//
// Every record needs a partition key of 1 to 256 characters (as Kinesis
// does) and an ExplicitHashKey that is "" or a decimal number below 2^128.
// Put the result with the explicit hash key of recs[0] (Route), so that it
// lands in the shard that owns that record; the caller groups records by
// shard, as the KPL does. Encode does not bound the size: a Kinesis record
// holds at most 1 MiB.
func Encode(recs []UserRecord) ([]byte, error) {
	if len(recs) == 0 {
		return nil, errors.New("kpl: an aggregate needs at least one user record")
	}
	var pks, ehks []string
	pkIndex := map[string]uint64{}
	ehkIndex := map[string]uint64{}
	type idx struct {
		pk, ehk uint64
		hasEHK  bool
	}
	index := make([]idx, len(recs))
	for i, r := range recs {
		if n := utf8.RuneCountInString(r.PartitionKey); n < 1 || n > 256 {
			return nil, fmt.Errorf("kpl: record %d: a partition key needs 1 to 256 characters, not %d", i, n)
		}
		if r.ExplicitHashKey != "" {
			if _, err := ParseHashKey(r.ExplicitHashKey); err != nil {
				return nil, fmt.Errorf("kpl: record %d: %w", i, err)
			}
		}
		j, ok := pkIndex[r.PartitionKey]
		if !ok {
			j = uint64(len(pks))
			pkIndex[r.PartitionKey] = j
			pks = append(pks, r.PartitionKey)
		}
		index[i].pk = j
		if r.ExplicitHashKey != "" {
			j, ok := ehkIndex[r.ExplicitHashKey]
			if !ok {
				j = uint64(len(ehks))
				ehkIndex[r.ExplicitHashKey] = j
				ehks = append(ehks, r.ExplicitHashKey)
			}
			index[i].ehk, index[i].hasEHK = j, true
		}
	}
	b := append(make([]byte, 0, 64+len(recs)*16), Magic[:]...)
	for _, s := range pks {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	for _, s := range ehks {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	var rec []byte
	for i, r := range recs {
		rec = rec[:0]
		rec = protowire.AppendTag(rec, 1, protowire.VarintType)
		rec = protowire.AppendVarint(rec, index[i].pk)
		if index[i].hasEHK {
			rec = protowire.AppendTag(rec, 2, protowire.VarintType)
			rec = protowire.AppendVarint(rec, index[i].ehk)
		}
		rec = protowire.AppendTag(rec, 3, protowire.BytesType)
		rec = protowire.AppendBytes(rec, r.Data)
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, rec)
	}
	sum := md5.Sum(b[len(Magic):])
	return append(b, sum[:]...), nil
}

// Route returns the partition key and explicit hash key to put an
// aggregate of recs with, as the KPL does: the partition key "a" and, as
// explicit hash key, the hash key of the first record (its explicit one,
// or its partition key's MD5). The partition key does not route the
// record; the hash key does.
func Route(recs []UserRecord) (partitionKey string, hashKey HashKey, err error) {
	if len(recs) == 0 {
		return "", HashKey{}, errors.New("kpl: no records to route")
	}
	h, err := recs[0].HashKey()
	if err != nil {
		return "", HashKey{}, fmt.Errorf("kpl: record 0: %w", err)
	}
	return "a", h, nil
}
