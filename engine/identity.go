package engine

import (
	"strconv"
	"strings"
	"time"
)

// StreamInfo describes a stream as DescribeStreamSummary does: what tells
// one stream from another of the same name created at another time.
type StreamInfo struct {
	Name    string
	ARN     string
	Created time.Time
	// Retention is how long the stream keeps records (0: unknown).
	Retention time.Duration
}

// Identity names this incarnation of the stream: its ARN and creation
// time, "arn@unix-milliseconds". A stream deleted and re-created under the same
// name has another identity. Rows the engine creates carry it
// (Lease.StreamID), and so does the table's stream marker.
func (s StreamInfo) Identity() string {
	return s.ARN + "@" + strconv.FormatInt(s.Created.UnixMilli(), 10)
}

// DescribeIdentity renders an identity for people: the ARN and the
// creation time.
func DescribeIdentity(id string) string {
	arn, ms, ok := strings.Cut(id, "@")
	if !ok {
		return id
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return id
	}
	return arn + " created " + time.UnixMilli(n).UTC().Format(time.RFC3339Nano)
}

// MarkerPrefix starts the keys of the table's own rows, which are not
// leases: the stream markers. No lease key starts with it.
const MarkerPrefix = "__shardlease_stream"

// MarkerKey returns the key of the marker row that names the stream whose
// rows are keyed like ref's: MarkerPrefix for rows keyed by shard id alone
// (the single stream, or LegacyStream), MarkerPrefix+":"+stream for the
// "stream:shardId" rows of a multi-stream table.
//
// A marker row is a Lease with that key, no owner, checkpoint SHARD_END
// (so KCL tooling, which reads it as a lease, takes it for a finished
// shard) and StreamID the stream's identity. The first worker writes it
// with a conditional create, after checking the table's rows, and before
// any other write; every worker checks it at start.
func (f KeyFormat) MarkerKey(stream string) string {
	if !f.MultiStream || stream == f.LegacyStream {
		return MarkerPrefix
	}
	return MarkerPrefix + ":" + stream
}

// IsMarker reports whether key names a stream marker row.
func IsMarker(key string) bool { return strings.HasPrefix(key, MarkerPrefix) }

// ReservedPrefix starts the keys of every row of the table that is not a
// shard's lease: stream markers, the assigner row, workers' hellos. No
// lease key starts with it; KCL reads such rows as finished leases.
const ReservedPrefix = "__shardlease"

// IsReserved reports whether key names one of the table's own rows.
func IsReserved(key string) bool { return strings.HasPrefix(key, ReservedPrefix) }

// markerRow returns the marker row for a stream of identity id.
func markerRow(key, id string) Lease {
	return Lease{Key: key, Counter: 1, Checkpoint: SentinelCheckpoint(ShardEnd), StreamID: id}
}

// identity returns the identity of stream as this worker verified it at
// start ("" before).
func (w *Worker) identity(stream string) string { return w.start.ids[stream] }

// foreign reports whether row names another stream incarnation than the
// one its key belongs to: a row the engine must never take, end or delete.
func (w *Worker) foreign(o *observation) bool {
	return o.row.StreamID != "" && o.row.StreamID != w.identity(o.ref.Stream)
}

// provenOurs reports whether the row of shard ref is provably a row of a
// shard of the worker's own stream: it carries the stream's identity, or
// the latest listing shows the shard, or shows a child of it. Only such
// rows may be ended because their shard left the listing, or deleted.
func (w *Worker) provenOurs(ref ShardRef, row Lease) bool {
	if row.StreamID != "" {
		return row.StreamID == w.identity(ref.Stream)
	}
	if w.bug("unproven-row-ended") {
		return true // a row without the stream's identity taken for the stream's
	}
	for _, s := range w.sync.shards[ref.Stream] {
		if s.ID == ref.Shard || s.Parent == ref.Shard || s.AdjacentParent == ref.Shard {
			return true
		}
	}
	return false
}

// provenGone reports whether the latest listing proves that the shard of a
// held lease is closed and past retention: the shard is provably the
// stream's (see provenOurs) and not listed. Kinesis lists every shard until
// the retention period has passed since it closed, so a shard of this
// stream that is not listed has nothing left to read. A GetShardIterator
// that says "not found" proves nothing by itself: the row may be another
// stream's.
func (w *Worker) provenGone(h *holding) bool {
	listed, known := w.shardListed(h.ref)
	return known && !listed && w.provenOurs(h.ref, h.row)
}
