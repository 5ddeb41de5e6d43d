// Package scenarios is the catalog of named production stories that the
// simulator runs (All, Lookup, Default), and, in its tests, the property
// runs of the engine under rapid.
//
// # The catalog
//
// A Scenario is a name, a story of one or two sentences and the
// sim.Options that tell it: workers, shards, durations, fault classes and
// scripted sim.Actions; Seed is left 0 and the fields left zero are drawn
// from the seed. cmd/simrun runs them by name:
//
//	go run ./cmd/simrun -scenario rolling-deploy -seeds 1-100
//	go run ./cmd/simrun -list
//
// Default ("swarm") is a drawn world under a drawn mix of every fault class.
//
// # Running the tests
//
//	go test ./scenarios/...            # everything, about 1-2 minutes on 2 cores
//	go test -short ./scenarios/...     # fewer rapid cases (checks/5) and one seed per scenario
//	go test ./scenarios -run TestScenarios/rolling-deploy -v   # one story, with its figures
//
// TestScenarios runs every named scenario on seeds 1..3 (-scenarios.seeds=N
// for more), asserts that no invariant breaks and that the story happened
// (a failover, a merge read by two workers, records lost to retention, ...),
// and logs the figures of each run.
//
// TestProperty lets rapid draw the cluster (workers, shards, chaos
// length), the engine knobs that matter (lease duration, renew interval,
// safety margin, clock drift bound, steal limit, lease cap, consistent
// scans), the rate-only fault classes (latency, loss, SDK retries, table
// errors, stale reads, expired iterators, retention, idle shards, slow
// processors, failed batches), the simulation seed, and a timed fault
// schedule ([]sim.Action: crash, restart, pause, partition, clog, clock step,
// shutdown, scale out and in, split, merge, throttling, bursts), the
// assignment mode, and which of the swarm's world draws are on (the lease
// table in etcd, enhanced fan-out, KPL aggregates, boundary seeking, faults
// aimed inside the engine's operations, a targeted fault, the engine
// options beyond the knobs, a combination of rare things: each then drawn
// by the simulator from the case's seed), every draw labeled; no run may
// break an invariant. TestPropertyOutside adds faults
// outside the engine's assumptions (a second process with a worker's owner
// id, drift beyond the bound, long mid-act pauses): those runs may break
// S1 only, which the simulator tolerates. A failing case shrinks to a small
// schedule; the failure prints it one action per line, with the drawn world
// and each violation's excerpt.
//
// TestPropertyDriver does the same with the production driver: rapid draws
// worlds of sim/driversim (real engine.Consumers in virtual time: 1-4
// consumers, 1-6 shards, 20-60 s of chaos, the assignment, polling or
// fan-out, each of the driver's fault classes in or out) and no run may
// break an invariant (every checker of sim/check, and Lin). A driver world
// costs a few tenths of a CPU second, so it runs 12 of them
// (-scenarios.driver.checks=N; 4 with -short). A driver world is not bit
// for bit a function of its draws (goroutines woken at one virtual instant
// run in an order the seed does not fix), so a failing case is run again
// (-scenarios.driver.reruns) and the failure says how often it failed
// again, with its simrun -driver and go test commands.
// TestPlantedBugDriver (-tags shardlease_mutations) runs it against the
// driver's planted bugs, which rapid must catch.
//
// TestPlantedBug runs the same property (safety invariants only, with a
// 40 s healing phase so that a run takes milliseconds) against an engine
// with a planted bug (sim.Options.Mutation: skip-on-resume,
// ignore-second-parent, engine:steal-acts-at-once) and passes only if rapid
// catches it, shrinks the schedule to at most one or two actions, and the
// shrunk case passes without the bug; it logs the shrunk case and leaves no
// fail file behind.
//
// The property runs of go test draw from a fixed rapid seed (TestMain sets
// -rapid.seed unless it is given), so that go test runs the same cases
// every time: a finding fails the change that makes it, not a later run by
// chance. make sweep draws from random seeds (-rapid.seed=0) to explore.
// TestPropertyMutants (make mutants) asks, for every planted bug, whether
// TestProperty, with its seed and checks, catches it.
//
// # Replaying a failure
//
// rapid saves the minimized case of a failure under
// testdata/rapid/<TestName>/ and re-runs it first on every later
// `go test` until the file is deleted. The failure message names the file:
//
//	go test ./scenarios -run '^TestProperty$' -rapid.failfile=testdata/rapid/TestProperty/TestProperty-....fail -v
//
// (-rapid.seed=N, also printed, re-finds the unshrunk case.) The run is a
// pure function of the drawn case, so the replay is exact. Once the bug is
// fixed the file passes; rapid keeps running it first, so a committed fail
// file is a regression case (delete it to drop it). The message also
// prints the `go run ./cmd/simrun -seed ...` line of the same world; the
// command line cannot carry the drawn engine knobs and schedule yet, so use
// the fail file to replay the case itself.
//
// # Sweeps
//
// -rapid.checks=N sets the number of cases per property (default 100):
//
//	go test ./scenarios -run 'Property' -rapid.checks=2000 -timeout 60m
//	go test ./scenarios -run 'TestPropertyDriver$' -scenarios.driver.checks=500 -timeout 60m
//
// -rapid.seed=N starts from a fixed seed, -rapid.shrinktime bounds
// minimization (default 30s), -rapid.nofailfile writes no fail file.
package scenarios
