// Command consumer is a minimal application built on shardlease, complete:
// it consumes a Kinesis stream with a lease table in DynamoDB, counts the
// records of each shard and checkpoints after every batch, serves its
// Prometheus metrics and its probes, logs through log/slog (the AWS SDK's
// own lines too), and shuts down gracefully on SIGTERM or SIGINT. The
// README's "Using the engine" is this program; deploy/kubernetes runs it.
//
//	go run ./examples/consumer -stream orders -table orders-leases -create-table
//
// Credentials and the region come from the AWS SDK's default chain (a role,
// AWS_PROFILE, environment variables; -region overrides the region).
// Against local servers, set AWS_ENDPOINT_URL_DYNAMODB and
// AWS_ENDPOINT_URL_KINESIS (`eval "$(scripts/localaws.sh env)"`).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/awslog"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/metrics"
	"github.com/shardlease/shardlease/probe"
)

func main() { os.Exit(run()) }

func run() int {
	stream := flag.String("stream", "", "the Kinesis stream to consume (required)")
	table := flag.String("table", "", "the DynamoDB lease table (required)")
	region := flag.String("region", "", "the AWS region (default: the SDK's chain, e.g. AWS_REGION)")
	owner := flag.String("owner", "", "this worker's id, unique among live workers (default: the host name and a random suffix)")
	addr := flag.String("metrics-addr", ":9464", "where to serve /metrics and the probes /livez, /healthz and /readyz (empty: nowhere)")
	create := flag.Bool("create-table", false, "create the lease table (with its pending index) if it does not exist")
	lease := flag.Duration("lease-duration", 0, "the lease duration (default 10s)")
	shutdown := flag.Duration("shutdown-timeout", 0, "the bound on the graceful shutdown (default: the lease duration)")
	jsonLogs := flag.Bool("log-json", false, "log one JSON object per line")
	flag.Parse()

	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if *jsonLogs {
		h = slog.NewJSONHandler(os.Stderr, nil)
	}
	log := slog.New(h)
	if *stream == "" || *table == "" {
		log.Error("-stream and -table are required")
		return 2
	}
	if *owner == "" {
		*owner = defaultOwner()
	}

	// SIGTERM (Kubernetes, systemd) or Ctrl-C: a graceful shutdown.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	opts := []func(*config.LoadOptions) error{config.WithLogger(awslog.New(log))}
	if *region != "" {
		opts = append(opts, config.WithRegion(*region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		log.Error("loading the AWS configuration", "err", err)
		return 2
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	if *create {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := dynamostore.CreateTable(cctx, ddb, *table) // an existing lease table is fine
		cancel()
		if err != nil {
			log.Error("creating the lease table", "table", *table, "err", err)
			return 1
		}
	}

	cfg := engine.Config{
		Owner:         *owner,
		Streams:       []engine.StreamConfig{{Name: *stream, InitialPosition: engine.TrimHorizon}},
		LeaseDuration: *lease,
	}
	m, err := metrics.New(metrics.Options{Owner: *owner, LeaseDuration: *lease})
	if err != nil {
		log.Error("metrics", "err", err)
		return 1
	}
	cfg.Trace = m.Tracer(nil)
	c, err := engine.NewConsumer(engine.ConsumerOptions{
		Config:          cfg,
		Store:           m.Store(dynamostore.New(ddb, *table)), // Run checks the table first
		Stream:          m.Stream(kinesisstream.New(kinesis.NewFromConfig(awsCfg))),
		Processor:       m.Processors(func(engine.ShardRef) engine.Processor { return &counter{log: log} }),
		ShutdownTimeout: *shutdown,
		StartTimeout:    time.Minute,
		Logger:          log,
	})
	if err != nil {
		log.Error("invalid configuration", "err", err) // names the rule it broke
		return 2
	}

	if *addr != "" {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Error("-metrics-addr", "err", err)
			return 2
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		probe.Handle(mux, c.Health)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		log.Info("serving metrics and probes", "addr", ln.Addr().String())
	}

	log.Info("consuming", "stream", *stream, "table", *table, "owner", *owner)
	err = c.Run(ctx) // until SIGTERM: then drain, checkpoint, release
	var se *engine.ShutdownError
	switch {
	case err == nil:
		log.Info("stopped; every lease released")
		return 0
	case errors.As(err, &se):
		log.Warn("stopped; some leases were left to expire", "released", se.Released, "left", se.Left)
		return 1
	case errors.Is(err, engine.ErrTableMissing):
		log.Error("the lease table does not exist: create it (-create-table, or `live create`)", "table", *table, "err", err)
		return 2
	default:
		log.Error("stopped", "err", err)
		return 1
	}
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

// counter is the record processor: it counts the records of its shard and
// checkpoints after every batch (a real one does its work first).
type counter struct {
	log   *slog.Logger
	shard engine.ShardRef
	n     int
}

func (p *counter) Initialize(_ context.Context, in engine.InitInput) error {
	p.shard = in.Shard
	p.log.Info("processing shard", "shard", in.Shard.Shard, "from", in.Start.String())
	return nil
}

func (p *counter) ProcessRecords(ctx context.Context, in engine.RecordsInput) error {
	p.n += len(in.Records)
	if len(in.Records) == 0 {
		return nil
	}
	last := in.Records[len(in.Records)-1]
	err := in.Checkpointer.Checkpoint(ctx, engine.Checkpoint{Sequence: last.Sequence, SubSequence: last.SubSequence})
	if errors.Is(err, engine.ErrLeaseLost) {
		return nil // the lease moved on: its next owner goes on from the last checkpoint
	}
	return err // any other failure: the batch is delivered again
}

func (p *counter) ShardEnded(context.Context, engine.ShardEndedInput) error {
	p.log.Info("shard ended; the engine writes SHARD_END", "shard", p.shard.Shard, "records", p.n)
	return nil
}

func (p *counter) ShutdownRequested(_ context.Context, in engine.ShutdownInput) error {
	// every batch is checkpointed already; a processor that buffers
	// checkpoints what it has processed here
	p.log.Info("letting the shard go", "shard", p.shard.Shard, "why", in.Reason.String(), "to", in.To, "records", p.n)
	return nil
}

func (p *counter) LeaseLost(context.Context, engine.LeaseLostInput) {
	p.log.Warn("lease lost", "shard", p.shard.Shard, "records", p.n)
}
