package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/engine/kinesisstream"
)

// runCreate creates the lease table and the stream if they are missing.
func runCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("live create", flag.ContinueOnError)
	var a awsFlags
	a.register(fs)
	table := fs.String("table", "", "DynamoDB lease table to create (on-demand billing, hash key leaseKey)")
	stream := fs.String("stream", "", "Kinesis stream to create (provisioned)")
	shards := fs.Int("shards", 4, "shards of a new stream")
	consumerName := fs.String("consumer-name", "", "register this enhanced fan-out consumer on -stream (if missing) and wait until it is ACTIVE")
	timeout := fs.Duration("timeout", 3*time.Minute, "bound on waiting for the table and the stream to become ACTIVE")
	if err := parseFlags(fs, args, stderr, "live create [-table TABLE] [-stream STREAM -shards N] [-consumer-name NAME] [flags]"); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(stderr, "live create:", err)
		return exitUsage
	}
	if *table == "" && *stream == "" {
		fmt.Fprintln(stderr, "live create: name -table, -stream or both")
		return exitUsage
	}
	if *consumerName != "" && *stream == "" {
		fmt.Fprintln(stderr, "live create: -consumer-name needs -stream")
		return exitUsage
	}
	if *shards < 1 {
		fmt.Fprintln(stderr, "live create: -shards must be at least 1")
		return exitUsage
	}
	clients, err := awsenv.Load(ctx, awsenv.Settings{Region: a.region, DynamoDBEndpoint: a.dynamoEndpoint, KinesisEndpoint: a.kinesisEndpoint})
	if err != nil {
		fmt.Fprintln(stderr, "live create:", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *table != "" {
		if err := dynamostore.CreateTable(ctx, clients.DynamoDB, *table); err != nil {
			fmt.Fprintln(stderr, "live create:", err)
			return exitFailed
		}
		// A table made before the pending index existed gets it (leases
		// handed out by an assigner need it; without it workers scan).
		if err := dynamostore.EnsureIndex(ctx, clients.DynamoDB, *table); err != nil {
			fmt.Fprintln(stderr, "live create: the lease table exists, but its pending index could not be added; workers will scan the table instead of being assigned leases:", err)
		}
		fmt.Fprintf(stdout, "lease table %s: ACTIVE\n", *table)
	}
	if *stream != "" {
		if err := kinesisstream.CreateStream(ctx, clients.Kinesis, *stream, int32(*shards)); err != nil {
			fmt.Fprintln(stderr, "live create:", err)
			return exitFailed
		}
		list, err := kinesisstream.New(clients.Kinesis).ListShards(ctx, *stream)
		if err != nil {
			fmt.Fprintln(stderr, "live create:", err)
			return exitFailed
		}
		open := 0
		for _, s := range list {
			if !s.Closed() {
				open++
			}
		}
		fmt.Fprintf(stdout, "stream %s: ACTIVE, %d open shards\n", *stream, open)
		asked := false
		fs.Visit(func(f *flag.Flag) { asked = asked || f.Name == "shards" })
		if asked && open != *shards {
			fmt.Fprintf(stderr, "live create: the stream %s already existed with %d open shards, not the %d asked for: live create does not change an existing stream (live reshard splits and merges shards)\n",
				*stream, open, *shards)
			return exitFailed
		}
	}
	if *consumerName != "" {
		c, err := kinesisstream.New(clients.Kinesis).EnsureConsumer(ctx, *stream, *consumerName)
		if err != nil {
			fmt.Fprintln(stderr, "live create:", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "consumer %s: ACTIVE, %s\n", c.Name, c.ARN)
	}
	return exitOK
}
