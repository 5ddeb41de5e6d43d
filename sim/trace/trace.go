// Package trace is the plain history format that the simulator writes and
// the invariant checkers read: one Record per event, in true-time order.
// It depends on no simulator internals, so histories recorded from real
// processes (cmd/live) can be checked by the same code.
package trace

import (
	"errors"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Kind is the kind of a Record. Values 1..31 are the engine's own
// TraceKinds (engine.TraceKind), reported by a worker through
// engine.Config.Trace; the others are events of the world around it.
type Kind uint8

// World events (the engine's kinds occupy the low values).
const (
	// KindSend: a store write left the worker (T is the true send time).
	// Reason classifies it: take, renew, checkpoint, release, create, delete.
	KindSend Kind = 40 + iota
	// KindApply: a store write reached the table at T. Outcome says
	// whether it applied ("ok") or why not. RowOwner/Counter/Checkpoint is
	// the row written, ExpOwner/ExpCounter the condition the worker sent
	// (Unconditional when it sent none).
	KindApply
	// KindReply: a call's result reached the worker at T (Sent, Applied are
	// its true send and apply times; Applied is -1 if it never applied).
	KindReply
	// KindReceived: the processor received a batch of Count records of
	// Key, First..Last (FirstSub, LastSub their sub-sequence numbers).
	KindReceived
	// KindDone: the processor answered a notice (Reason "ok" or "failed").
	KindDone
	// KindCheckpointAck: the processor learnt the outcome of its
	// checkpoint request (Outcome "ok" means acknowledged).
	KindCheckpointAck
	// KindInitialized: the processor was told to start Key at Checkpoint.
	KindInitialized
	// KindNotice: any other notice to the processor (Reason names it).
	KindNotice
	// KindPut: a producer put one record into shard Key with sequence
	// number First; Count > 1 when it is a KPL aggregate of Count user
	// records (sub-sequence numbers 0..Count-1), 0 or 1 otherwise.
	KindPut
	// KindShardCreated: shard Key was created with parents Parent and
	// Parent2 (either may be empty).
	KindShardCreated
	// KindShardClosed: shard Key was closed at ending sequence Last.
	KindShardClosed
	// KindTrim: retention removed Count records First..Last of shard Key.
	// A Reason that starts with NotOwedPrefix marks records that no reader
	// owes the processor (before where a lease began), not lost ones.
	KindTrim
	// KindShardExpired: the closed shard Key left the stream's listing.
	KindShardExpired
	// KindFault: an injected fault or its end (Reason describes it).
	KindFault
	// KindProcStart: process Proc started as Owner in worker slot Worker.
	KindProcStart
	// KindProcStop: process Proc ended (Reason: crash, exit).
	KindProcStop
	// KindPhase: the run entered a phase (Reason: chaos, heal, end).
	KindPhase
	// KindCallEnd: a store write whose outcome its caller never learnt
	// (it timed out, its 5xx or throttled retry left it open, or its
	// process died) can no longer reach the table: every attempt of it
	// has been resolved, by T. Only the simulator, which sees the network,
	// records it; the linearizability check then knows the write took
	// effect, if at all, before T.
	KindCallEnd
	// KindWatch: a pending watch of process Proc on the rows that wait for
	// Reason (engine.Ready.Watch) at the store: Outcome "open" (the store
	// registered it: it reports every write after revision Counter),
	// "started" (its process was told), "change" (it reported the write of
	// Key at revision Counter), "lost" (it could not resume after revision
	// Counter), "closed" (its process no longer wants it).
	KindWatch
	// KindIndex: a write that left row Key waiting for Reason applied at
	// the store's revision Counter (what the watches of Reason report).
	KindIndex
)

var worldNames = [...]string{"send", "apply", "reply", "received", "done", "checkpoint-ack",
	"initialized", "notice", "put", "shard-created", "shard-closed", "trim", "shard-expired",
	"fault", "proc-start", "proc-stop", "phase", "call-end", "watch", "index"}

func (k Kind) String() string {
	if k >= KindSend && int(k-KindSend) < len(worldNames) {
		return worldNames[k-KindSend]
	}
	if k > 0 && k < KindSend {
		return engine.TraceKind(k).String()
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind returns the Kind named s.
func ParseKind(s string) (Kind, bool) {
	for k := Kind(1); k < KindSend+Kind(len(worldNames)); k++ {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// FromEngine returns the Kind of an engine trace event.
func FromEngine(k engine.TraceKind) Kind { return Kind(k) }

// Engine kinds, re-exported for readability of the checkers.
const (
	LeaseCreated        = Kind(engine.TraceLeaseCreated)
	LeaseAcquired       = Kind(engine.TraceLeaseAcquired)
	Acting              = Kind(engine.TraceActing)
	LeaseRenewed        = Kind(engine.TraceLeaseRenewed)
	StoppedActing       = Kind(engine.TraceStoppedActing)
	LeaseLost           = Kind(engine.TraceLeaseLost)
	LeaseReleased       = Kind(engine.TraceLeaseReleased)
	LeaseDeleted        = Kind(engine.TraceLeaseDeleted)
	Delivered           = Kind(engine.TraceDelivered)
	CheckpointRequested = Kind(engine.TraceCheckpointRequested)
	CheckpointWritten   = Kind(engine.TraceCheckpointWritten)
	CheckpointRejected  = Kind(engine.TraceCheckpointRejected)
	ShardEnded          = Kind(engine.TraceShardEnded)
	ChildStarted        = Kind(engine.TraceChildStarted)
	MalformedRow        = Kind(engine.TraceMalformedRow)
	Resolved            = Kind(engine.TraceResolved)
	CallSent            = Kind(engine.TraceCallSent)
	Started             = Kind(engine.TraceStarted)
	Failed              = Kind(engine.TraceFailed)
	ForeignRow          = Kind(engine.TraceForeignRow)
	ShardUnverified     = Kind(engine.TraceShardUnverified)
	BatchFailed         = Kind(engine.TraceBatchFailed)
	BatchSkipped        = Kind(engine.TraceBatchSkipped)
	Assigned            = Kind(engine.TraceAssigned)
	HandingOver         = Kind(engine.TraceHandingOver)
	WallRead            = Kind(engine.TraceWallRead)
	RenewalFallback     = Kind(engine.TraceRenewalFallback)
)

// Outcomes of calls (Record.Outcome).
const (
	OutcomeOK              = "ok"
	OutcomeCondition       = "condition-failed"
	OutcomeThrottled       = "throttled"
	OutcomeNotFound        = "not-found"
	OutcomeExpiredIterator = "expired-iterator"
	OutcomeInUse           = "in-use"             // ErrResourceInUse (fan-out)
	OutcomeEnded           = "subscription-ended" // ErrSubscriptionEnded (fan-out)
	OutcomeTimeout         = "timeout"            // no reply within the call timeout
	OutcomeTransient       = "transient"          // a 5xx: may or may not have applied
	OutcomeError           = "error"              // any other error
)

// EngineOutcome names the outcome of err when it is nil or one of the
// engine's sentinel errors (engine.ErrConditionFailed, ErrThrottled,
// ErrNotFound, ErrExpiredIterator); ok is false for any other error, which
// the caller classifies (timeout, transient, error) by what it knows.
func EngineOutcome(err error) (outcome string, ok bool) {
	switch {
	case err == nil:
		return OutcomeOK, true
	case errors.Is(err, engine.ErrConditionFailed):
		return OutcomeCondition, true
	case errors.Is(err, engine.ErrThrottled):
		return OutcomeThrottled, true
	case errors.Is(err, engine.ErrNotFound):
		return OutcomeNotFound, true
	case errors.Is(err, engine.ErrExpiredIterator):
		return OutcomeExpiredIterator, true
	case errors.Is(err, engine.ErrResourceInUse):
		return OutcomeInUse, true
	case errors.Is(err, engine.ErrSubscriptionEnded):
		return OutcomeEnded, true
	}
	return "", false
}

// NotOwedPrefix starts the Reason of a KindTrim of records that no reader
// owes the processor: those before an iterator at LATEST or AT_TIMESTAMP
// where a lease begins, or checkpointed by the application that wrote a
// legacy table. The checkers treat them as trimmed but not as lost.
const NotOwedPrefix = "not owed: "

// SkippedPrefix starts the Reason of a KindTrim of a closed shard that no
// reader will ever read (a lease at LATEST began below it: the engine
// skips a closed shard without a lease under LATEST). Its records, First
// to Last (none if empty), are not owed, and its children may start
// without it.
const SkippedPrefix = NotOwedPrefix + "skipped: "

// Write classes (Record.Reason of KindSend and KindApply).
const (
	WriteTake       = "take"
	WriteRenew      = "renew"
	WriteCheckpoint = "checkpoint"
	WriteRelease    = "release"
	WriteShardEnd   = "shard-end"
	WriteCreate     = "create"
	WriteDelete     = "delete"
	// WriteAssign is the assigner's conditional write on a row it does not
	// hold (an assignment, a handoff request or its cancellation);
	// WriteHello a worker's hello row (see engine.Config.Assignment).
	WriteAssign = "assign"
	WriteHello  = "hello"
)

// Record is one event of a run. Times are true times since the start of
// the run; Mono and Wall are the worker's own readings when it has one.
// Only the fields that matter to a Kind are set.
type Record struct {
	Seq    uint64        // position in the history, from 1
	T      time.Duration // true time
	Kind   Kind
	Worker int32 // worker slot, -1 for none
	Proc   int32 // process (one incarnation of a worker), -1 for none
	// FirstSub is the sub-sequence number of First and LastSub (below) that
	// of Last, when they name user records of KPL aggregates (0 otherwise):
	// a position in a shard is (sequence, sub-sequence). They sit in what
	// would be padding, so they cost the Record no bytes.
	FirstSub int32
	Owner    string
	Mono     time.Duration // the worker's monotonic reading
	Wall     int64         // the worker's wall reading, Unix nanoseconds

	Key        string
	Counter    int64
	Checkpoint engine.Checkpoint
	First      string
	Last       string
	Count      int
	Reason     string
	Previous   string

	// Calls (KindSend, KindApply, KindReply). KindReceived and KindDone
	// carry the engine's batch number in Call (0: not recorded).
	Call          uint64
	Op            engine.Op
	Sent          time.Duration
	Applied       time.Duration
	Outcome       string
	Fault         string // the network or service fault that shaped the call
	ExpOwner      string
	ExpCounter    int64
	Unconditional bool
	LastSub       int32 // see FirstSub
	RowOwner      string

	// KindShardCreated.
	Parent  string
	Parent2 string
}

// IsAct reports whether r is an act on a shard in the sense of S1: the
// worker starts acting, a batch reaches its processor, or a checkpoint
// write leaves it.
func (r *Record) IsAct() bool {
	switch r.Kind {
	case Acting, KindReceived:
		return true
	case KindSend:
		return r.Reason == WriteCheckpoint || r.Reason == WriteShardEnd
	}
	return false
}
