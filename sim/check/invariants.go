package check

// Lin names the invariant that the lease table's history is linearizable;
// package linearizability checks it (online in the simulator, with Check
// over cmd/live's histories).
const Lin = "Lin"

// Invariants names every invariant a run checks, with what it says. The
// claims table (docs/claims.md) maps the guarantees the documentation
// states to these names; its test checks that every name it uses is here.
var Invariants = map[string]string{
	S1:  "single owner: no two processes act on one shard at overlapping true times (inside the assumptions)",
	S2:  "fenced writes: no write from a worker that does not hold the row lands",
	S3:  "no lost checkpoint: an acknowledged checkpoint is never rolled back, the stored one never decreases, a new owner starts at or after it",
	S4:  "at-least-once: every record within retention is delivered and finally covered by a checkpoint; nothing is skipped",
	S5:  "parents first: no record of a child shard is delivered before every parent is checkpointed at its end",
	S6:  "order: within a shard, records reach a processor in sequence order",
	L1:  "liveness: after healing every open shard is owned and progresses within the bound, and owners are balanced within one",
	L2:  "real losses: a lease is given up for a failed condition only if the write did not apply",
	G1:  "graceful handoffs: after a planned move the next owner starts at or after what the old processor checkpointed and delivers none of it again",
	G2:  "final checkpoints: a planned release waits for every checkpoint its processor asked for, after asking it to shut down",
	W1:  "no lease decision comes from a step that read the wall clock",
	W2:  "one write per held lease in flight: a holder's next write waits for the last one's outcome",
	W3:  "a pending watch is reliable: it reports every write that leaves a row waiting for its value, in revision order, once each, and nothing else",
	T1:  "failover time: an unplanned failover whose path is undisturbed ends within the bound derived from the world",
	T2:  "planned-move time: a planned move whose path is undisturbed ends within the bound derived from the world",
	T3:  "assigner takeover time: in a steady fleet a dead assigner is replaced within a lease duration and a poll",
	B1:  "no balance churn: in a steady fleet no lease moves twice within MoveQuiet and no move is undone",
	Lin: "the lease table's history is linearizable",
}
