package engine

import (
	"context"
	"fmt"
)

// FailurePolicy decides what becomes of a batch that its processor keeps
// failing (a poison record). Without one (ConsumerOptions.FailurePolicy
// nil) a failed batch is delivered again, after a backoff, for as long as
// the lease is held: at-least-once, and visible: every failure is logged
// at WARN with its attempt number, traced (TraceBatchFailed, with the
// number of failed deliveries in a row) and counted by the metrics
// package.
//
// With a policy, once the MaxAttempts-th delivery in a row of the same
// records has failed, Decide is called, and again after every later
// failure of them. It runs on the shard's processor goroutine (nothing
// else of the shard runs meanwhile) and may take its time, for example to
// write the records to a dead-letter destination.
//
// A batch skipped (SkipBatch or HandedOff) is passed over as if it had
// been processed: the worker goes on reading after it. The engine writes no
// checkpoint of its own: the skipped records are covered by the next
// checkpoint the processor writes past them, and until then a new owner
// of the shard (after a failover or a restart) delivers them again.
// Skipping gives up at-least-once for those records only; the decision is
// traced (TraceBatchSkipped) and logged at WARN.
type FailurePolicy struct {
	// MaxAttempts is the number of failed deliveries in a row after which
	// Decide is asked (at least 1).
	MaxAttempts int
	// Decide returns what to do with the batch. A panic in Decide counts
	// as RetryBatch.
	Decide func(ctx context.Context, b FailedBatch) FailureDecision
}

// FailedBatch is a batch whose processing failed, as a FailurePolicy sees
// it. Records must not be changed; they stay valid after Decide returns.
type FailedBatch struct {
	Shard    ShardRef
	Key      string   // the lease key
	Records  []Record // in sequence order
	Attempts int      // failed deliveries of these records in a row, this one included
	Err      error    // the processor's error this time
}

// FailureDecision is a FailurePolicy's answer.
type FailureDecision uint8

const (
	// RetryBatch delivers the records again, after a backoff.
	RetryBatch FailureDecision = iota
	// SkipBatch passes the batch over.
	SkipBatch
	// HandedOff passes the batch over, saying that Decide has handed the
	// records elsewhere (a dead-letter queue, a table of failures):
	// the same as SkipBatch but for the trace, the logs and the metrics.
	HandedOff
)

func (d FailureDecision) String() string {
	switch d {
	case RetryBatch:
		return "retry"
	case SkipBatch:
		return "skipped"
	case HandedOff:
		return "handed-off"
	}
	return fmt.Sprintf("FailureDecision(%d)", uint8(d))
}

func (p *FailurePolicy) validate() error {
	if p == nil {
		return nil
	}
	if p.MaxAttempts < 1 || p.Decide == nil {
		return fmt.Errorf("ConsumerOptions.FailurePolicy needs MaxAttempts of at least 1 (got %d) and a Decide function", p.MaxAttempts)
	}
	return nil
}

// decide asks the policy about a failed delivery of n, if it is due, and
// returns the decision (RetryBatch when there is no policy or it is not
// due yet).
func (p *FailurePolicy) decide(ctx context.Context, n Notice, err error) (d FailureDecision, perr error) {
	if p == nil || n.Attempt < p.MaxAttempts {
		return RetryBatch, nil
	}
	defer func() {
		if r := recover(); r != nil {
			d, perr = RetryBatch, fmt.Errorf("failure policy panicked: %v", r)
		}
	}()
	d = p.Decide(ctx, FailedBatch{Shard: n.Shard, Key: n.Key, Records: n.Records, Attempts: n.Attempt, Err: err})
	if d > HandedOff {
		return RetryBatch, fmt.Errorf("failure policy returned an unknown decision %d", d)
	}
	return d, nil
}
