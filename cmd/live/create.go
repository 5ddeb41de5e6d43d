package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/engine/kinesisstream"
)

// runCreate creates the lease table and the stream if they are missing.
func runCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("live create", flag.ContinueOnError)
	var a awsFlags
	a.register(fs)
	var sf storeFlags
	sf.register(fs)
	table := fs.String("table", "", "lease table to create: a DynamoDB table (on-demand billing, hash key leaseKey), or with -store etcd the prefix /shardlease/<table>/, which is checked (no other application's keys) and laid out (its schema key)")
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
	if err := sf.validate(); err != nil {
		fmt.Fprintln(stderr, "live create:", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *table != "" && sf.kind == storeEtcd {
		if code := createEtcd(ctx, &sf, *table, stdout, stderr); code != exitOK {
			return code
		}
		if *stream == "" {
			return exitOK
		}
	}
	clients, err := awsenv.Load(ctx, awsenv.Settings{Region: a.region, DynamoDBEndpoint: a.dynamoEndpoint, KinesisEndpoint: a.kinesisEndpoint})
	if err != nil {
		fmt.Fprintln(stderr, "live create:", err)
		return exitUsage
	}
	if *table != "" && sf.kind != storeEtcd {
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

// createEtcd checks the etcd prefix of table (nothing of another
// application's under it) and writes its schema key if it has none: there is
// nothing else to create. Nothing becomes ACTIVE either: a cluster that does
// not answer within twice -etcd-dial-timeout is named as unreachable
// rather than waited for until -timeout.
func createEtcd(ctx context.Context, sf *storeFlags, table string, stdout, stderr io.Writer) int {
	o, err := sf.open(table, nil)
	if err != nil {
		fmt.Fprintln(stderr, "live create:", err)
		return exitUsage
	}
	defer o.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*sf.dialWait)
	defer cancel()
	wrote, err := o.etcd.EnsurePrefix(ctx)
	switch {
	case errors.Is(err, engine.ErrAccessDenied):
		fmt.Fprintf(stderr, "live create: the etcd cluster refused the credentials or their permissions on the %s (-etcd-username, %s, -etcd-cert): %v\n", o.where, envEtcdPassword, err)
		return exitUsage
	case errors.Is(err, engine.ErrTableSchema):
		fmt.Fprintf(stderr, "live create: the %s cannot be this application's lease table: %v\n", o.where, err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "live create: the %s: %v\n", o.where, err)
		return exitFailed
	case wrote:
		fmt.Fprintf(stdout, "lease table %s: laid out (schema key written; nothing else to create)\n", o.where)
	default:
		fmt.Fprintf(stdout, "lease table %s: ready (already laid out)\n", o.where)
	}
	return exitOK
}
