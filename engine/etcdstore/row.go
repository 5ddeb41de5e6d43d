package etcdstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/shardlease/shardlease/engine"
)

// Encoding is the version of the row encoding this package writes (the
// "v" of every row value) and the highest it reads. A row of a higher
// version was written by a newer shardlease: it is reported as malformed,
// never rewritten.
const Encoding = 1

// row is the JSON form of a lease row, encoding 1. Its names are the
// attribute names KCL and the DynamoDB table use (see engine.Lease), so a
// row reads the same in both stores; empty fields are left out.
type row struct {
	V               int      `json:"v"`
	Key             string   `json:"leaseKey"`
	Owner           string   `json:"leaseOwner,omitempty"`
	Counter         *int64   `json:"leaseCounter"`
	Checkpoint      *string  `json:"checkpoint"`
	SubSequence     int64    `json:"checkpointSubSequenceNumber,omitempty"`
	OwnerSwitches   int64    `json:"ownerSwitchesSinceCheckpoint,omitempty"`
	Parents         []string `json:"parentShardId,omitempty"`
	Children        []string `json:"childShardIds,omitempty"`
	StartingHashKey string   `json:"startingHashKey,omitempty"`
	EndingHashKey   string   `json:"endingHashKey,omitempty"`
	HandoffFrom     string   `json:"handoffFrom,omitempty"`
	Writer          string   `json:"leaseWriter,omitempty"`
	StreamID        string   `json:"streamId,omitempty"`
	Pending         string   `json:"pending,omitempty"`
	HandoffTo       string   `json:"handoffTo,omitempty"`
	ThroughputKBps  float64  `json:"throughputKBps,omitempty"`
	Session         string   `json:"leaseSession,omitempty"`
}

// EncodeLease returns the value that stores l (encoding 1): a JSON object
// with the KCL attribute names, "v":1 first, empty optional fields left
// out, the string sets sorted and without duplicates.
func EncodeLease(l engine.Lease) []byte {
	counter, cp := l.Counter, l.Checkpoint.Sequence
	r := row{V: Encoding, Key: l.Key, Owner: l.Owner, Counter: &counter, Checkpoint: &cp,
		SubSequence: l.Checkpoint.SubSequence, OwnerSwitches: l.OwnerSwitches,
		Parents: set(l.Parents), Children: set(l.Children), StartingHashKey: l.StartingHashKey, EndingHashKey: l.EndingHashKey,
		HandoffFrom: l.HandoffFrom, Writer: l.Writer, StreamID: l.StreamID, Pending: l.Pending, HandoffTo: l.HandoffTo,
		ThroughputKBps: l.ThroughputKBps, Session: l.Session}
	b, err := json.Marshal(&r)
	if err != nil {
		// Only a NaN or infinite throughput can fail; Validate and the
		// engine never produce one.
		panic(fmt.Sprintf("etcdstore: encode lease %s: %v", l.Key, err))
	}
	return b
}

func set(v []string) []string {
	if len(v) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(v)))
}

// DecodeLease reads the lease that the value b of row key stores. It fails,
// naming what is wrong, when b is not a JSON object of encoding 1 (a newer
// "v", an unknown field, a wrongly typed one), when leaseKey, leaseCounter
// or checkpoint is missing, when leaseKey is not key, or when the lease
// does not pass engine.Lease.Validate. The string sets come back sorted and
// without duplicates, nil when absent.
func DecodeLease(key string, b []byte) (engine.Lease, error) {
	var probe struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return engine.Lease{}, fmt.Errorf("not a JSON lease row: %w", err)
	}
	switch {
	case probe.V == nil:
		return engine.Lease{}, fmt.Errorf("no encoding version (\"v\")")
	case *probe.V > Encoding:
		return engine.Lease{}, fmt.Errorf("encoding version %d, newer than this shardlease reads (%d): written by a newer shardlease", *probe.V, Encoding)
	case *probe.V < 1:
		return engine.Lease{}, fmt.Errorf("encoding version %d is not one shardlease ever wrote", *probe.V)
	}
	var r row
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return engine.Lease{}, fmt.Errorf("lease row of encoding %d: %w", *probe.V, err)
	}
	switch {
	case r.Key == "":
		return engine.Lease{}, fmt.Errorf("leaseKey is missing")
	case r.Key != key:
		return engine.Lease{}, fmt.Errorf("leaseKey %q is not the row's key %q", r.Key, key)
	case r.Counter == nil:
		return engine.Lease{}, fmt.Errorf("leaseCounter is missing")
	case r.Checkpoint == nil:
		return engine.Lease{}, fmt.Errorf("checkpoint is missing")
	case r.ThroughputKBps < 0 || math.IsNaN(r.ThroughputKBps):
		return engine.Lease{}, fmt.Errorf("throughputKBps %v is not a non-negative number", r.ThroughputKBps)
	case slices.Contains(r.Parents, "") || slices.Contains(r.Children, ""):
		return engine.Lease{}, fmt.Errorf("an empty shard id in parentShardId or childShardIds")
	}
	l := engine.Lease{Key: r.Key, Owner: r.Owner, Counter: *r.Counter,
		Checkpoint:    engine.Checkpoint{Sequence: *r.Checkpoint, SubSequence: r.SubSequence},
		OwnerSwitches: r.OwnerSwitches, Parents: set(r.Parents), Children: set(r.Children),
		StartingHashKey: r.StartingHashKey, EndingHashKey: r.EndingHashKey, HandoffFrom: r.HandoffFrom,
		Writer: r.Writer, StreamID: r.StreamID, Pending: r.Pending, HandoffTo: r.HandoffTo, ThroughputKBps: r.ThroughputKBps,
		Session: r.Session}
	if err := l.Validate(); err != nil {
		return engine.Lease{}, err
	}
	return l, nil
}
