package engine

import (
	"fmt"
	"time"
)

// TraceKind is the kind of a TraceEvent.
type TraceKind uint8

// The events a worker reports to its Tracer. Together they say, for every
// shard, who acted on it and when, which is what the simulator's checkers
// and `live check` read.
const (
	// TraceLeaseCreated: this worker created the row Key with Checkpoint.
	TraceLeaseCreated TraceKind = iota + 1
	// TraceLeaseAcquired: a take of Key at Counter succeeded. Reason is
	// "unowned", "expired", "stolen" or "resumed"; Previous the former owner.
	TraceLeaseAcquired
	// TraceActing: the worker starts acting on Key (delivering records and
	// checkpointing) from Checkpoint.
	TraceActing
	// TraceLeaseRenewed: a renew of Key to Counter succeeded.
	TraceLeaseRenewed
	// TraceStoppedActing: the worker stopped acting on Key because its own
	// view of the lease reached the safety margin before expiry.
	TraceStoppedActing
	// TraceLeaseLost: the worker no longer holds Key (Reason says why).
	TraceLeaseLost
	// TraceLeaseReleased: the worker gave up Key on purpose (shutdown,
	// shard end).
	TraceLeaseReleased
	// TraceLeaseDeleted: the worker deleted the finished row Key.
	TraceLeaseDeleted
	// TraceDelivered: Count records of Key, sequence numbers First to
	// Last, were handed to the processor.
	TraceDelivered
	// TraceCheckpointRequested: the processor asked for Checkpoint.
	TraceCheckpointRequested
	// TraceCheckpointWritten: the checkpoint write landed; Counter is the
	// row version it wrote.
	TraceCheckpointWritten
	// TraceCheckpointRejected: the checkpoint was refused (Reason).
	TraceCheckpointRejected
	// TraceShardEnded: SHARD_END was written for Key.
	TraceShardEnded
	// TraceChildStarted: every parent of Key was seen at SHARD_END (or
	// gone) by a strongly consistent read, and processing of Key begins.
	TraceChildStarted
	// TraceMalformedRow: a row of the table could not be read (Reason).
	TraceMalformedRow
	// TraceResolved: a write of unknown outcome was resolved by a re-read;
	// Reason is "applied" or "not applied".
	TraceResolved
	// TraceCallSent: a write of Key was sent (Reason names the write:
	// take, renew, checkpoint, release, create, delete). Counter is the
	// version the write would produce.
	TraceCallSent
	// TraceStarted: the start-up checks passed (Reason names each
	// stream's identity); the worker starts taking leases.
	TraceStarted
	// TraceFailed: the worker stopped on an error it cannot recover from
	// (Reason): a failed start-up check, or its stream was re-created.
	TraceFailed
	// TraceForeignRow: the row Key names another stream incarnation
	// (Reason) than the one its key belongs to; the worker never takes,
	// ends or deletes it. Reported once per key.
	TraceForeignRow
	// TraceShardUnverified: the lease Key's shard is not listed by the
	// stream, and the listing does not prove the row is the stream's (no
	// stream identity on the row, no listed child): the row is left as it
	// is, neither read nor ended. Reported once per lease.
	TraceShardUnverified
	// TraceSyncAbandoned: a shard sync round was abandoned because its
	// scan was too old to decide from when its replies were processed
	// (Reason); a fresh round follows.
	TraceSyncAbandoned
	// TraceAggregateDropped: the KPL-aggregated record First of Key was
	// read and none of its user records (Count of them, 0 if it did not
	// decode) will be delivered. Reason starts with DropCorrupt (an MD5
	// digest that does not match, a message that does not parse) or
	// DropHashRange (user records outside the shard's hash key range,
	// which the KPL puts again), then says what is wrong.
	TraceAggregateDropped
	// TraceAggregateUndecoded: the record First of Key has the KPL magic
	// bytes but does not de-aggregate (Reason, as for a corrupt
	// TraceAggregateDropped); with Config.DeliverCorruptAggregates it is
	// delivered as one record, as it was read.
	TraceAggregateUndecoded
	// TraceBatchFailed: the processor failed the batch First..Last of Key;
	// Count is the number of failed deliveries of these records in a row
	// (it resets when a batch is processed or skipped). The records are
	// delivered again.
	TraceBatchFailed
	// TraceBatchSkipped: a failure policy passed the failed batch
	// First..Last of Key over after Count failed deliveries; Reason is the
	// decision ("skipped", "handed-off"). The worker goes on reading after
	// it; nothing is checkpointed for it.
	TraceBatchSkipped
	// TraceAssigned: the assigner wrote Key to Counter (Reason: "to W:
	// why" for an assignment, "handoff to W" for a handoff request,
	// "handoff cancelled"); Previous is the owner before.
	TraceAssigned
	// TraceHandingOver: the worker began handing Key over to another
	// (Reason "to W"): it lets its processor checkpoint and releases.
	TraceHandingOver
	// TraceModeFallback: the worker takes leases itself (AssignmentScan)
	// although configured for an assigner (Reason: the store has no
	// pending index).
	TraceModeFallback
	// TraceWallRead: the worker read the wall clock (Now.Wall) in this
	// step, for the purpose Reason (see wallclock.go). Lease decisions
	// never depend on it.
	TraceWallRead
	// TraceRenewalFallback: a worker of RenewalAuto renews per lease, not
	// by session, for the rest of its life: its start-up scan showed Key
	// held by a writer without a nonce (Reason).
	TraceRenewalFallback
)

var traceNames = [...]string{"", "lease-created", "lease-acquired", "acting", "lease-renewed",
	"stopped-acting", "lease-lost", "lease-released", "lease-deleted", "delivered",
	"checkpoint-requested", "checkpoint-written", "checkpoint-rejected", "shard-ended",
	"child-started", "malformed-row", "resolved", "write-sent", "started", "failed", "foreign-row",
	"shard-unverified", "sync-abandoned", "aggregate-dropped", "aggregate-undecoded", "batch-failed", "batch-skipped",
	"assigned", "handing-over", "mode-fallback", "wall-read", "renewal-fallback"}

func (k TraceKind) String() string {
	if int(k) < len(traceNames) && k != 0 {
		return traceNames[k]
	}
	return fmt.Sprintf("trace(%d)", uint8(k))
}

// TraceEvent is one event that matters to correctness.
type TraceEvent struct {
	Kind       TraceKind
	Mono       time.Duration // the worker's monotonic reading
	Owner      string        // the worker
	Key        string
	Shard      ShardRef
	Counter    int64
	Checkpoint Checkpoint
	First      string // TraceDelivered: first sequence number; TraceAggregate*: the record's
	Last       string // TraceDelivered: last sequence number
	// FirstSub and LastSub are the sub-sequence numbers of the first and
	// last records of a TraceDelivered batch (0 unless they are user
	// records of KPL aggregates).
	FirstSub int64
	LastSub  int64
	Count    int
	Reason   string
	Previous string // TraceLeaseAcquired: the former owner
}

func (e TraceEvent) String() string {
	s := fmt.Sprintf("%v %s %s %s", e.Mono, e.Owner, e.Kind, e.Key)
	switch e.Kind {
	case TraceDelivered:
		s += fmt.Sprintf(" %d records %s..%s", e.Count, Checkpoint{Sequence: e.First, SubSequence: e.FirstSub}, Checkpoint{Sequence: e.Last, SubSequence: e.LastSub})
	case TraceAggregateDropped, TraceAggregateUndecoded:
		s += fmt.Sprintf(" record %s (%d user records)", e.First, e.Count)
	case TraceBatchFailed, TraceBatchSkipped:
		s += fmt.Sprintf(" %s..%s after %d failed attempts", e.First, e.Last, e.Count)
	case TraceCheckpointRequested, TraceCheckpointWritten, TraceCheckpointRejected, TraceActing, TraceLeaseCreated:
		s += " " + e.Checkpoint.String()
	}
	if e.Counter != 0 {
		s += fmt.Sprintf(" counter=%d", e.Counter)
	}
	if e.Previous != "" {
		s += " from " + e.Previous
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	return s
}

// Tracer receives trace events. It is called synchronously from Step and
// must not call back into the worker. A nil Tracer costs nothing.
type Tracer func(TraceEvent)
