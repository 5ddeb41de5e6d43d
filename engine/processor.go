package engine

import "context"

// Processor handles the records of one shard for as long as this worker
// holds its lease. A Consumer asks its ProcessorFactory for a new Processor
// each time it starts processing a shard, and calls its methods from one
// goroutine, one call at a time, in this order: Initialize, ProcessRecords
// any number of times, then one of ShardEnded, ShutdownRequested or
// LeaseLost.
//
// A method that returns an error (or panics) does not lose the lease: the
// same records are delivered again after a pause.
type Processor interface {
	// Initialize is called before any record, with where processing
	// resumes.
	Initialize(ctx context.Context, in InitInput) error
	// ProcessRecords handles one batch, in sequence order. It may
	// checkpoint any record it has received.
	ProcessRecords(ctx context.Context, in RecordsInput) error
	// ShardEnded is called after the last record of a closed shard. The
	// engine writes SHARD_END once it returns.
	ShardEnded(ctx context.Context, in ShardEndedInput) error
	// ShutdownRequested is called when the worker lets the lease go on
	// purpose: it shuts down gracefully, or it hands the lease over to
	// another worker (a balance move); in.Reason says which. Checkpoint
	// what has been processed. The lease is released once it returns.
	ShutdownRequested(ctx context.Context, in ShutdownInput) error
	// LeaseLost is called when the lease was lost (taken by another
	// worker, or expired). Checkpoints are refused from then on; the
	// records processed since the last checkpoint will be delivered again
	// to the next owner.
	LeaseLost(ctx context.Context, in LeaseLostInput)
}

// ProcessorFactory returns a new Processor for a shard.
type ProcessorFactory func(shard ShardRef) Processor

// Checkpointer writes checkpoints for one lease.
type Checkpointer interface {
	// Checkpoint records that every record up to and including cp has
	// been processed. It returns once the write has landed, or an error
	// wrapping ErrLeaseLost (the lease is no longer held) or
	// ErrCheckpointRejected (cp is lower than the stored checkpoint, or
	// beyond the records delivered).
	Checkpoint(ctx context.Context, cp Checkpoint) error
}

// InitInput is the argument of Processor.Initialize.
type InitInput struct {
	Shard ShardRef
	Key   string
	Start Checkpoint
}

// RecordsInput is the argument of Processor.ProcessRecords.
type RecordsInput struct {
	Shard        ShardRef
	Records      []Record
	MillisBehind int64
	Checkpointer Checkpointer
}

// ShardEndedInput is the argument of Processor.ShardEnded.
type ShardEndedInput struct {
	Shard        ShardRef
	Checkpointer Checkpointer
}

// ShutdownInput is the argument of Processor.ShutdownRequested.
type ShutdownInput struct {
	Shard        ShardRef
	Checkpointer Checkpointer
	// Reason says why the lease is let go; To names the worker it is
	// handed to (ShutdownHandoff).
	Reason ShutdownReason
	To     string
}

// ShutdownReason says why a processor is asked to let its lease go
// (Processor.ShutdownRequested).
type ShutdownReason uint8

const (
	// ShutdownWorker: the worker shuts down (Run's context was
	// cancelled); it releases every lease.
	ShutdownWorker ShutdownReason = iota + 1
	// ShutdownHandoff: the worker goes on running and hands this lease
	// over to another (the assigner moves it for balance); the receiver
	// starts from the checkpoint written now.
	ShutdownHandoff
)

func (r ShutdownReason) String() string {
	switch r {
	case ShutdownWorker:
		return "worker shutdown"
	case ShutdownHandoff:
		return "handoff"
	}
	return "unknown"
}

// LeaseLostInput is the argument of Processor.LeaseLost.
type LeaseLostInput struct {
	Shard ShardRef
}
