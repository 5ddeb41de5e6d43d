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
	// StartTimeout bounds the start-up checks (the table, the streams,
	// the stream marker; see Worker.Started) when they keep failing with
	// errors that may pass (a network outage); errors a person must fix
	// (a missing table or stream, rejected credentials, another stream's
	// table) end Run at once. 0: no bound, keep trying.
	StartTimeout time.Duration
	// SkipTableCheck skips the table check (TableChecker) at start, for
	// credentials without dynamodb:DescribeTable. The checks of the
	// streams and of the stream marker always run.
	SkipTableCheck bool
	// FailurePolicy decides what becomes of a batch its processor keeps
	// failing (see FailurePolicy). Nil: it is delivered again for as long
	// as the lease is held (at-least-once).
	FailurePolicy *FailurePolicy
	// Logger receives the driver's logs. Nil means slog.Default(). The
	// driver adds an "owner" attribute to every line: a logger given here
	// should not carry one already (a JSON line would hold the key twice).
	Logger *slog.Logger
}

// nonNil is s, or an empty list for nil (a log line says [], not null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ShutdownBound returns how long Run may take to return once its context
// is cancelled: ShutdownTimeout, or its default, the lease duration of
// Config (zero fields taken at their defaults). Give a worker more than
// that before it is killed (Kubernetes' terminationGracePeriodSeconds, a
// systemd TimeoutStopSec), or the leases it has not released by then
// expire instead of moving at once.
func (o ConsumerOptions) ShutdownBound() time.Duration {
	if o.ShutdownTimeout > 0 {
		return o.ShutdownTimeout
	}
	return o.Config.withDefaults().LeaseDuration
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
	watches     map[string]*watchRunner // see driver_watch.go
	waiters     map[uint64]chan error
	nextToken   uint64
	done        chan struct{}
	health      *health
	outages     *outages
	// planted is a planted driver bug (planted_on.go): "" in every build
	// without the shardlease_mutations tag, where bug is constant false.
	planted string
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
	if opts.MaxStoreCalls < 0 || opts.MaxStreamCalls < 0 || opts.CallTimeout < 0 || opts.ShutdownTimeout < 0 || opts.StartTimeout < 0 {
		errs = append(errs, errors.New("ConsumerOptions limits and timeouts must not be negative"))
	}
	if err := opts.FailurePolicy.validate(); err != nil {
		errs = append(errs, err)
	}
	if _, ok := opts.Store.(PendingWatcher); ok && opts.Config.Assignment != AssignmentScan {
		// The store pushes what waits for a worker: watch it rather than
		// poll the index (see Config.WatchPending).
		opts.Config.WatchPending = true
	} else if opts.Config.WatchPending {
		errs = append(errs, fmt.Errorf("Config.WatchPending needs a Store that implements engine.PendingWatcher; %T does not", opts.Store))
	}
	if opts.Config.Seed == 0 {
		// Every process needs its own seed (see Config.Seed): the driver,
		// not the decision core, is where randomness may come from.
		var b [8]byte
		_, _ = crand.Read(b[:])
		opts.Config.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	// The driver sees every trace event first (driver_observe.go), then
	// the configured Tracer does.
	var c *Consumer
	userTrace := opts.Config.Trace
	opts.Config.Trace = func(e TraceEvent) {
		c.observe(e)
		if userTrace != nil {
			userTrace(e)
		}
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
	if opts.CallTimeout > cfg.LeaseDuration {
		// Shard sync relies on a write applying within a lease duration of
		// being sent (see deleteGrace).
		return nil, fmt.Errorf("new consumer: CallTimeout (%v) must be at most LeaseDuration (%v): a write that applies later could re-create a finished shard's row", opts.CallTimeout, cfg.LeaseDuration)
	}
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
	c = &Consumer{
		opts:        opts,
		worker:      w,
		clk:         opts.Clock,
		log:         opts.Logger.With("owner", cfg.Owner),
		results:     make(chan Input, 256),
		checkpoints: make(chan checkpointRequest),
		storeSem:    make(chan struct{}, opts.MaxStoreCalls),
		streamSem:   make(chan struct{}, opts.MaxStreamCalls),
		runners:     make(map[string]*runner),
		watches:     make(map[string]*watchRunner),
		waiters:     make(map[uint64]chan error),
		done:        make(chan struct{}),
		health:      newHealth(cfg.LeaseDuration, opts.StartTimeout),
		planted:     cfg.planted,
	}
	c.outages = newOutages(c.clk, c.log)
	return c, nil
}

// Run runs the worker until ctx is cancelled, then shuts down gracefully:
// in-flight batches finish, processors are asked to checkpoint, and every
// lease is released so other workers take them at once. Run may be called
// once.
//
// Before anything else Run checks the table (TableChecker, unless
// SkipTableCheck), then the worker checks the streams and the table's
// stream marker (see Worker.Started); nothing is written to the table
// before those pass. Run returns:
//   - nil after a clean shutdown that released every lease it held (also
//     when ctx is cancelled during the table check: none was taken);
//   - a *ShutdownError when some leases could not be released (the table
//     was unreachable, or the shutdown timed out): they expire;
//   - an error wrapping ErrTableMissing, ErrTableSchema, ErrStreamMissing,
//     ErrAccessDenied or ErrStreamMismatch (a *StreamMismatchError) when a
//     start-up check fails, or the stream is re-created while it runs;
//   - an error when the start-up checks did not pass within StartTimeout.
func (c *Consumer) Run(ctx context.Context) error {
	defer close(c.done)
	c.start = c.clk.Now()
	c.health.run(c.start)
	defer func() { c.health.stop(c.clk.Now()) }()
	if tc, ok := c.opts.Store.(TableChecker); ok && !c.opts.SkipTableCheck {
		if err := c.checkTable(ctx, tc); err != nil {
			if ctx.Err() != nil {
				// asked to stop (SIGTERM) while the table was being
				// checked: nothing was taken, nothing is left to release
				c.log.Info("stopped during the start-up checks, as asked; no lease was taken")
				return nil
			}
			c.log.Error("start-up check failed: the lease table", "err", err)
			return err
		}
	}
	// callCtx outlives ctx by the shutdown timeout, so that releases can
	// still be written after ctx is cancelled.
	callCtx, cancelCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCalls()
	procCtx, cancelProcs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelProcs()
	defer c.stopWatches()

	timer := c.clk.Timer(0)
	defer timer.Stop()
	var deadline, startBy <-chan time.Time
	if c.opts.StartTimeout > 0 {
		startBy = c.clk.After(c.opts.StartTimeout)
	}
	shutdown, started := false, false
	in := Input{Kind: InputTick}
	for {
		now := c.now()
		rd := c.worker.Step(now, in)
		c.health.stepped(now.Wall, c.start.Add(rd.WakeAt), c.worker.leases())
		c.carryOut(callCtx, procCtx, rd)
		c.keepWatches(procCtx, rd.Watch)
		c.publishActingUntil()
		if !started && c.worker.Started() {
			started, startBy = true, nil
			c.health.started()
			c.log.Info("start-up checks passed")
		}
		if rd.Stopped {
			c.stopRunners()
			return c.stopped(rd.Err)
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
				c.health.shuttingDown(c.clk.Now())
				c.log.Info("shutting down: draining, checkpointing and releasing leases")
				deadline = c.clk.After(c.opts.ShutdownTimeout)
				in = Input{Kind: InputShutdown}
				ctx = context.Background() // stop selecting on it
			}
		case <-deadline:
			c.stopRunners()
			released, left := c.worker.ShutdownResult()
			left = append(left, c.worker.Held()...)
			err := &ShutdownError{Released: released, Left: left, Reason: fmt.Sprintf("the shutdown did not finish within %v", c.opts.ShutdownTimeout)}
			c.log.Error("graceful shutdown timed out: leases not released will expire after the lease duration", "released", nonNil(released), "left", nonNil(left))
			return err
		case <-startBy:
			c.stopRunners()
			return fmt.Errorf("engine: the start-up checks (stream, table, stream marker) did not pass within %v; see the logged call errors", c.opts.StartTimeout)
		}
	}
}

// checkTable runs the store's table check, within StartTimeout if set.
func (c *Consumer) checkTable(ctx context.Context, tc TableChecker) error {
	if c.opts.StartTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = c.clk.WithTimeout(ctx, c.opts.StartTimeout)
		defer cancel()
	}
	if err := tc.CheckTable(ctx); err != nil {
		return fmt.Errorf("engine: start-up check of the lease table: %w", err)
	}
	return nil
}

// stopped is what Run returns once the worker has stopped: its error, or
// a ShutdownError when the shutdown left leases to expire.
func (c *Consumer) stopped(err error) error {
	if err != nil {
		c.log.Error("worker stopped", "err", err)
		return fmt.Errorf("engine: %w", err)
	}
	released, left := c.worker.ShutdownResult()
	if len(left) > 0 {
		c.log.Error("worker stopped; some leases could not be released and will expire after the lease duration",
			"released", nonNil(released), "left", nonNil(left))
		return &ShutdownError{Released: released, Left: left, Reason: "their release could not be written before their own-view expiry"}
	}
	c.log.Info("worker stopped; every lease released", "released", nonNil(released))
	return nil
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
		c.health.call(call.Op, r.Err, c.clk.Now())
		c.outages.call(call, r.Err)
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

// startRunner runs a lease's processor on its own goroutine. The driver
// files (those that take the injected clock) are the only part of the
// engine that starts goroutines; the decision core never does.
func (c *Consumer) startRunner(ctx context.Context, r *runner) { go r.run(ctx) }
