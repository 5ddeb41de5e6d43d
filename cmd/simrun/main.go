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
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
