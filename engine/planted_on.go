//go:build shardlease_mutations

package engine

import "github.com/shardlease/shardlease/internal/planted"

// plantedBugs are the bugs a test can plant in a worker through package
// internal/planted: rules of the engine that the simulator cannot break
// from outside. They exist only in builds with the shardlease_mutations tag.
var plantedBugs = map[string]string{
	"validity-from-reply":             "a lease's validity is counted from the reply of its last write, not from its send (KCL's rule)",
	"no-safety-margin":                "the holder acts until its own view of expiry, with no safety margin",
	"parents-unchecked":               "a child shard is processed without reading its parents",
	"steal-acts-at-once":              "a taker acts on a lease taken from another owner at once, without waiting that owner out",
	"resolve-ignores-writer":          "a write of unknown outcome is resolved by the row's contents alone, not its writer: a restarted process takes its predecessor's identical row for its own write",
	"resume-after-sequence":           "a resume at a checkpoint with sub-sequence number 0 reads AFTER its sequence number: the rest of a KPL aggregate whose first user record was checkpointed is lost",
	"compare-sequences-as-strings":    "the worker orders sequence numbers as strings, not as numbers: when a shard's numbers grow by a digit, records are dropped as already delivered and checkpoints rejected or taken for regressions",
	"reread-not-dropped":              "records read again from an iterator at a position already delivered (a new iterator after an expired one, a resume at the checkpoint) are handed to the processor again instead of dropped: a record reaches it twice, the second time after later ones",
	"wait-less-margin":                "a taker (a worker taking leases itself, or the assigner) takes a lease for expired once it stood still the lease duration less the safety margin: the margin is subtracted on both sides, and a holder whose clock runs slow still acts when the taker starts",
	"expiry-by-wall-clock":            "a taker times how long a lease version stood still on its wall clock (stored wall times), not its monotonic one, and acts at once: a wall clock stepped forward takes leases that have not expired",
	"sync-from-eventual-scan":         "shard sync decides from an eventually consistent scan: a scan that shows a finished parent's row deleted but not yet its child's re-creates the parent's lease, which is processed again",
	"release-before-final-checkpoint": "a lease let go for a shutdown or a handoff is released at once, without waiting for the checkpoints its processor asked for at ShutdownRequested: the next owner starts before them",
	"resubscribe-at-latest":           "fan-out: a subscription renewed after its end starts at LATEST, not after the last continuation: records put between two subscriptions are skipped",
	// assignment by an assigner
	"assigner-takes-over-at-once": "a deputy takes the assigner row over as soon as it reads it, without waiting for it to expire: two assigners act at once, and the new one reassigns the old one's leases while it still acts on them",
	"handoff-before-release":      "the assigner moves a lease for balance by assigning it to the receiver at once, not by asking its holder to hand it over: the receiver acts before the holder let go",
	"assigner-early-expiry":       "the assigner takes a lease for expired after half a lease duration standing still, before its holder's own view has expired",
	"untaken-waits-lease":         "the assigner gives an assignment its receiver did not take to another member only once it has stood still for a lease duration, not a few of the receiver's polls: a failover whose first receiver is cut off or dead waits a lease duration more",
	// issue 17: a planted bug for every claim
	"resume-waits":                            "a worker restarted under the same owner id waits a lease duration before it acts on the leases it resumes, as if they were another owner's",
	"assigner-scans-slowly":                   "the assigner scans the table every take interval (a lease duration), not every AssignerScanInterval: it sees a dead holder's last renewal late, and the failover takes longer",
	"expiry-at-scans-only":                    "the assigner assigns an expired lease at its next scan, not at the moment it expires in its view",
	"poll-every-lease-duration":               "a worker reads the rows that wait for it every lease duration, not every PendingPollInterval: assignments and handoffs wait",
	"receiver-waits-out-holder":               "the receiver of an assignment or a handoff waits a lease duration from when it saw the row before it acts, although the previous holder has released it or its view has expired",
	"handoff-release-to-assigner":             "a holder that hands a lease over releases it to the assigner, not to the receiver it was asked to hand it to: the move costs another poll and assignment",
	"deputies-read-slowly":                    "the assigner's deputies read the assigner row every two lease durations, as the other workers do: a dead assigner is replaced late",
	"handoff-request-resets-age":              "a handoff request (which renews nothing) restarts the assigner's timing of the lease: a request that reaches a holder that has just died puts its expiry off by a lease duration",
	"previous-assigner-leases-wait":           "a new assigner does not reassign the leases of the assigner whose expired row it took over at once, but waits a lease duration for them to expire",
	"observation-reset-on-reread":             "a re-read of an unchanged row resets when the worker first saw its version (KCL issue #1803): a lease the assigner reads every scan never expires in its view",
	"balance-spread-one":                      "the assigner moves a lease for balance when the most loaded member holds one more than the least loaded, not two: the move is undone by the next",
	"handoff-counted-for-source":              "the assigner counts a lease being handed over for its holder, not its receiver: the next round moves another lease from the same holder, past the fair share",
	"steal-from-equal":                        "a worker taking leases itself steals from the most loaded worker while that holds only one more than it, not two: steals go back and forth",
	"handoff-refuses-checkpoints":             "a holder handing a lease over refuses the checkpoints its processor asks for at ShutdownRequested: the final checkpoint is lost to the handoff",
	"release-without-shutdown-notice":         "a lease let go for a shutdown or a handoff is released without telling the processor (no ShutdownRequested): it gets no chance to checkpoint",
	"child-at-latest":                         "shard sync creates the leases of children of splits and merges at LATEST, not TRIM_HORIZON: records put to a child before its first read are skipped",
	"descendant-check-dropped":                "shard sync creates a lease for a shard with no row even if a descendant has one: a finished parent whose row was deleted is re-created and read again",
	"delete-before-children-started":          "shard sync deletes a finished parent's row before every child has a row: the next sync sees neither and re-creates the parent",
	"sync-never-abandons":                     "shard sync decides from a round whose scan is older than half a lease duration (a worker paused with its replies held) instead of abandoning it",
	"failed-batch-advances":                   "a batch the processor failed is passed over as if it had been processed: its records are not delivered again",
	"expired-iterator-restarts-at-checkpoint": "after an expired iterator the worker reads again from the lease's stored checkpoint, not after the last record delivered: records reach the processor twice, out of order",
	"adopt-renews-validity":                   "a holder that adopts the assigner's handoff request (or its cancellation) starts its validity anew, although that write renewed nothing: it acts past the assigner's view of its expiry",
	"assigner-leases-unbound":                 "the assigner acts on its own leases until their own expiry, not only while its assigner row is valid: its successor reassigns them at once while it still acts",
	"deposed-take-acted":                      "a take sent by an assigner that has lost its row is acted on when its reply comes, although its successor may have reassigned the lease (soak seed 16892)",
	"previous-assigner-any-writer":            "a new assigner reassigns at once every lease its predecessor's owner id holds, not only those written by the process whose row expired: a lease taken later is reassigned while held (swarm seed 57)",
	"condition-failed-is-lost":                "a holder's write whose condition failed is taken for a lost lease without the re-read that finds its own version (KCL's hole: an SDK retry of an applied write read as a lost lease)",
	"ghost-ignored":                           "a write found applied by a re-read counts its validity from its own send, not from an earlier attempt at the same version that may be the one that landed",
	"take-ignores-handoff-from":               "a worker taking leases itself acts at once on a lease released before its thief acted (handoffFrom set), while the previous holder may still act",
	"handoff-timeout-ignored":                 "a holder handing a lease over waits for its processor however long it takes, instead of releasing anyway after half a lease duration: the lease stays being handed over",
	"write-while-resolving":                   "a holder sends its next write of a lease (a renewal) while the outcome of the last one is still being resolved: two writes expect one version",
	// session renewal (Config.Renewal, session.go)
	"session-margin-ignored":                "a lease bound to a session is acted on until the session's own-view expiry, with no safety margin",
	"session-renew-unconditional":           "a session renewal whose condition failed (the assigner ended the session, or a restart took the row over) is written again over whatever the row holds: the worker keeps its session and acts on leases the assigner reassigned",
	"taker-times-lease-row":                 "the assigner times a session-bound lease by its own row, which renewals no longer change, not by its session row: a live holder's leases are reassigned a lease duration after their last checkpoint",
	"restart-keeps-session":                 "a take of a lease already bound to a session keeps that binding instead of binding it to the taker's session: a restart under the same owner id resumes its predecessor's leases under the predecessor's session, which observers take for ended",
	"session-end-skipped":                   "the assigner reassigns the leases of a session that stood still without ending the session first: a renewal its scan did not see keeps the old holder acting",
	"session-loss-keeps-leases":             "a worker whose session was lost keeps its bound leases and its session identity and takes the session row back: it acts on leases the assigner has reassigned",
	"session-start-unchecked":               "a worker in session renewal starts on a table that a KCL worker uses (a lease row renewed without a writer nonce): the KCL worker takes its leases for expired while it acts",
	"superseded-assigner-take-keeps-leases": "a worker whose take of the assigner row of unknown outcome is found superseded keeps its leases: if the take applied, the worker that took the row over reassigns them at once as the previous assigner's while they are acted on",
	"session-poll-resets-sighting":          "the assigner's reads of session rows between its scans time a session from the latest read, not from the first sight of its version: a dead worker's session never expires while the assigner polls it",
	"session-still-ignored":                 "the assigner hands leases to a member whose session row has stood still in its fresh reads (dead, paused or cut off): a dead worker's leases wait a lease duration more for a receiver that never takes them",
	"released-waits-index":                  "the assigner learns of the leases a shutting-down worker released to it only from the pending index, not from the session poll that shows the session released: each such planned move waits for the index's lag and a poll more",
	"refused-waits-watch":                   "a worker that refused an assignment before it could take leases (its session not yet checked) reads what waits for it again only at a poll, which a watch that is up never makes: the assignment waits until the assigner gives it away",
	"scan-taker-skips-session-end":          "a worker that takes leases itself takes a lease of a session that stood still without ending the session first: a renewal its scan did not see keeps the old holder acting",
	"lost-session-take-acted":               "a take bound to a session that was lost while the take was in flight is acted on when its reply (or its resolving read) comes: the assigner times the lease by the lost session and reassigns it while it is acted on",
	"assigner-ghost-ignored":                "a take of the assigner row that a re-read found not applied, which may still land, binds nothing: if it lands, the worker that takes the row over reassigns at once the leases its writer wrote, while the worker, which never knew it held the row, acts on them",
	"stale-session-view-taken":              "a worker that takes leases itself with eventually consistent scans takes a session-bound lease it cannot link to its session row, unfenced: a stale view of a session row a restart took over makes a live holder's lease look expired",
	"session-still-ignores-renewals":        "the assigner leaves out of its receivers a member whose session row stands still or was ended even when the member's own lease rows renew or it says hello (per lease, beside a session row an earlier process of its owner id left): the member is left out of the balance for good",
	// soak findings of session renewal's latency (T2, B1), each a world
	// of sim/regress_latency_test.go
	"resolve-waits-backoff":            "a resolving read that failed during an outage of the table waits out its backoff after the table answers again: the row it concerns (an assignment waiting for its receiver) stays unresolved for seconds more",
	"session-check-waits-lease":        "a worker in session renewal whose start-up check found rows of workers without a writer nonce scans again only a lease duration later, not at the assigner's pace: after the assigner took a dead KCL worker's rows over, the leases given to the new worker wait for that scan",
	"cap-ignores-handoffs":             "the assigner does not count, against a member's MaxLeasesForWorker, the leases on their way to it by a handoff (its own, or asked of their holder): the member is given more than it may take, and the leases over its cap wait for its other leases to go",
	"startup-scan-retry-slow":          "a worker whose first scan in assigned mode failed scans again only a renew interval later: the leases assigned to it meanwhile wait",
	"handoff-release-waits-backoff":    "a holder whose handoff reached its deadline sends the release only after the backoff of its last throttled write: the receiver waits, and nobody processes the shard",
	"doomed-assign-counted":            "the assigner counts an assignment in flight for its receiver even when a later scan shows the row moved past the version it expects (so it fails): a balance move in the next round goes the wrong way, and is undone",
	"auto-keeps-session":               "a worker of the default renewal (RenewalAuto) whose start-up scan shows a KCL worker's lease row keeps to session renewal: it waits for the row to stand still, or refuses to start beside a live KCL worker, instead of renewing per lease",
	"orphan-take-once":                 "a worker that takes back a row bound to its session that it does not hold forgets it once the take is sent: a take that fails (a throttle) leaves the lease bound to a live session that nobody acts for",
	"assigner-still-itself":            "the assigner applies to itself the rule that gives no lease to a member whose session row stands still or was released: an assigner of the default renewal that renews per lease (it released the session row it took at start) gives itself no lease",
	"previous-session-revives":         "a new assigner counts the session row of the process whose expired assigner row it took over as a sign of life: that process, dead or cut off, is given leases it never takes, and each waits a lease duration for another receiver",
	"released-marks-successor-leaving": "the assigner marks a worker leaving at every read of a lease its previous process released for its shutdown, after the hello of the process that replaced it: while the released lease stands, the restarted worker is never a member again, and a lease no other member may take (at their cap) is never assigned",
	"lost-assigner-take-reads-late":    "a worker whose take of the assigner row failed its condition (another worker took the row first) reads the row again only at its next monitor read: it times the new assigner from a later version, and if that one dies, the row is taken over late",
	"owed-poll-skips-busy-rows":        "with its pending watch up, a worker (or the assigner) whose read of the index shows a row while a read or a write of that row is in flight skips the row for good: nothing shows it again (a worker's new hello, read while the delete of its last one is in flight, keeps the worker out of the members)",
	"first-sight-shows-life":           "the assigner counts the owner of a row it sees for the first time as alive: a new assigner process (a restart) lists the owner ids of long-dead processes among its members and deputies, and the live deputies it inherited read the assigner row at a non-deputy's pace",
	"final-checkpoint-waits-backoff":   "a holder whose processor let a handoff go in time sends its final checkpoint, and the release after it, only once the backoff of a failed write of the row is over, even past the handoff's deadline: the receiver waits, and nobody processes the shard",
	"expired-never-back-to-owner":      "the assigner never gives an expired lease back to the member whose lease it was, even when every other member is at its cap: the lease stands unowned for as long as that lasts",
	"superseded-session-unfenced":      "a worker that takes leases itself from eventually consistent scans never reads a session row strongly: a lease bound to a session whose row later processes took and ended is never shown free, its dead owner is counted among the live workers, and the takers keep to a share that leaves leases unowned",
	"kcl-owners-members":               "the assigner counts the owner of a lease row renewed without a writer nonce (a KCL worker's) as a live member: it lists it among the deputies of the assigner row and gives it leases, which a KCL worker never takes, so the assigner's failover and the assignments wait",
	"balance-beside-stale-member":      "the assigner balances while a row held by a live member (its other rows renew, or it says hello) stands expired in its view, as a scan whose reply came late shows it: the loads count that row for nobody, and the move is undone once a fresh scan shows it renewed",
	"orphans-unread":                   "rows bound to a worker's session that it does not hold (a take that landed after it gave it up, a lease lost while its row still names the session) are never read again: nobody acts on them while the session lives",
	// Bugs that only a named test sees (TestTestsCatchPlantedBugs runs
	// that test with the bug planted and requires it to fail).
	"config-margin-unchecked":        "configuration: a safety margin too small for the drift bound is accepted",
	"malformed-reported-every-scan":  "a malformed row of the table is reported at every scan, not once per key",
	"unproven-row-ended":             "a row without the stream's identity is taken for the stream's without the listing's proof: rows of another stream that shares the table may be ended or deleted",
	"goodbye-unsaid":                 "a worker that shuts down in assigned mode holding nothing leaves without its leaving row: the assigner counts it a member until its last hello is 1.5 lease durations old, and may give it a lease that nobody takes",
	"leaving-assigner-listed":        "an assigner that shuts down releases its row with itself still in the member list: its successor inherits it as a live member and may give it the leases it has just released",
	"every-worker-scans":             "every worker, not only the assigner (and a deputy that has seen it stand still), scans the table every AssignerScanInterval: reads per shard-hour grow with the workers",
	"expiry-drops-renewal-in-flight": "a holder whose lease reaches its own-view expiry with a renewal in flight gives the lease up at once: if the renewal applied, the row stays renewed by a worker that no longer holds it, and the failover waits a lease duration more",
	// Bugs of the production driver (Consumer): only the driver simulation
	// (package sim/driversim) runs it; the simulator drives the core alone.
	"driver-handoff-unchecked": "driver: the runner hands a batch to the processor without checking the lease's act-until time, so a batch delivered before a pause reaches the processor after the lease has moved",
	"driver-ack-on-stop":       "driver: a checkpoint requested while the consumer stops is acknowledged to the processor as written, though it never reached the table",
}

func init() {
	planted.Register(plantedBugs, func(cfg any, name string) { cfg.(*Config).planted = name })
}

// bug reports whether the planted bug name is active in this worker.
func (w *Worker) bug(name string) bool { return w.cfg.planted == name }

// bug reports whether the planted bug name is active in this
// configuration (its validation).
func (c *Config) bug(name string) bool { return c.planted == name }

// bug reports whether the planted driver bug name is active in this
// consumer.
func (c *Consumer) bug(name string) bool { return c.planted == name }
