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

// bug reports whether the planted driver bug name is active in this
// consumer.
func (c *Consumer) bug(name string) bool { return c.planted == name }
