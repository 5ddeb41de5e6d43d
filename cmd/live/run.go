package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/metrics"
)

// workerFlags are the flags of `live run`.
type workerFlags struct {
	aws          awsFlags
	store        storeFlags
	stream       string
	table        string
	owner        string
	initial      string
	atTimestamp  string
	lease        time.Duration
	renew        time.Duration
	margin       time.Duration
	drift        float64
	take         time.Duration
	sync         time.Duration
	maxLeases    int
	maxSteal     int
	limit        int
	idle         time.Duration
	consistent   bool
	callTimeout  time.Duration
	shutdownTime time.Duration
	metricsAddr  string
	record       string
	worker       int
	cpEvery      int
	cpInterval   time.Duration
	batchDelay   time.Duration
	failEvery    int
	skipAfter    int
	logLevel     string
	logFormat    string
	startTimeout time.Duration
	consumer     string
	consumerName string
	deregister   bool
	adopt        bool
	assignment   string
	renewal      string
	asgScan      time.Duration
	pendingPoll  time.Duration
	balanceBy    string
}

func (f *workerFlags) register(fs *flag.FlagSet) {
	f.aws.register(fs)
	f.store.register(fs)
	fs.StringVar(&f.stream, "stream", "", "Kinesis stream to consume (required)")
	fs.StringVar(&f.table, "table", "", "lease table (required): the DynamoDB table (create it with \"live create\"), or with -store etcd the name of the prefix /shardlease/<table>/")
	fs.StringVar(&f.owner, "owner", "", "owner id of this worker, unique among live workers (default: host name plus a random suffix)")
	fs.StringVar(&f.initial, "initial-position", engine.Latest, "where the shards that exist when the application first starts begin: LATEST, TRIM_HORIZON or AT_TIMESTAMP (children of splits and merges always begin at TRIM_HORIZON)")
	fs.StringVar(&f.atTimestamp, "at-timestamp", "", "the AT_TIMESTAMP position, RFC 3339")
	fs.DurationVar(&f.lease, "lease-duration", 0, "lease duration (default 10s)")
	fs.DurationVar(&f.renew, "renew-interval", 0, "time between renewals (default 3s)")
	fs.DurationVar(&f.margin, "safety-margin", 0, "how long before its own view of expiry a holder stops acting (default lease/10)")
	fs.Float64Var(&f.drift, "max-clock-drift", 0, "bound on the clock rate drift between workers (default 0.01)")
	fs.DurationVar(&f.take, "take-interval", 0, "time between table scans for leases to take (default: the lease duration)")
	fs.DurationVar(&f.sync, "shard-sync-interval", 0, "time between shard syncs (default 10s)")
	fs.IntVar(&f.maxLeases, "max-leases", 0, "most leases this worker holds (0: no cap)")
	fs.IntVar(&f.maxSteal, "max-steal", 0, "most leases one balancing round steals (default 1; negative disables stealing)")
	fs.IntVar(&f.limit, "get-records-limit", 0, "most records per GetRecords (default 10000)")
	fs.DurationVar(&f.idle, "idle-time-between-reads", 0, "pause after an empty GetRecords (default 1s)")
	fs.BoolVar(&f.consistent, "consistent-take-scans", false, "make the take scans strongly consistent")
	fs.StringVar(&f.assignment, "assignment", engine.AssignmentAssigner, "how leases reach workers: assigner (one elected assigner hands them out; workers read only what waits for them) or scan (every worker scans the table and takes leases)")
	fs.StringVar(&f.renewal, "renewal", engine.RenewalAuto, "how leases are kept alive: auto (by session, unless the table is shared with or was adopted from KCL: then per lease), lease (each lease's row renewed every renew interval) or session (one session row per worker renewed, every lease bound to it; needs -assignment assigner; refuses to start beside a live KCL worker)")
	fs.DurationVar(&f.asgScan, "assigner-scan-interval", 0, "time between the assigner's table scans (default: lease duration / 3)")
	fs.DurationVar(&f.pendingPoll, "pending-poll-interval", 0, "time between a worker's reads of the rows that wait for it (default: lease duration / 8)")
	fs.StringVar(&f.balanceBy, "balance-by", engine.BalanceLeases, "what the assigner balances: leases (counts) or throughput (KB/s each holder reports)")
	fs.DurationVar(&f.callTimeout, "call-timeout", 0, "deadline of each AWS call (default: the renew interval)")
	fs.DurationVar(&f.shutdownTime, "shutdown-timeout", 0, "bound on the graceful shutdown (default: the lease duration)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":9464", "address of the Prometheus /metrics endpoint and the probes /livez (and /healthz: liveness) and /readyz (readiness; details with ?verbose); the default listens on every interface (empty: none)")
	fs.StringVar(&f.record, "record", "", "directory to write this worker's history to (for \"live check\")")
	fs.IntVar(&f.worker, "worker", -1, "worker slot number written into the history (harnesses restart a slot under new processes)")
	fs.IntVar(&f.cpEvery, "checkpoint-every", 100, "example processor: checkpoint after this many records")
	fs.DurationVar(&f.cpInterval, "checkpoint-interval", 5*time.Second, "example processor: checkpoint at least this often while records flow")
	fs.DurationVar(&f.batchDelay, "batch-delay", 0, "example processor: simulated work per batch")
	fs.IntVar(&f.failEvery, "fail-every", 0, "example processor: fail every N-th batch once, to exercise re-delivery (0: never)")
	fs.IntVar(&f.skipAfter, "skip-failed-after", 0, "failure policy: skip a batch (logged at WARN, not checkpointed) once N deliveries of it in a row have failed (0: retry it for as long as the lease is held)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&f.startTimeout, "start-timeout", 30*time.Second, "bound on the start-up checks of the table and the stream")
	fs.StringVar(&f.consumer, "consumer", "polling", "how shards are read: polling (GetRecords) or fan-out (enhanced fan-out: SubscribeToShard with the consumer -consumer-name)")
	fs.StringVar(&f.consumerName, "consumer-name", "", "fan-out: the stream consumer to register (or use if registered); the same for every worker of the application")
	fs.BoolVar(&f.deregister, "deregister-consumer", false, "fan-out: deregister the consumer at shutdown (ends the subscriptions of every other worker using it)")
	fs.BoolVar(&f.adopt, "adopt-unverified-rows", false, "adopt a lease table without a stream marker although some unfinished rows name shards the stream does not have (a KCL table whose shards expired); rows it cannot prove are the stream's are still never ended or deleted")
}

func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// engineConfig builds the engine configuration from the flags.
func (f *workerFlags) engineConfig() (engine.Config, error) {
	sc := engine.StreamConfig{Name: f.stream, InitialPosition: strings.ToUpper(f.initial)}
	if f.atTimestamp != "" {
		ts, err := time.Parse(time.RFC3339, f.atTimestamp)
		if err != nil {
			return engine.Config{}, fmt.Errorf("-at-timestamp %q: %w", f.atTimestamp, err)
		}
		sc.Timestamp = ts
	}
	mode, err := engine.ParseConsumerMode(f.consumer)
	if err != nil {
		return engine.Config{}, fmt.Errorf("-consumer: %w", err)
	}
	cfg := engine.Config{
		Consumer:               mode,
		ConsumerName:           f.consumerName,
		DeregisterConsumer:     f.deregister,
		Owner:                  f.owner,
		Streams:                []engine.StreamConfig{sc},
		LeaseDuration:          f.lease,
		RenewInterval:          f.renew,
		SafetyMargin:           f.margin,
		MaxClockDrift:          f.drift,
		TakeInterval:           f.take,
		ShardSyncInterval:      f.sync,
		MaxLeasesForWorker:     f.maxLeases,
		MaxLeasesToStealAtOnce: f.maxSteal,
		GetRecordsLimit:        f.limit,
		IdleTimeBetweenReads:   f.idle,
		ConsistentTakeScans:    f.consistent,
		AdoptUnverifiedRows:    f.adopt,
		Assignment:             f.assignment,
		Renewal:                f.renewal,
		AssignerScanInterval:   f.asgScan,
		PendingPollInterval:    f.pendingPoll,
		BalanceBy:              f.balanceBy,
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	for _, b := range seed {
		cfg.Seed = cfg.Seed<<8 | uint64(b)
	}
	return cfg, nil
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := newOutput("live run", args, stderr)
	fs := flag.NewFlagSet("live run", flag.ContinueOnError)
	var f workerFlags
	f.register(fs)
	if err := parseFlags(fs, args, stderr, "live run -stream STREAM -table TABLE [flags]"); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		o.errorf("%v", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		o.errorf("unexpected arguments %q (flags come before them; see live run -h)", fs.Args())
		return exitUsage
	}
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		o.errorf("%v", err)
		return exitUsage
	}
	var missing []string
	if f.stream == "" {
		missing = append(missing, "-stream (or LIVE_STREAM)")
	}
	if f.table == "" {
		missing = append(missing, "-table (or LIVE_TABLE)")
	}
	if len(missing) > 0 {
		o.errorf("missing %s", strings.Join(missing, " and "))
		return exitUsage
	}
	if err := negativeDurations(fs); err != nil {
		o.errorf("%v", err)
		return exitUsage
	}
	if err := f.store.validate(); err != nil {
		fmt.Fprintln(stderr, "live run:", err)
		return exitUsage
	}
	if f.owner == "" {
		f.owner = defaultOwner()
	}
	cfg, err := f.engineConfig()
	if err != nil {
		o.errorf("%v", err)
		return exitUsage
	}
	// The consumer adds owner to its own lines: it gets the logger without
	// it, so that no JSON line carries the key twice.
	base := log
	log = log.With("owner", f.owner)

	clients, err := awsenv.Load(ctx, awsenv.Settings{Region: f.aws.region, DynamoDBEndpoint: f.aws.dynamoEndpoint, KinesisEndpoint: f.aws.kinesisEndpoint, Logger: log})
	if err != nil {
		o.errorf("%v", err)
		return exitUsage
	}
	opened, err := f.store.open(f.table, clients)
	if err != nil {
		fmt.Fprintln(stderr, "live run:", err)
		return exitUsage
	}
	defer opened.Close()
	store := opened.store
	stream := kinesisstream.New(clients.Kinesis)
	defer stream.Close() // subscriptions still open

	var rec *history.Recorder
	if f.record != "" {
		rec, err = history.Create(f.record, history.Options{Role: "worker", Owner: f.owner, Worker: int32(f.worker)})
		if err != nil {
			o.errorf("-record: %v", err)
			return exitUsage
		}
		defer rec.Close()
	}
	full, _ := cfg.Validate() // the defaults filled in; NewConsumer reports what is invalid
	m, err := metrics.New(metrics.Options{Owner: f.owner, LeaseDuration: full.LeaseDuration, SafetyMargin: full.SafetyMargin})
	if err != nil {
		o.errorf("metrics: %v", err)
		return exitFailed
	}
	tap := history.NewTap(rec, nil)
	cfg.Trace = m.Tracer(tap.Tracer())
	total := new(atomic.Int64)
	consumer, err := engine.NewConsumer(engine.ConsumerOptions{
		Config: cfg,
		Store:  tap.Store(m.Store(store)),
		Stream: tap.Stream(m.Stream(stream)),
		Processor: tap.Processors(m.Processors(newCounterFactory(counterOptions{
			Every: f.cpEvery, Interval: f.cpInterval, BatchDelay: f.batchDelay, FailEvery: f.failEvery, Total: total, Log: log,
		}))),
		CallTimeout:     f.callTimeout,
		ShutdownTimeout: f.shutdownTime,
		StartTimeout:    f.startTimeout,
		FailurePolicy:   skipPolicy(f.skipAfter),
		Logger:          base,
	})
	if err != nil {
		// NewConsumer names every rule the configuration breaks, by the
		// engine's field names: say them as the flags the user typed
		o.errorf("%s", inFlags(err))
		return exitUsage
	}
	if f.cpEvery < 1 || f.cpInterval <= 0 {
		o.errorf("-checkpoint-every must be at least 1 and -checkpoint-interval positive")
		return exitUsage
	}

	region, dynEP, kinEP := clients.Where()
	log.Info("starting worker", "stream", f.stream, "table", f.table, "store", opened.where, "region", region, "dynamodb_endpoint", dynEP, "kinesis_endpoint", kinEP,
		"initial_position", full.Streams[0].InitialPosition, "lease_duration", full.LeaseDuration, "renew_interval", full.RenewInterval,
		"safety_margin", full.SafetyMargin, "take_interval", full.TakeInterval, "shard_sync_interval", full.ShardSyncInterval,
		"consumer", full.Consumer.String(), "consumer_name", full.ConsumerName, "assignment", full.Assignment, "renewal", full.Renewal)

	var srv *http.Server
	if f.metricsAddr != "" {
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			o.errorf("-metrics-addr %s: %v", f.metricsAddr, err)
			return exitUsage
		}
		srv = &http.Server{Handler: healthMux(m.Handler(), consumer.Health), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		log.Info("metrics endpoint up", "url", "http://"+ln.Addr().String()+"/metrics",
			"livez", "http://"+ln.Addr().String()+"/livez", "readyz", "http://"+ln.Addr().String()+"/readyz")
	}

	rec.ProcStart(history.ConfigString("role", "worker", "stream", f.stream, "table", f.table,
		"initial", full.Streams[0].InitialPosition, "lease", full.LeaseDuration, "renew", full.RenewInterval,
		"margin", full.SafetyMargin, "take", full.TakeInterval, "sync", full.ShardSyncInterval, "consumer", full.Consumer.String()))

	// SIGTERM or SIGINT: graceful shutdown (drain, checkpoint, release).
	// A second signal exits at once.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		s := <-sigs
		log.Info("signal received: shutting down gracefully (a second signal exits at once)", "signal", s.String())
		cancel()
		s = <-sigs
		log.Warn("second signal: exiting without releasing leases; they expire after the lease duration", "signal", s.String())
		rec.ProcStop("second signal")
		_ = rec.Close()
		os.Exit(130)
	}()

	runErr := consumer.Run(runCtx)
	if srv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		_ = srv.Shutdown(sctx)
		scancel()
	}
	if runErr != nil {
		rec.ProcStop("error")
		if code, msg := startupFailure(runErr, f, opened.where, region, kinEP); code != 0 {
			o.errorf("%s", msg)
			return code
		}

		log.Error("worker stopped with an error", "err", runErr, "records_processed", total.Load())
		return exitFailed
	}
	rec.ProcStop("exit")
	if err := rec.Err(); err != nil {
		log.Error("writing the history failed", "err", err)
		return exitFailed
	}
	log.Info("worker stopped cleanly", "records_processed", total.Load())
	return exitOK
}

// startupFailure turns an error of a failed start-up check (the engine
// runs them: the table, the stream, the table's stream marker) into the
// exit status 2 of a configuration problem and a plain message naming the
// table, the stream, where they were looked for and what to do. It
// returns 0 for other errors.
func startupFailure(err error, f workerFlags, where, region, kinEP string) (int, string) {
	var mm *engine.StreamMismatchError
	switch {
	case errors.As(err, &mm):
		return exitUsage, fmt.Sprintf("the lease table %s does not belong to stream %q (region %s): %v", where, f.stream, region, mm)
	case errors.Is(err, engine.ErrTableMissing):
		return exitUsage, fmt.Sprintf("the lease table %s does not exist; create it with `live create -table %s -stream %s`: %v",
			where, f.table, f.stream, err)
	case errors.Is(err, engine.ErrTableSchema) && f.store.kind == storeEtcd:
		return exitUsage, fmt.Sprintf("the %s is not this application's lease table: %v", where, err)
	case errors.Is(err, engine.ErrTableSchema):
		return exitUsage, fmt.Sprintf("the table %s is not a lease table: %v", where, err)
	case errors.Is(err, engine.ErrStreamMissing):
		return exitUsage, fmt.Sprintf("the stream %q does not exist (region %s, Kinesis endpoint %s); create it with `live create -table %s -stream %s`: %v",
			f.stream, region, kinEP, f.table, f.stream, err)
	case errors.Is(err, engine.ErrAccessDenied) && f.store.kind == storeEtcd && strings.Contains(err.Error(), "etcdstore"):
		return exitUsage, fmt.Sprintf("the etcd cluster refused the credentials or their permissions on the %s (-etcd-username, %s, -etcd-cert): %v", where, envEtcdPassword, err)
	case errors.Is(err, engine.ErrAccessDenied):
		return exitUsage, fmt.Sprintf("the credentials were rejected or lack a permission (region %s; the IAM policy is in docs/aws.md): %v", region, err)
	}
	return 0, ""
}

// skipPolicy is the failure policy of -skip-failed-after: nil for 0 (retry
// forever), else skip once n deliveries in a row have failed. A negative n
// is left to NewConsumer to reject.
func skipPolicy(n int) *engine.FailurePolicy {
	if n == 0 {
		return nil
	}
	return &engine.FailurePolicy{MaxAttempts: n, Decide: func(context.Context, engine.FailedBatch) engine.FailureDecision {
		return engine.SkipBatch
	}}
}
