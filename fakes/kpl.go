package fakes

import (
	"fmt"

	"github.com/shardlease/shardlease/engine/kpl"
)

// PutAggregated puts recs as one record aggregated as the Kinesis Producer
// Library does (kpl.Encode), routed as the KPL routes it (kpl.Route): to
// the open shard that owns the hash key of recs[0], with partition key "a".
// The user records share the returned sequence number; record i has
// sub-sequence number i. The KPL aggregates only records of one shard, so
// give it records whose hash keys that shard owns (the same partition key,
// say): a consumer drops an aggregate with any user record outside its
// shard's range, as the KCL does.
func (k *Kinesis) PutAggregated(stream string, recs []kpl.UserRecord) (shardID, sequence string, err error) {
	data, err := kpl.Encode(recs)
	if err != nil {
		return "", "", fmt.Errorf("PutAggregated %s: %w", stream, err)
	}
	pk, h, err := kpl.Route(recs)
	if err != nil {
		return "", "", fmt.Errorf("PutAggregated %s: %w", stream, err)
	}
	return k.PutRecordWithHash(stream, pk, h.Hi, h.Lo, data)
}
