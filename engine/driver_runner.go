package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// runner runs the Processor of one lease on its own goroutine, one notice
// at a time, so a slow or panicking processor never blocks the loop or
// touches lease state: its only way back is the inputs it feeds.
type runner struct {
	c     *Consumer
	key   string
	shard ShardRef
	proc  Processor

	mu    sync.Mutex
	queue []Notice
	wake  chan struct{}
	stop  chan struct{}

	// until is the worker's act-until time of the lease (Worker.ActingUntil,
	// a Duration on the consumer's monotonic clock), published by the loop
	// after every Step. Records are handed to the processor only before it.
	until atomic.Int64
}

// deliver routes a notice to its lease's runner, or answers a checkpoint
// waiter.
func (c *Consumer) deliver(ctx context.Context, n Notice) {
	if n.Kind == NoticeCheckpointDone {
		if ch, ok := c.waiters[n.Token]; ok {
			delete(c.waiters, n.Token)
			ch <- n.Err
		}
		return
	}
	r := c.runners[n.Key]
	if n.Kind == NoticeInitialize || r == nil {
		if r != nil {
			r.enqueue(Notice{Kind: NoticeLeaseLost, Key: n.Key, Shard: r.shard})
		}
		if n.Kind != NoticeInitialize {
			return // nothing runs for this lease
		}
		r = &runner{c: c, key: n.Key, shard: n.Shard, proc: c.opts.Processor(n.Shard),
			wake: make(chan struct{}, 1), stop: make(chan struct{})}
		c.runners[n.Key] = r
		c.startRunner(ctx, r)
	}
	r.until.Store(int64(c.worker.ActingUntil(n.Key)))
	r.enqueue(n)
	switch n.Kind {
	case NoticeLeaseLost:
		delete(c.runners, n.Key)
	}
}

func (c *Consumer) stopRunners() {
	for k, r := range c.runners {
		close(r.stop)
		delete(c.runners, k)
	}
}

func (r *runner) enqueue(n Notice) {
	r.mu.Lock()
	r.queue = append(r.queue, n)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *runner) run(ctx context.Context) {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.mu.Unlock()
			select {
			case <-r.wake:
				continue
			case <-r.stop:
				return
			case <-ctx.Done():
				return
			}
		}
		n := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		if final := r.handle(ctx, n); final {
			return
		}
	}
}

// handle calls the processor for one notice and reports whether the
// processor is finished.
func (r *runner) handle(ctx context.Context, n Notice) (final bool) {
	cp := checkpointer{c: r.c, key: r.key}
	if n.Kind == NoticeRecords {
		// The loop delivered these records while the lease was valid in
		// its own view, but the hand-off may come much later (a paused
		// process, a descheduled goroutine). Past the act-until time
		// another worker may own the shard: hold the records back and let
		// the core deliver them again if it still holds the lease.
		if now, until := r.c.now().Mono, time.Duration(r.until.Load()); now >= until && !r.c.bug("driver-handoff-unchecked") {
			r.c.log.Warn("records held back: the lease was no longer valid in this worker's view when the processor was free",
				"lease", r.key, "late", now-until)
			r.c.feed(Input{Kind: InputDone, Key: r.key, Batch: n.Batch, Failed: true})
			return false
		}
	}
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("processor panicked: %v", p)
			}
		}()
		switch n.Kind {
		case NoticeInitialize:
			err = r.proc.Initialize(ctx, InitInput{Shard: n.Shard, Key: n.Key, Start: n.Start})
		case NoticeRecords:
			err = r.proc.ProcessRecords(ctx, RecordsInput{Shard: n.Shard, Records: n.Records, MillisBehind: n.MillisBehind, Checkpointer: cp})
		case NoticeShardEnded:
			err = r.proc.ShardEnded(ctx, ShardEndedInput{Shard: n.Shard, Checkpointer: cp})
		case NoticeShutdownRequested:
			err = r.proc.ShutdownRequested(ctx, ShutdownInput{Shard: n.Shard, Checkpointer: cp, Reason: n.Reason, To: n.To})
		case NoticeLeaseLost:
			r.proc.LeaseLost(ctx, LeaseLostInput{Shard: n.Shard})
		}
	}()
	switch {
	case err == nil:
	case n.Kind == NoticeRecords:
		return r.failed(ctx, n, err)
	default:
		r.c.log.Warn("record processor failed", "lease", r.key, "notice", n.Kind.String(), "err", err)
	}
	switch n.Kind {
	case NoticeLeaseLost:
		return true
	case NoticeRecords:
		r.c.feed(Input{Kind: InputDone, Key: r.key, Batch: n.Batch})
		return false
	default:
		r.c.feed(Input{Kind: InputDone, Key: r.key, Batch: n.Batch})
		return n.Kind == NoticeShardEnded || n.Kind == NoticeShutdownRequested
	}
}

// failed handles a batch the processor failed: the failure policy, if
// any and due, decides whether it is delivered again or passed over.
func (r *runner) failed(ctx context.Context, n Notice, err error) (final bool) {
	first, last := n.Records[0].Sequence, n.Records[len(n.Records)-1].Sequence
	d, perr := r.c.opts.FailurePolicy.decide(ctx, n, err)
	if perr != nil {
		r.c.log.Error("failure policy failed; the batch will be delivered again", "lease", r.key, "err", perr)
	}
	in := Input{Kind: InputDone, Key: r.key, Batch: n.Batch, Failed: true}
	if d == RetryBatch {
		r.c.log.Warn("record processor failed; the batch will be delivered again", "lease", r.key,
			"consecutive_failures", n.Attempt, "first", first, "last", last, "records", len(n.Records), "err", err)
	} else {
		in.Skipped, in.Reason = true, d.String()
		r.c.log.Warn("record processor failed; the failure policy passed the batch over (not checkpointed)", "lease", r.key,
			"decision", d.String(), "consecutive_failures", n.Attempt, "first", first, "last", last, "records", len(n.Records), "err", err)
	}
	r.c.feed(in)
	return false
}

// checkpointer asks the loop for a checkpoint and waits for its outcome.
type checkpointer struct {
	c   *Consumer
	key string
}

// checkpointRequest carries a checkpoint from a processor to the loop.
type checkpointRequest struct {
	key   string
	cp    Checkpoint
	reply chan error
}

func (p checkpointer) Checkpoint(ctx context.Context, cp Checkpoint) error {
	reply := make(chan error, 1)
	select {
	case p.c.checkpoints <- checkpointRequest{key: p.key, cp: cp, reply: reply}:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.c.done:
		return p.stopped()
	}
	select {
	case err := <-reply:
		if err != nil {
			return fmt.Errorf("checkpoint %s at %s: %w", p.key, cp, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.c.done:
		return p.stopped()
	}
}

// stopped is the outcome of a checkpoint that the consumer's loop will
// never answer: Run has returned.
func (p checkpointer) stopped() error {
	if p.c.bug("driver-ack-on-stop") {
		return nil
	}
	return fmt.Errorf("checkpoint %s: %w: the consumer has stopped", p.key, ErrLeaseLost)
}
