package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// counterOptions configure the example processor.
type counterOptions struct {
	// Every and Interval: checkpoint after Every records or Interval since
	// the last checkpoint, whichever comes first (checked at each batch).
	Every    int
	Interval time.Duration
	// BatchDelay simulates work per batch.
	BatchDelay time.Duration
	// FailEvery makes every FailEvery-th batch fail once (0: never), to
	// exercise re-delivery of failed batches.
	FailEvery int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends (nil: a timer).
	Sleep func(ctx context.Context, d time.Duration)
	// Total counts the records processed by every counter.
	Total *atomic.Int64
	Log   *slog.Logger
}

// counter is cmd/live's example record processor: it counts records and
// checkpoints every Every records or Interval, and at shutdown. It is
// what a real application replaces (see the README, "Using the engine").
type counter struct {
	o     counterOptions
	shard engine.ShardRef
	log   *slog.Logger

	count     int64
	sinceCP   int
	lastCP    time.Time
	last      engine.Checkpoint // last record processed
	batches   int
	failedAt  string // first sequence number of the batch failed on purpose
	eager     bool   // checkpoint the next batch at once (the lease starts at a sentinel)
	lost      bool
	lastError error
}

func newCounterFactory(o counterOptions) engine.ProcessorFactory {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Total == nil {
		o.Total = new(atomic.Int64)
	}
	return func(shard engine.ShardRef) engine.Processor {
		return &counter{o: o, shard: shard, log: o.Log.With("shard", shard.String())}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (c *counter) Initialize(ctx context.Context, in engine.InitInput) error {
	c.lastCP = c.o.Now()
	c.last = engine.Checkpoint{}
	// A lease that starts at LATEST or AT_TIMESTAMP has no position in
	// the table until its first checkpoint: if it changed hands before,
	// the next owner would resolve LATEST anew and skip what came in
	// between. Checkpoint the first batch at once to close that window.
	c.eager = in.Start.Sequence == engine.Latest || in.Start.Sequence == engine.AtTimestamp
	c.log.Info("processing shard", "lease", in.Key, "from", in.Start.String())
	return nil
}

func (c *counter) ProcessRecords(ctx context.Context, in engine.RecordsInput) error {
	if len(in.Records) == 0 {
		return nil
	}
	c.batches++
	first := in.Records[0].Sequence
	if c.o.FailEvery > 0 && c.batches%c.o.FailEvery == 0 && c.failedAt != first {
		c.failedAt = first
		return fmt.Errorf("example processor: batch %d failed on purpose (-fail-every %d)", c.batches, c.o.FailEvery)
	}
	if c.o.BatchDelay > 0 {
		c.o.Sleep(ctx, c.o.BatchDelay)
	}
	n := len(in.Records)
	c.count += int64(n)
	c.o.Total.Add(int64(n))
	c.sinceCP += n
	r := in.Records[n-1]
	c.last = engine.Checkpoint{Sequence: r.Sequence, SubSequence: r.SubSequence}
	switch {
	case c.eager:
		c.eager = false
		c.checkpoint(ctx, in.Checkpointer, "first batch after a LATEST or AT_TIMESTAMP start")
	case c.sinceCP >= c.o.Every || c.o.Now().Sub(c.lastCP) >= c.o.Interval:
		c.checkpoint(ctx, in.Checkpointer, "periodic")
	}
	return nil
}

// checkpoint writes the last processed record. A refused checkpoint is not
// an error of the batch: the records are already processed, and the next
// owner (or this one, after a failure) resumes from the stored checkpoint.
func (c *counter) checkpoint(ctx context.Context, cp engine.Checkpointer, why string) {
	if c.last.Sequence == "" || c.sinceCP == 0 || c.lost {
		return
	}
	err := cp.Checkpoint(ctx, c.last)
	switch {
	case err == nil:
		c.sinceCP = 0
		c.lastCP = c.o.Now()
		c.log.Debug("checkpointed", "at", c.last.String(), "why", why, "records", c.count)
	case errors.Is(err, engine.ErrLeaseLost):
		c.lost = true
		c.log.Info("checkpoint refused: lease no longer held; the next owner re-delivers what follows the last checkpoint", "at", c.last.String())
	default:
		c.lastError = err
		c.log.Warn("checkpoint failed", "at", c.last.String(), "err", err)
	}
}

func (c *counter) ShardEnded(ctx context.Context, in engine.ShardEndedInput) error {
	c.log.Info("shard ended; the engine writes SHARD_END", "records", c.count)
	return nil
}

func (c *counter) ShutdownRequested(ctx context.Context, in engine.ShutdownInput) error {
	c.checkpoint(ctx, in.Checkpointer, in.Reason.String())
	if in.Reason == engine.ShutdownHandoff {
		c.log.Info("shard handed over to another worker", "to", in.To, "records", c.count, "checkpoint", c.last.String())
	} else {
		c.log.Info("shard handed back at shutdown", "records", c.count, "checkpoint", c.last.String())
	}
	return nil
}

func (c *counter) LeaseLost(ctx context.Context, in engine.LeaseLostInput) {
	c.lost = true
	c.log.Debug("lease lost (the engine logs why)", "records", c.count)
}
