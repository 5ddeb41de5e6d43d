package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/cmd/live/internal/livecheck"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
)

// runCheck merges the histories in the given directories, runs the
// checkers and prints the figures. It exits 1 if a guarantee was broken.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("live check", flag.ContinueOnError)
	var a awsFlags
	a.register(fs)
	var sf storeFlags
	sf.register(fs)
	table := fs.String("table", "", "lease table to read the final checkpoints from (needed to check that checkpoints cover every record; with -store etcd, the prefix /shardlease/<table>/)")
	stream := fs.String("stream", "", "stream to list the shards of (their parents), for the parents-first check")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	grace := fs.Duration("grace", 0, "do not require records put in the last GRACE of the history to be delivered")
	maxV := fs.Int("max", 20, "most violations reported per invariant")
	timeout := fs.Duration("timeout", time.Minute, "bound on reading the table and the stream")
	linSkew := fs.Duration("lin-skew", livecheck.DefaultLinSkew,
		"clock-skew bound for the linearizability check (Lin): every lease-table call's window is widened by this much on each side, "+
			"because each process stamps its history with its own wall clock. Processes on one host share a clock, so a small bound suffices; "+
			"across hosts use the clock-sync bound. Too small a bound can report a linearizable history as illegal; a larger one only weakens the check")
	linTimeout := fs.Duration("lin-timeout", time.Minute, "bound on the linearizability check (0: none); keys not decided in time leave Lin unknown, not failed")
	if err := parseFlags(fs, args, stderr, "live check [-table TABLE] [-stream STREAM] [flags] DIR..."); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(stderr, "live check:", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: live check [-table T] [-stream S] [-json FILE] DIR...")
		return exitUsage
	}
	files, err := history.ReadDirs(fs.Args()...)
	if err != nil {
		fmt.Fprintln(stderr, "live check:", err)
		return exitUsage
	}
	if err := sf.validate(); err != nil {
		fmt.Fprintln(stderr, "live check:", err)
		return exitUsage
	}
	var mo history.MergeOptions
	var o livecheck.Options
	o.Grace, o.MaxPerCheck = *grace, *maxV
	o.LinSkew, o.LinTimeout = *linSkew, *linTimeout
	if *table != "" || *stream != "" {
		clients, err := awsenv.Load(ctx, awsenv.Settings{Region: a.region, DynamoDBEndpoint: a.dynamoEndpoint, KinesisEndpoint: a.kinesisEndpoint})
		if err != nil {
			fmt.Fprintln(stderr, "live check:", err)
			return exitUsage
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		if *table != "" {
			opened, err := sf.open(*table, clients)
			if err != nil {
				fmt.Fprintln(stderr, "live check:", err)
				return exitUsage
			}
			defer opened.Close()
			store := opened.store
			// A table that is not a lease table (another key schema)
			// would read as rows without leases, and every checkpoint as
			// lost: say what is wrong with it instead.
			if err := store.(engine.TableChecker).CheckTable(ctx); err != nil {
				fmt.Fprintf(stderr, "live check: -table %s: %v\n", *table, err)
				return exitUsage
			}
			l, err := store.ListLeases(ctx, true)
			if err != nil {
				fmt.Fprintf(stderr, "live check: reading the final lease table %s: %v\n", opened.where, err)
				return exitFailed
			}
			o.Final, o.FinalKnown, o.Malformed = l.Leases, true, l.Malformed
			mo.Final = l.Leases
		}
		if *stream != "" {
			shards, err := kinesisstream.New(clients.Kinesis).ListShards(ctx, *stream)
			if err != nil {
				fmt.Fprintf(stderr, "live check: listing the shards of %q: %v\n", *stream, err)
				return exitFailed
			}
			mo.Shards = shards
		}
	}
	m := history.Merge(files, mo)
	rep := livecheck.Check(m, o)
	if len(rep.Lin.Illegal) > 0 {
		// next to the histories
		if err := rep.VisualizeLin(fs.Arg(0)); err != nil {
			fmt.Fprintln(stderr, "live check: Lin visualization:", err)
		}
	}
	fmt.Fprintf(stdout, "live check: %d history files, %d records\n", len(files), len(m.Records))
	if !o.FinalKnown {
		fmt.Fprintln(stdout, "(no -table: checkpoint coverage of the final table not checked)")
	}
	rep.Print(stdout)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonOut, b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "live check: -json:", err)
			return exitFailed
		}
	}
	if rep.Failed() {
		return exitFailed
	}
	return exitOK
}
