package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/engine/kpl"
	"github.com/shardlease/shardlease/sim/trace"
)

// runProduce puts records into a stream at a given rate until -duration
// passes or SIGTERM/SIGINT, recording each record put (shard and sequence
// number) so that `live check` can judge what was lost against what was
// really put. With -aggregate N it puts N user records per Kinesis record,
// aggregated as the KPL does (package kpl).
func runProduce(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := newOutput("live produce", args, stderr)
	fs := flag.NewFlagSet("live produce", flag.ContinueOnError)
	var a awsFlags
	a.register(fs)
	stream := fs.String("stream", "", "Kinesis stream to write to (required)")
	rate := fs.Float64("rate", 100, "records per second (user records, with -aggregate)")
	duration := fs.Duration("duration", 0, "how long to produce (0: until SIGTERM/SIGINT)")
	count := fs.Int("count", 0, "stop after this many records (0: no limit)")
	size := fs.Int("size", 64, "bytes per record (per user record, with -aggregate)")
	aggregate := fs.Int("aggregate", 1, "user records per Kinesis record, aggregated as the KPL does (1: no aggregation)")
	tick := fs.Duration("tick", 100*time.Millisecond, "how often to send a PutRecords call")
	record := fs.String("record", "", "directory to write the history of what was put to (for \"live check\")")
	callTimeout := fs.Duration("call-timeout", 10*time.Second, "deadline of each PutRecords call")
	shardPoll := fs.Duration("shard-poll", time.Second, "how often to list shards to record splits and merges (with -record; 0: never)")
	logLevel := fs.String("log-level", "info", "log level")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	if err := parseFlags(fs, args, stderr, "live produce -stream STREAM [-rate N] [-aggregate N] [flags]"); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		o.errorf("%v", err)
		return exitUsage
	}
	log, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		o.errorf("%v", err)
		return exitUsage
	}
	if *stream == "" || *rate <= 0 || *size < 1 || *tick <= 0 {
		o.errorf("need -stream, a positive -rate, -size and -tick")
		return exitUsage
	}
	if err := checkAggregate(*aggregate, *size); err != nil {
		o.errorf("%v", err)
		return exitUsage
	}
	clients, err := awsenv.Load(ctx, awsenv.Settings{Region: a.region, DynamoDBEndpoint: a.dynamoEndpoint, KinesisEndpoint: a.kinesisEndpoint})
	if err != nil {
		o.errorf("%v", err)
		return exitUsage
	}
	ks := kinesisstream.New(clients.Kinesis)
	var rec *history.Recorder
	if *record != "" {
		rec, err = history.Create(*record, history.Options{Role: "producer", Owner: "producer", Worker: -1})
		if err != nil {
			o.errorf("-record: %v", err)
			return exitUsage
		}
		defer rec.Close()
		rec.ProcStart(history.ConfigString("role", "producer", "stream", *stream, "rate", *rate))
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	sctx, scancel := context.WithTimeout(ctx, *callTimeout)
	shards, err := ks.ListShards(sctx, *stream)
	scancel()
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			o.errorf("the stream %q does not exist; create it with: live create -stream %s", *stream, *stream)
		} else {
			o.errorf("%v", err)
		}
		return exitFailed
	}
	seen := map[string]bool{}
	recordShards := func(list []engine.Shard) {
		for _, s := range list {
			if !seen[s.ID] {
				seen[s.ID] = true
				rec.Write(trace.Record{Kind: trace.KindShardCreated, Key: s.ID, Parent: s.Parent, Parent2: s.AdjacentParent})
			}
			if s.Closed() && !seen["closed "+s.ID] {
				seen["closed "+s.ID] = true
				rec.Write(trace.Record{Kind: trace.KindShardClosed, Key: s.ID, Last: s.EndingSequence})
			}
		}
	}
	recordShards(shards)
	log.Info("producing", "stream", *stream, "rate", *rate, "shards", len(shards))

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	payload := make([]byte, *size)
	start := time.Now()
	lastPoll := start
	var sent, failed, unknown int
	var retry []putEntry
	t := time.NewTicker(*tick)
	defer t.Stop()
	pid := os.Getpid()
	n := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C:
		}
		want := int(time.Since(start).Seconds()**rate) - sent - users(retry)
		if *count > 0 && sent+users(retry)+want > *count {
			want = *count - sent - users(retry)
		}
		entries := retry
		retry = nil
		for want > 0 {
			hash := new(big.Int).Lsh(new(big.Int).SetUint64(rng.Uint64()), 64)
			hash.Or(hash, new(big.Int).SetUint64(rng.Uint64()))
			if *aggregate <= 1 {
				n++
				copy(payload, fmt.Sprintf("p%d-%d ", pid, n))
				entries = append(entries, putEntry{PutEntry: kinesisstream.PutEntry{PartitionKey: fmt.Sprintf("k%d", n), ExplicitHashKey: hash.String(), Data: append([]byte(nil), payload...)}, users: 1})
				want--
				continue
			}
			// One aggregate of user records that all go to the shard of
			// one random hash key, as the KPL aggregates per shard.
			users := make([]kpl.UserRecord, min(want, *aggregate))
			for i := range users {
				n++
				copy(payload, fmt.Sprintf("p%d-%d ", pid, n))
				users[i] = kpl.UserRecord{PartitionKey: fmt.Sprintf("k%d", n), ExplicitHashKey: hash.String(), Data: append([]byte(nil), payload...)}
			}
			e, err := aggregateEntry(users)
			if err != nil {
				o.errorf("%v", err)
				return exitFailed
			}
			entries = append(entries, e)
			want -= len(users)
		}
		for len(entries) > 0 {
			batch := entries[:min(len(entries), kinesisstream.MaxPutRecords)]
			entries = entries[len(batch):]
			puts := make([]kinesisstream.PutEntry, len(batch))
			for i, e := range batch {
				puts[i] = e.PutEntry
			}
			callSent := time.Now()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *callTimeout)
			results, err := ks.PutRecords(cctx, *stream, puts)
			cancel()
			replied := time.Now()
			if err != nil {
				if errors.Is(err, engine.ErrThrottled) {
					retry = append(retry, batch...)
					continue
				}
				// The call failed as a whole: some records may have been
				// written without our knowing where. Say so in the history.
				unknown += users(batch)
				log.Warn("PutRecords failed; its records may or may not have been written", "records", len(batch), "err", err)
				rec.Write(trace.Record{Kind: trace.KindFault, Reason: fmt.Sprintf("put-unknown %d records", len(batch))})
				continue
			}
			for i, r := range results {
				if r.Err != nil {
					failed++
					retry = append(retry, batch[i])
					continue
				}
				sent += batch[i].users
				// an aggregate's user records are r.Sequence with
				// sub-sequence numbers 0..users-1
				put := trace.Record{T: history.Stamp(replied), Wall: replied.UnixNano(), Kind: trace.KindPut, Key: r.Shard, First: r.Sequence,
					Sent: history.Stamp(callSent)}
				if batch[i].aggregated {
					put.Count = batch[i].users
				}
				rec.Write(put)
			}
		}
		if *count > 0 && sent >= *count {
			break
		}
		if rec != nil && *shardPoll > 0 && time.Since(lastPoll) >= *shardPoll {
			lastPoll = time.Now()
			sctx, scancel := context.WithTimeout(ctx, *callTimeout)
			if list, err := ks.ListShards(sctx, *stream); err == nil {
				recordShards(list)
			}
			scancel()
		}
	}
	rec.ProcStop("exit")
	what := "records"
	if *aggregate > 1 {
		what = fmt.Sprintf("user records (aggregated by up to %d)", *aggregate)
	}
	took := time.Since(start).Round(time.Millisecond)
	o.summary(stdout, fmt.Sprintf("produced %d %s to %s in %v (%d entry failures retried, %d of unknown outcome)",
		sent, what, *stream, took, failed, unknown),
		"produced", "records", sent, "aggregated_by", *aggregate, "stream", *stream, "duration", took, "entry_failures_retried", failed, "unknown_outcome", unknown)
	if err := rec.Err(); err != nil {
		o.errorf("writing the history: %v", err)
		return exitFailed
	}
	return exitOK
}

// putEntry is a record to put and the number of user records it carries.
type putEntry struct {
	kinesisstream.PutEntry
	users      int
	aggregated bool // a KPL aggregate (of users user records)
}

func users(entries []putEntry) int {
	n := 0
	for _, e := range entries {
		n += e.users
	}
	return n
}

// maxRecordBytes is the most data a Kinesis record holds (1 MiB, less the
// partition key the KPL uses); an aggregate must fit.
const maxRecordBytes = 1<<20 - 1

// checkAggregate checks -aggregate against -size. With -record, the
// history records each aggregate put with its number of user records
// (KindPut Count), and `live check` follows each user record at
// (sequence, sub-sequence).
func checkAggregate(aggregate, size int) error {
	switch {
	case aggregate < 1:
		return fmt.Errorf("-aggregate %d: need at least 1 user record per Kinesis record", aggregate)
	case aggregate == 1:
		return nil
	}
	// Each user record costs its data, its partition and explicit hash
	// keys (under 70 bytes) and a few bytes of framing.
	if est := aggregate * (size + 80); est > maxRecordBytes {
		return fmt.Errorf("-aggregate %d of %d-byte records makes aggregates of about %d bytes: a Kinesis record holds %d", aggregate, size, est, maxRecordBytes)
	}
	return nil
}

// aggregateEntry returns the Kinesis record that carries users, put as the
// KPL puts it.
func aggregateEntry(users []kpl.UserRecord) (putEntry, error) {
	data, err := kpl.Encode(users)
	if err != nil {
		return putEntry{}, err
	}
	pk, h, err := kpl.Route(users)
	if err != nil {
		return putEntry{}, err
	}
	if len(data) > maxRecordBytes {
		return putEntry{}, fmt.Errorf("an aggregate of %d user records is %d bytes: a Kinesis record holds %d", len(users), len(data), maxRecordBytes)
	}
	return putEntry{PutEntry: kinesisstream.PutEntry{PartitionKey: pk, ExplicitHashKey: h.String(), Data: data}, users: len(users), aggregated: true}, nil
}
