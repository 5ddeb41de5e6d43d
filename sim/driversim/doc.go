// Package driversim runs the production driver, engine.Consumer, in
// virtual time: several real Consumers (goroutines, channels, call pools,
// processor runners, the runner's act-until hand-off check, the injected
// clock) over one shared fakes.LeaseTable and fakes.Kinesis, under the
// faults only the driver can get wrong, and checks the history with every
// checker the simulator runs: sim/check's (check.All: S1-S6, L1 with its
// balance check in worlds whose balancing steals, G1, W1, and whatever
// else check.All comes to run) and Lin, the linearizability of the lease
// table's history.
//
// The simulator (package sim) drives the decision core alone, one Step at
// a time on its own event queue; it never runs the Consumer. This package
// is what does, without any local server: the other place the Consumer
// runs is the live chaos test (cmd/live) against local AWS-compatible
// servers.
//
// # Virtual time
//
// Run must be called inside a testing/synctest bubble (synctest.Test);
// outside one it returns ErrNoBubble. In a bubble the time package runs
// on a fake clock that advances only when every goroutine of the bubble
// is durably blocked, so a run of minutes of virtual time takes a fraction
// of a second. Each Consumer gets the real clock (clock.New of
// github.com/benbjohnson/clock, whose Now, Timer, After and WithTimeout
// are the time package's and context's, and so read the bubble's clock),
// wrapped to model pauses (below). The fakes read time.Now too
// (fakes.ClockFunc), and so does the history: true time is the bubble's
// time, which every consumer shares. There is one true clock and no
// drift, so S1 is exact: two processes may not act on a shard at
// overlapping instants, with no allowance.
//
// The fakes are not safe for concurrent use. Every call of a consumer
// reaches them through its own engine.LeaseStore and engine.Stream
// adapters, which take the world's lock around the fake call (and around
// every record of the history), and are never held while anything waits.
//
// # Faults
//
// A seed draws a world (consumers, shards, lease duration and the other
// engine settings, the fault classes, FaultClasses: each in half the
// worlds, handoff-pause in nine in ten, shutdown in eight) and a schedule of
// timed faults; rates apply per call and per batch during the chaos phase,
// after which every fault stops, every slot without a consumer gets one,
// and a quiet phase long enough for the liveness checks follows.
//
//   - handoff-pause: a stop-the-world pause of a consumer that begins
//     inside the Step in which its core decides to deliver a batch
//     (triggered from the engine's trace event): the loop, the runner that
//     would hand the batch over, the call goroutines and the processors
//     all stop until it ends, often long after the lease has moved.
//   - pause: the same at a drawn instant.
//   - hold: a processor blocked in ProcessRecords on a channel the harness
//     closes when its lease has been acquired by another consumer (or
//     after a drawn time), often while its holder is cut off from the
//     table, so that the lease does move.
//   - partition: a consumer's store calls, stream calls or both fail at
//     once or hang until their deadline.
//   - crash: the consumer's context is cancelled and from then on nothing
//     it does reaches the world (its calls hang until their deadline and
//     fail, its trace and processors are not recorded): a process that
//     died, whose Run winds down unseen. It restarts after a drawn delay,
//     under its owner id or a new one.
//   - shutdown: Run's context is cancelled (a graceful shutdown) while
//     batches and checkpoints are in flight, often with processors that
//     stall past the shutdown deadline; it restarts when Run has returned.
//   - timeouts, lost-replies, throttle, latency: store and stream calls
//     that never return until their deadline (half of the writes among
//     them applied first), writes that apply and then return an error,
//     throttled calls, latencies with a tail past the call timeout.
//   - slow-processor, failing-processor, panicking-processor: processors
//     that take their time (up to twice the lease duration), return
//     errors or panic (in Initialize, ProcessRecords, and for panics
//     ShutdownRequested); with failing processors a
//     world may also give the consumers a FailurePolicy that skips, hands
//     off, retries or panics.
//   - reshard, expired-iterators, scale-out: splits and merges, every
//     shard iterator expiring, a consumer added.
//   - sub-drop: fan-out subscriptions dropped mid-stream.
//
// Leases reach the consumers by assignment by an assigner (the engine's
// default, through the fake table's pending index, which may lag) in six
// worlds in ten, by every consumer scanning and taking in a quarter, and
// by a mixed fleet (a rolling deploy from one to the other) in the rest;
// three worlds in ten read the shards with enhanced fan-out (fakes.Kinesis
// subscriptions, short lifetimes, a NextEvent parked at the service until
// a record, a shard's end, its wait or the lifetime), where the driver runs
// NextEvent outside its call pool. Eventually consistent scans
// (fakes.LeaseTableOptions.StaleLag) are on in half of the worlds.
//
// # Pauses
//
// A paused consumer stops where a real process would be seen to stop: a
// read of its clock waits for the pause to end (the loop reads it before
// every Step, the runner before its hand-off check, a call goroutine after
// each reply), replies wait (a request that had left still reaches the
// table on time: the network does not pause), and its processors wait
// before each step and each checkpoint. A pause therefore never falls
// between the runner's check and its call of the processor: that gap is
// assumed shorter than the safety margin, as the gap between a Step and
// its effects is in the simulator. (A call that waits for a slot of its
// pool when a pause starts does leave after it, as in a real process.)
// What the harness tests is everything else: a pause of any length
// anywhere the driver reads the clock must not let a batch reach a
// processor, or a checkpoint be written, once the lease has moved.
//
// # The history
//
// Everything is recorded in true time, in the trace format the checkers
// read (sim/trace): the engine's trace of each consumer (through
// Config.Trace), each store write as it leaves the consumer (KindSend,
// with the write class the core traced when it sent it), reaches the
// table (KindApply, with its outcome: the harness sees the fake apply it)
// and its reply as the consumer reads it (KindReply; GetRecords and
// NextEvent replies are left out), what each processor is told
// (KindInitialized, KindReceived, KindNotice) and how it answers (KindDone:
// for a batch, and with no records for a notice, as the simulator records
// it), the outcome of its checkpoints (KindCheckpointAck), the records put, the shards created and closed,
// the faults, and every process start and stop. A write whose caller
// will not learn its outcome (a timeout, a 5xx, a broken connection, a
// process that died before it read the reply) ends with a KindCallEnd
// once no attempt of it can reach the table, as in the simulator. The
// final table is captured at the end, in the same instant as the last
// record.
//
// Lin checks the table's calls at the end, over the whole history: a
// paused consumer records a reply only when it wakes, so a read may be
// recorded long after it was answered, and the online check's read lag is
// the longest such delay of the run (see checkLin).
//
// # Determinism
//
// A run is a function of its seed in everything the harness decides: the
// world, the schedule, the puts, each call's latency and fate (drawn from
// a stream named by the consumer, the call's op and key and its rank among
// such calls, not from a stream shared by goroutines), each processor's
// behaviour (a stream per processor). What the seed cannot fix is the
// order in which the bubble runs goroutines woken at one instant: the
// consumers' own goroutines race there (a runner's "held back" answer and
// the loop's next tick, a released processor's checkpoint and a renewal
// timer, a cancelled context and a stopped consumer in one select), and
// the engine may decide differently on one side of such a race than on
// the other. The harness keeps those instants rare (consumers start apart,
// replies that would coincide are separated by a jitter), and
// Result.TraceHash (Options.Hash) hashes the history in a canonical order,
// so that runs that saw the same events at the same times hash alike. Two
// runs of one seed agree on the hash for a little over half the seeds
// (111 of seeds 1-200, measured with -driversim.stats); they always agree
// on the world and the schedule. Verdicts are what must be reproducible:
// on the correct driver no seed may report a violation, and a planted bug
// must be caught within a bound of seeds that holds whatever the races
// (TestDriverBugsCaught); most seeds that catch a planted bug in one run
// catch it in the next (113 of the 125 seeds that caught
// driver-handoff-unchecked in either of two runs of seeds 1-200, before
// the worlds drew more shutdowns and balance checks).
//
// # Planted bugs
//
// Two bugs of the driver are planted through internal/planted (build tag
// shardlease_mutations) in every consumer of a run with Options.Mutation:
// driver-handoff-unchecked (the runner hands a batch to the processor
// without its act-until check: S1) and driver-ack-on-stop (a checkpoint
// asked while the consumer stops is acknowledged though it was never
// written: S3).
//
// # Running it from a command
//
// Run needs a synctest bubble, and synctest.Test needs the *testing.T of
// a test binary: Go 1.26 has no synctest.Run for other programs (the
// bubble's runtime entry point is internal to the standard library). A
// command that runs driver worlds (cmd/simrun -driver and -driver-share)
// builds this package's test binary (Build, go test -c) and runs each
// world in a worker process of it (StartWorker: the binary's TestServe
// with -driversim.serve, Serve), sending a Request as a JSON line and
// reading a Report back; a failing seed is re-run as asked (Request.Reruns)
// and its Report says how often it failed again.
//
// The harness is a package, not a test file, so that other tests (the
// scenarios' rapid property TestPropertyDriver, the planted-bug runs) and
// that command can run the driver the same way; it may import engine,
// fakes, linearizability, sim/trace, sim/check and internal/planted, and
// only tests and cmd/simrun import it.
package driversim
