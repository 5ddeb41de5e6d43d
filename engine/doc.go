// Package engine is shardlease's lease engine for Amazon Kinesis: one owner
// per shard across many workers, checkpoints that survive handoffs, and
// parents processed before children across shard splits and merges.
//
// # The decision core
//
// A Worker holds one worker's decisions. It is deterministic and does no
// I/O: a driver feeds it Inputs with Step (ticks, results of calls,
// processor answers and checkpoint requests, shutdown) and carries out the
// Ready it returns (calls to the LeaseStore and the Stream, Notices for
// record processors, the time of the next wake-up). The production driver
// is Consumer; the simulator in sim/ runs the very same Worker in virtual
// time against the fakes in fakes/.
//
// # The lease rules
//
//   - Every write to a row is a compare-and-swap on its (owner, counter),
//     and increments the counter. At most one write per held lease is in
//     flight, so the version each write expects is always known.
//   - A worker takes a lease that is unowned, or that it has seen stand
//     still (same owner and counter) for LeaseDuration on its own monotonic
//     clock. It never compares a timestamp written by another worker, and
//     what it has seen survives re-reads of an unchanged row.
//   - A holder's lease is valid for LeaseDuration from the time the last
//     applied write was sent (not from its reply); the holder stops acting
//     (no deliveries, no checkpoints) SafetyMargin before that. Consumer
//     checks that bound again at the moment it hands records to a processor
//     (see Worker.ActingUntil), so a process paused in between does not
//     deliver them late. A renewal still in flight at that expiry keeps the
//     lease, not acted on, until its outcome is known (or its own validity
//     would end): if it applied, the holder acts again. A lease being handed
//     over or released at shutdown is given up at that expiry instead.
//   - A taker acts on a lease taken from another owner only once that
//     owner's own view has expired: LeaseDuration after the taker first saw
//     the version it replaced. A stolen lease therefore never has two
//     acting owners, and balancing costs one lease duration per move.
//   - A write whose outcome is unknown (timeout, lost reply) or whose
//     condition failed (also what an SDK retry of an applied write
//     returns) is resolved by a strongly consistent re-read, never taken
//     blindly as a loss or a win. The re-read looks for the write's own
//     version, named by Lease.Writer, a per-process nonce: a process
//     restarted under the same owner id never mistakes its predecessor's
//     identical row for its own write.
//   - Checkpoints are fenced by the lease version and only move forward;
//     sequence numbers compare numerically.
//   - A child shard is processed only after a strongly consistent read
//     shows every parent at SHARD_END (or gone). A finished lease is
//     deleted only once every child has a started lease, and shard sync
//     never creates a lease for a shard that has a descendant lease,
//     deciding from one strongly consistent scan and a shard listing taken
//     after it, so a finished parent is never re-created.
//   - Children of splits and merges start at TRIM_HORIZON; the configured
//     initial position applies only to shards that existed when the
//     application first started.
//   - Shard sync is idempotent; one sync leader (the smallest owner id in
//     its view) runs it every ShardSyncInterval, the others as a backup
//     BackupSyncFactor times less often, and any worker at once when a
//     shard it holds ends.
//
// # Enhanced fan-out
//
// With Config.Consumer FanOut a worker reads its shards with
// SubscribeToShard instead of GetRecords (the Stream must implement
// FanOutStream). Before it touches the table it finds or registers the
// consumer Config.ConsumerName on every stream and waits until it is
// ACTIVE; workers that start together all try, and the losers describe the
// winner's consumer. A subscription is a call like any other (Subscribe,
// then NextEvent for each event, Unsubscribe when it is given up), so the
// simulator runs the same decisions:
//
//   - the next event is asked for only once the processor has finished
//     the previous batch (backpressure: the stream holds the rest back);
//   - a subscription is opened and read only while the worker acts on the
//     lease, and events reach the processor under the same act-until rule
//     and hand-off check as GetRecords pages;
//   - when a subscription ends (every 5 minutes on Kinesis) the worker
//     subscribes again AFTER_SEQUENCE_NUMBER the last
//     ContinuationSequenceNumber, so a lease that started at LATEST loses
//     nothing in between;
//   - ErrResourceInUse (another subscription of the consumer and shard
//     less than 5 s old, as the previous holder's is in a hand-off) and a
//     subscription taken over are retried after at least a second;
//   - the last event of a closed shard names its children (ChildShards).
//
// # Assignment by an assigner
//
// By default (Config.Assignment = AssignmentAssigner) one worker, the
// assigner, hands leases out; the others never scan the table. The assigner
// is elected through the table with the lease rules above (the assigner row
// is a lease), so a dead assigner is replaced like a dead holder. It scans
// the table every AssignerScanInterval, observes every lease as a taker
// would, and at the moment a lease expires in its own view writes an
// assignment: the row becomes unowned with Pending naming the worker that
// is to take it. Every other worker reads only the rows whose Pending names
// it (the store's PendingIndex, a sparse index: eventually consistent),
// reads each strongly consistently, and takes it with a conditional write.
// With a store that pushes what waits for a worker (PendingWatcher, an etcd
// store; Config.WatchPending) it reads the index once when its watch
// starts, then only the rows the watch reports, and polls nothing.
// A balance move is a cooperative handoff: the assigner asks the holder
// (HandoffTo), which finishes its in-flight batch, lets its processor
// checkpoint (ShutdownRequested) and releases the lease to the receiver,
// which acts at once. A graceful shutdown releases to the assigner, which
// hands out at once; a leaving assigner releases its leases to the least
// loaded other members, and its assigner row once they are released. The rules that keep this safe:
//
//   - Every assignment, handoff request and cancellation is a
//     compare-and-swap on the version the assigner saw. An expired lease's
//     holder has stopped acting by the assigner's rule of expiry, a released
//     one by its own release; neither depends on who assigns, so two workers
//     that both believe they assign are harmless.
//   - The assigner acts on its own leases only while its assigner row is
//     valid in its own view and drops them when it is not; the worker that
//     takes an expired assigner row over may reassign the rows that process
//     wrote at once.
//   - No lease stays "being handed over": a holder that dies midway expires
//     like any other, a request its holder does not act on within two lease
//     durations is cancelled, a holder whose processor does not let go within
//     half a lease duration releases anyway.
//   - Reads per shard-hour do not grow with workers: the assigner's scans,
//     and index reads that return only the rows that wait.
//
// AssignmentScan keeps the older way (every worker scans and takes leases
// itself). Both kinds of worker can run against one table at once.
//
// # Tables
//
// Rows use KCL's attribute names (see Lease), so KCL tooling can read a
// shardlease table, and a KCL table can be adopted (see KeyFormat).
package engine
