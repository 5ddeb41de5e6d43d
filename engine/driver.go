package engine

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
)

// ConsumerOptions configure a Consumer.
type ConsumerOptions struct {
	// Config is the engine configuration (required: Owner, Streams).
	Config Config
	// Store is the lease table. Nil means a new MemStore: correct for one
	// process only (see MemStore).
	Store LeaseStore
	// Stream reads the shards (required).
	Stream Stream
	// Processor makes a record processor per shard (required).
	Processor ProcessorFactory
	// Clock is the clock the driver reads and sets timers on. Nil means
	// the real clock; tests pass clock.NewMock().
	Clock clock.Clock
	// MaxStoreCalls and MaxStreamCalls bound the calls in flight to the
	// lease table and to the stream. They are separate pools, so slow
	// GetRecords calls never delay a renewal. Defaults: 8 and 32.
	MaxStoreCalls  int
	MaxStreamCalls int
	// CallTimeout is the deadline of each call. Default: RenewInterval.
	CallTimeout time.Duration
	// ShutdownTimeout bounds the graceful shutdown after Run's context is
	// cancelled. Default: LeaseDuration.
	ShutdownTimeout time.Duration
	// Logger receives the driver's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// Consumer runs one worker: the decision core driven by a clock, with calls
// to the store and the stream made concurrently and record processors run
// on their own goroutines.
type Consumer struct {
	opts   ConsumerOptions
	worker *Worker
	clk    clock.Clock
	log    *slog.Logger
	start  time.Time

	results     chan Input
	checkpoints chan checkpointRequest
	storeSem    chan struct{}
	streamSem   chan struct{}
	runners     map[string]*runner
	waiters     map[uint64]chan error
	nextToken   uint64
	done        chan struct{}
}

// NewConsumer checks opts and returns a Consumer ready to Run. An invalid
// configuration is rejected with an error naming every broken rule.
func NewConsumer(opts ConsumerOptions) (*Consumer, error) {
	var errs []error
	if opts.Stream == nil {
		errs = append(errs, errors.New("ConsumerOptions.Stream is required"))
	}
	if opts.Processor == nil {
		errs = append(errs, errors.New("ConsumerOptions.Processor is required"))
	}
	if opts.MaxStoreCalls < 0 || opts.MaxStreamCalls < 0 || opts.CallTimeout < 0 || opts.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("ConsumerOptions limits and timeouts must not be negative"))
	}
	if opts.Config.Seed == 0 {
		// Every process needs its own seed (see Config.Seed): the driver,
		// not the decision core, is where randomness may come from.
		var b [8]byte
		_, _ = crand.Read(b[:])
		opts.Config.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	w, err := NewWorker(opts.Config)
	if err != nil {
		errs = append(errs, err)
	}
	if _, ok := opts.Stream.(FanOutStream); opts.Stream != nil && opts.Config.Consumer == FanOut && !ok {
		errs = append(errs, fmt.Errorf("Consumer FanOut needs a Stream that implements engine.FanOutStream; %T does not", opts.Stream))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new consumer: %w", errors.Join(errs...))
	}
	cfg := w.Config()
	if opts.Store == nil {
		opts.Store = NewMemStore()
	}
	if opts.Clock == nil {
		opts.Clock = clock.New()
	}
	if opts.MaxStoreCalls == 0 {
		opts.MaxStoreCalls = 8
	}
	if opts.MaxStreamCalls == 0 {
		opts.MaxStreamCalls = 32
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = cfg.RenewInterval
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = cfg.LeaseDuration
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Consumer{
		opts:        opts,
		worker:      w,
		clk:         opts.Clock,
		log:         opts.Logger.With("owner", cfg.Owner),
		results:     make(chan Input, 256),
		checkpoints: make(chan checkpointRequest),
		storeSem:    make(chan struct{}, opts.MaxStoreCalls),
		streamSem:   make(chan struct{}, opts.MaxStreamCalls),
		runners:     make(map[string]*runner),
		waiters:     make(map[uint64]chan error),
		done:        make(chan struct{}),
	}, nil
}

// Run runs the worker until ctx is cancelled, then shuts down gracefully:
// in-flight batches finish, processors are asked to checkpoint, and every
// lease is released so other workers take them at once. It returns nil
// after a clean shutdown, or an error if the shutdown timed out. Run may be
// called once.
func (c *Consumer) Run(ctx context.Context) error {
	defer close(c.done)
	c.start = c.clk.Now()
	// callCtx outlives ctx by the shutdown timeout, so that releases can
	// still be written after ctx is cancelled.
	callCtx, cancelCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCalls()
	procCtx, cancelProcs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelProcs()

	timer := c.clk.Timer(0)
	defer timer.Stop()
	var deadline <-chan time.Time
	shutdown := false
	in := Input{Kind: InputTick}
	for {
		rd := c.worker.Step(c.now(), in)
		c.carryOut(callCtx, procCtx, rd)
		c.publishActingUntil()
		if rd.Stopped {
			c.log.Info("worker stopped; leases released")
			c.stopRunners()
			return nil
		}
		wait := rd.WakeAt - c.now().Mono
		if wait < 0 {
			wait = 0
		}
		timer.Reset(wait)
		select {
		case in = <-c.results:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case req := <-c.checkpoints:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			c.nextToken++
			c.waiters[c.nextToken] = req.reply
			in = Input{Kind: InputCheckpoint, Key: req.key, Checkpoint: req.cp, Token: c.nextToken}
		case <-timer.C:
			in = Input{Kind: InputTick}
		case <-ctx.Done():
			if !shutdown {
				shutdown = true
				c.log.Info("shutting down: draining, checkpointing and releasing leases")
				deadline = c.clk.After(c.opts.ShutdownTimeout)
				in = Input{Kind: InputShutdown}
				ctx = context.Background() // stop selecting on it
			}
		case <-deadline:
			c.stopRunners()
			return fmt.Errorf("graceful shutdown did not finish within %v: leases not yet released will expire", c.opts.ShutdownTimeout)
		}
	}
}

func (c *Consumer) now() Now {
	t := c.clk.Now()
	return Now{Mono: t.Sub(c.start), Wall: t}
}

// publishActingUntil tells every runner until when its lease may be acted
// on, as of the Step just taken.
func (c *Consumer) publishActingUntil() {
	for key, r := range c.runners { // order does not matter: each write is independent
		r.until.Store(int64(c.worker.ActingUntil(key)))
	}
}

// carryOut executes the effects of one Ready.
func (c *Consumer) carryOut(callCtx, procCtx context.Context, rd Ready) {
	for _, call := range rd.Calls {
		c.dispatch(callCtx, call)
	}
	for _, n := range rd.Notices {
		c.deliver(procCtx, n)
	}
}

// dispatch makes call on its own goroutine, within the bound of its pool,
// and feeds the result back to the loop.
func (c *Consumer) dispatch(ctx context.Context, call Call) {
	sem := c.streamSem
	if call.Op.IsStore() {
		sem = c.storeSem
	}
	timeout := c.opts.CallTimeout
	switch call.Op {
	case OpNextEvent, OpUnsubscribe:
		// They wait on a subscription the stream already holds and make
		// no request of their own: a slot each would let the held shards'
		// waits starve every other stream call.
		sem = nil
		timeout += call.Wait
	}
	go func() {
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				c.feed(Input{Kind: InputResult, Result: Result{ID: call.ID, Err: ctx.Err()}})
				return
			}
			defer func() { <-sem }()
		}
		cctx, cancel := c.clk.WithTimeout(ctx, timeout)
		defer cancel()
		r := Execute(cctx, c.opts.Store, c.opts.Stream, call)
		r.ID = call.ID
		c.logCallError(call, r.Err)
		c.feed(Input{Kind: InputResult, Result: r})
	}()
}

// feed hands an input to the loop, unless Run has returned.
func (c *Consumer) feed(in Input) {
	select {
	case c.results <- in:
	case <-c.done:
	}
}

// logCallError logs a failed call at a level that fits: a missing table or
// stream is an error a person must fix; throttling and lost conditions are
// routine.
func (c *Consumer) logCallError(call Call, err error) {
	switch {
	case err == nil, errors.Is(err, ErrConditionFailed):
	case errors.Is(err, ErrNotFound) && (call.Op == OpListLeases || call.Op == OpListShards):
		c.log.Error("call failed: not found", "call", call.Op.String(), "stream", call.Stream, "err", err)
	case errors.Is(err, ErrThrottled), errors.Is(err, ErrNotFound), errors.Is(err, ErrExpiredIterator),
		errors.Is(err, ErrResourceInUse), errors.Is(err, ErrSubscriptionEnded):
		c.log.Debug("call failed", "call", call.Op.String(), "key", call.Key, "stream", call.Stream, "err", err)
	default:
		c.log.Warn("call failed", "call", call.Op.String(), "key", call.Key, "stream", call.Stream, "err", err)
	}
}

// startRunner runs a lease's processor on its own goroutine. The driver
// files (those that take the injected clock) are the only part of the
// engine that starts goroutines; the decision core never does.
func (c *Consumer) startRunner(ctx context.Context, r *runner) { go r.run(ctx) }
