package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/sim/trace"
)

// runReshard splits a shard or merges two adjacent ones.
func runReshard(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("live reshard", flag.ContinueOnError)
	var a awsFlags
	a.register(fs)
	stream := fs.String("stream", "", "Kinesis stream (required)")
	record := fs.String("record", "", "directory to record the new shards in (for \"live check\")")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on the operation and the wait for the stream to be ACTIVE again")
	if err := parseFlags(fs, args, stderr, "live reshard -stream STREAM split SHARD | merge SHARD ADJACENT"); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(stderr, "live reshard:", err)
		return exitUsage
	}
	rest := fs.Args()
	if *stream == "" || len(rest) < 2 || (rest[0] == "split" && len(rest) != 2) || (rest[0] == "merge" && len(rest) != 3) || (rest[0] != "split" && rest[0] != "merge") {
		fmt.Fprintln(stderr, "usage: live reshard -stream S split SHARD | merge SHARD ADJACENT")
		return exitUsage
	}
	clients, err := awsenv.Load(ctx, awsenv.Settings{Region: a.region, DynamoDBEndpoint: a.dynamoEndpoint, KinesisEndpoint: a.kinesisEndpoint})
	if err != nil {
		fmt.Fprintln(stderr, "live reshard:", err)
		return exitUsage
	}
	var rec *history.Recorder
	if *record != "" {
		if rec, err = history.Create(*record, history.Options{Role: "reshard", Owner: "reshard", Worker: -1}); err != nil {
			fmt.Fprintln(stderr, "live reshard: -record:", err)
			return exitUsage
		}
		defer rec.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	children, err := reshard(ctx, clients.Kinesis, kinesisstream.New(clients.Kinesis), *stream, rest[0], rest[1:], rec)
	if err != nil {
		fmt.Fprintln(stderr, "live reshard:", err)
		return exitFailed
	}
	for _, c := range children {
		fmt.Fprintf(stdout, "new shard %s (parents %s %s)\n", c.ID, c.Parent, c.AdjacentParent)
	}
	return exitOK
}

// reshard splits shards[0] at the middle of its hash range, or merges
// shards[0] and shards[1], and returns the new shards. With rec, it records
// the new shards (with their parents) at the time the request was sent:
// nothing of them can have been read before.
func reshard(ctx context.Context, admin kinesisstream.AdminAPI, ks *kinesisstream.Stream, stream, op string, shards []string, rec *history.Recorder) ([]engine.Shard, error) {
	before, err := ks.ListShards(ctx, stream)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	var target engine.Shard
	for _, s := range before {
		known[s.ID] = true
		if s.ID == shards[0] {
			target = s
		}
	}
	if target.ID == "" {
		return nil, fmt.Errorf("stream %q has no shard %q", stream, shards[0])
	}
	sent := rec.Now()
	switch op {
	case "split":
		mid, err := kinesisstream.MidHashKey(target.StartingHashKey, target.EndingHashKey)
		if err != nil {
			return nil, err
		}
		err = kinesisstream.SplitShard(ctx, admin, stream, target.ID, mid)
		if err != nil {
			return nil, err
		}
	case "merge":
		if err := kinesisstream.MergeShards(ctx, admin, stream, shards[0], shards[1]); err != nil {
			return nil, err
		}
	}
	after, err := ks.ListShards(ctx, stream)
	if err != nil {
		return nil, err
	}
	var out []engine.Shard
	for _, s := range after {
		if !known[s.ID] {
			out = append(out, s)
			rec.Write(trace.Record{T: sent, Kind: trace.KindShardCreated, Key: s.ID, Parent: s.Parent, Parent2: s.AdjacentParent})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s of %v in %q: no new shard listed afterwards", op, shards, stream)
	}
	return out, nil
}
