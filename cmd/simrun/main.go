// Command simrun runs the deterministic simulator of shardlease: one
// scenario, one seed or a sweep of seeds (in parallel, each seed on one
// goroutine and a pure function of its seed), against the in-memory fakes
// (no AWS). It prints a short summary (or, with -json, one JSON object per
// seed), writes summary.json and a self-contained report.html, and exits 0
// when every seed passed, 1 when any broke an invariant, 2 on bad usage.
//
//	go run ./cmd/simrun                      # the default sweep (make sim)
//	go run ./cmd/simrun -seed 7              # one seed; replays it exactly
//	go run ./cmd/simrun -scenario rolling-deploy -seeds 1-100 -json
//	go run ./cmd/simrun -list                # the scenarios, fault classes, mutations
package main

import (
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// gcPercent is the GOGC simrun runs with unless the environment sets one: a
// run's live heap is small (a few MB for 10 workers x 100 shards) and its
// garbage short-lived, so the default (100) collects every few MB and the
// collector's marking and write barriers cost about a sixth of a run's CPU
// time; at 400 a 10x100 virtual hour takes 14% less CPU time for a heap
// target five times the live heap (30 MB instead of 18 MB peak RSS).
const gcPercent = 400

// memoryLimit is the soft memory limit simrun runs with unless the
// environment sets GOMEMLIMIT: at GOGC 400 a large world (1,000 workers x
// 10,000 shards holds over a GB) would let its heap grow to five times
// what it holds before collecting; past this limit the collector runs as
// often as it must to stay under it. Small worlds never reach it.
const memoryLimit = 4 << 30

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	// The first SIGINT (Ctrl-C) or SIGTERM stops the sweep: no new seed
	// starts, the seeds in flight finish, and the partial summary and
	// report are written; a second abandons the seeds in flight. Either
	// way simrun exits 130.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	stop, abandon := make(chan struct{}), make(chan struct{})
	go func() {
		<-sigs
		close(stop)
		<-sigs
		close(abandon)
	}()
	os.Exit(runWith(os.Args[1:], os.Stdout, os.Stderr, interrupts{stop: stop, abandon: abandon}))
}
