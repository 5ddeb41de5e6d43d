//go:build shardlease_mutations

package engine

import "github.com/shardlease/shardlease/internal/planted"

// plantedBugs are the bugs a test can plant in a worker through package
// internal/planted: rules of the engine that the simulator cannot break
// from outside. They exist only in builds with the shardlease_mutations tag.
var plantedBugs = map[string]string{
	"validity-from-reply":    "a lease's validity is counted from the reply of its last write, not from its send (KCL's rule)",
	"no-safety-margin":       "the holder acts until its own view of expiry, with no safety margin",
	"parents-unchecked":      "a child shard is processed without reading its parents",
	"steal-acts-at-once":     "a taker acts on a lease taken from another owner at once, without waiting that owner out",
	"resolve-ignores-writer": "a write of unknown outcome is resolved by the row's contents alone, not its writer: a restarted process takes its predecessor's identical row for its own write",
	"resume-after-sequence":  "a resume at a checkpoint with sub-sequence number 0 reads AFTER its sequence number: the rest of a KPL aggregate whose first user record was checkpointed is lost",
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
