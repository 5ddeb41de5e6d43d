// Package sim is the deterministic discrete-event simulator of shardlease:
// many virtual workers, each running the engine's decision core
// (engine.Worker) unchanged, against a simulated lease table and Kinesis
// stream, through a virtual network, under a seeded fault schedule; and the
// invariant checks of every run.
//
// One run is a pure function of Options (above all the seed):
//
//	res, err := sim.Run(sim.Options{Seed: 42})
//	fmt.Print(res.Summary())   // drawn world, fault schedule, tier, figures, violations
//	res.OK()                   // no invariant broken
//	res.Replay                 // "go run ./cmd/simrun -seed 42 ..."
//
// Time. True virtual time exists only here: one event queue ordered by
// (time, sequence number), processed by one goroutine; nothing reads the
// real clock, sleeps or starts a goroutine. Each process reads its own
// clocks: a monotonic reading mono = origin + (1+drift)·true and a wall
// reading with an offset, the same drift and steps (NTP jumps forward and
// back). Every random choice comes from PCG streams derived from the seed,
// one per concern (configuration, workload, network, faults, processor,
// engine seeds, clocks).
//
// The world. The lease table and the stream are the fakes of package fakes
// (fakes.LeaseTable, fakes.Kinesis) on the run's true virtual time: the
// table keeps recent row versions so an eventually consistent scan can
// return a stale view (the simulator draws which scans are stale and how
// stale, and reads the table as of that time); the stream has hash-key
// ranges, splits, merges, retention trimming and expiring iterators. The
// simulator's own faults (throttling, 5xx, injected expired iterators)
// are decided before a call reaches a fake, so the fakes' fault hooks stay
// unused. Every call a
// worker emits crosses its link to the table or the stream: latency, request
// loss (not applied, the worker times out), reply loss (applied, the worker
// times out: the ambiguous case), SDK retries of an applied write (the retry
// fails its condition), partitions (one worker or a group, either
// direction), clogging. A call without a reply is answered after the call
// timeout with an error that is none of the engine's sentinels. Processes
// crash and restart (same or new owner id), pause (their inputs wait, their
// clocks run; a mid-act pause also holds the effects of the step in
// progress), shut down gracefully, scale out and in, restart in a rolling
// fashion. Producers put records continuously; each process runs a
// processor that records what it receives, answers every notice after a
// drawn delay, sometimes fails a batch, and checkpoints at drawn points.
//
// Phases. A chaos phase with the drawn fault classes (Options.Faults:
// "swarm", "none" or a list of FaultClasses) is followed by a healing phase
// in which every fault stops and liveness is checked.
//
// Trace and checks. Every engine trace event, every store write sent and
// applied, every reply, every processor event, every put, shard change and
// fault is a trace.Record (package sim/trace), hashed incrementally into the
// run's trace hash and optionally written as JSON Lines. The checkers in
// package sim/check read only those records and the final table, so they
// run as well over histories recorded from real processes. They run
// online: each record is fed to them (and to the linearizability history)
// as it is emitted, and they forget what no later record can change, so
// a run's memory follows the size of its world, not its length. The trace
// itself is kept only when asked for (Options.KeepTrace: a report's
// timeline, a test); a run that breaks an invariant is re-run, exactly, with
// its trace kept to show each violation's excerpt.
//
// Tiers. A run is inside the engine's assumptions unless it drew clock drift
// beyond the configured bound, a mid-act pause longer than the safety
// margin's slack, or two live processes with one owner id. Outside, S1
// violations are tolerated (Result.Tolerated), and so are those of the
// bounds that rest on the same assumptions (the latency invariants T1-T3,
// held to bounds derived from the world: World's timing, check.Timing;
// and B1); S2-S6 must hold regardless.
//
// Planted bugs. Options.Mutation tampers with what workers send or receive
// (see Mutations) so tests can show the checkers catch a broken rule.
// Mutations named "engine:NAME" are planted inside the engine itself; they
// exist only in binaries built with the shardlease_mutations tag (package
// internal/planted), so no production build can enable one.
package sim
