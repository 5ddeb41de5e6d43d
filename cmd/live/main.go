// Command live runs shardlease workers against Amazon Kinesis and DynamoDB,
// or any AWS-compatible endpoints, and checks what they did.
//
//	live [run] -stream S -table T [flags]   run one worker (the default command)
//	live create -stream S -table T [-shards N] [-consumer-name C]
//	                                        create the lease table and the stream if missing
//	                                        (and register an enhanced fan-out consumer)
//	live produce -stream S [-rate R] [-aggregate N]
//	                                        put records at a rate, KPL-aggregated with -aggregate
//	live reshard -stream S split SHARD | merge SHARD ADJACENT
//	                                        split a shard, or merge two adjacent ones
//	live check [-table T] [-stream S] DIR...
//	                                        check the histories that -record wrote
//
// Every flag can also be given in the environment as LIVE_<FLAG>, upper
// case with '-' as '_' (LIVE_STREAM, LIVE_LEASE_DURATION, ...); a flag on
// the command line wins. The region and credentials come from the standard
// AWS chain (AWS_REGION, AWS_PROFILE, instance roles, ...); endpoints from
// -dynamodb-endpoint / -kinesis-endpoint or AWS_ENDPOINT_URL_DYNAMODB /
// AWS_ENDPOINT_URL_KINESIS. Credentials are never logged.
//
// Run `live help` or `live COMMAND -h` for the flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// exit codes
const (
	exitOK     = 0
	exitFailed = 1 // a run failed, or a check found violations
	exitUsage  = 2 // bad flags or configuration
)

func main() {
	os.Exit(realMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runWorker(ctx, args, stdout, stderr)
	case "create":
		return runCreate(ctx, args, stdout, stderr)
	case "produce":
		return runProduce(ctx, args, stdout, stderr)
	case "reshard":
		return runReshard(ctx, args, stdout, stderr)
	case "check":
		return runCheck(ctx, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "live: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

const usage = `usage:
  live [run] -stream S -table T [flags]     run one worker (the default command)
  live create -stream S -table T [-shards N] create the lease table and the stream if missing
              [-consumer-name C]            (and register the enhanced fan-out consumer C)
  live produce -stream S [-rate R]          put records at a rate, recording what was put
                           [-aggregate N]   N user records per Kinesis record, as the KPL aggregates
  live reshard -stream S split SHARD        split a shard at the middle of its hash range
  live reshard -stream S merge SHARD ADJ    merge two adjacent shards
  live check [-table T] [-stream S] DIR...  check recorded histories (S1-S6 and the live figures)

Flags may also come from the environment as LIVE_<FLAG> (e.g. LIVE_STREAM,
LIVE_LEASE_DURATION). Region and credentials come from the standard AWS chain;
endpoints from -dynamodb-endpoint/-kinesis-endpoint or AWS_ENDPOINT_URL_DYNAMODB /
AWS_ENDPOINT_URL_KINESIS. Run "live COMMAND -h" for a command's flags.
`

// awsFlags are the flags every command that talks to AWS takes.
type awsFlags struct {
	region, dynamoEndpoint, kinesisEndpoint string
}

func (a *awsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.region, "region", "", "AWS region (default: the standard chain, e.g. AWS_REGION)")
	fs.StringVar(&a.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB endpoint URL (default: AWS_ENDPOINT_URL_DYNAMODB or the region's)")
	fs.StringVar(&a.kinesisEndpoint, "kinesis-endpoint", "", "Kinesis endpoint URL (default: AWS_ENDPOINT_URL_KINESIS or the region's)")
}

// newLogger returns a slog logger writing to w.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: durationString}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}

// durationString writes durations as Go duration strings ("1.5s") in
// both formats; slog's JSON handler would write them as integer
// nanoseconds.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
