package engine

import "time"

// Now is a worker's reading of its own clocks. Mono is a monotonic reading
// (any origin; only differences matter) and is used for every lease
// decision. Wall is used only for AT_TIMESTAMP positions and for humans: the
// engine never compares a wall time written by another worker.
type Now struct {
	Mono time.Duration
	Wall time.Time
}

// NoticeKind is the kind of a Notice to the record processor.
type NoticeKind uint8

// Notices the core hands to the processor of a lease. Initialize, Records,
// ShardEnded and ShutdownRequested carry a Batch id that the processor
// answers with a Done input once it has handled them; LeaseLost and
// CheckpointDone need no answer.
const (
	NoticeInitialize NoticeKind = iota + 1
	NoticeRecords
	NoticeShardEnded
	NoticeLeaseLost
	NoticeShutdownRequested
	NoticeCheckpointDone
)

var noticeNames = [...]string{"", "Initialize", "Records", "ShardEnded", "LeaseLost", "ShutdownRequested", "CheckpointDone"}

func (k NoticeKind) String() string {
	if int(k) < len(noticeNames) {
		return noticeNames[k]
	}
	return "Notice?"
}

// Notice is an effect addressed to the processor of one lease.
type Notice struct {
	Kind  NoticeKind
	Key   string // lease key
	Shard ShardRef
	Batch uint64 // to be answered with InputDone (zero for notices without answer)

	Start        Checkpoint // Initialize: where processing resumes
	Records      []Record   // Records: in sequence order
	MillisBehind int64      // Records
	// Attempt (Records) is 1 on the first delivery of these records and
	// n+1 after n failed deliveries of them in a row.
	Attempt int

	// Reason (ShutdownRequested) says why the lease is let go; To names
	// the worker it is handed to.
	Reason ShutdownReason
	To     string

	Token      uint64     // CheckpointDone: the request's token
	Checkpoint Checkpoint // CheckpointDone: the checkpoint asked for
	Err        error      // CheckpointDone: nil when written, else why not
}

// InputKind is the kind of an Input to the core.
type InputKind uint8

// The inputs the core accepts.
const (
	// InputTick: time has passed; the driver steps the core at or after
	// the WakeAt of the last Ready, and may step it earlier.
	InputTick InputKind = iota + 1
	// InputResult: the Result of an earlier Call.
	InputResult
	// InputDone: the processor has handled the notice Batch of lease Key;
	// Failed asks for the same records to be delivered again, unless
	// Skipped is set too: then the core passes them over as if they had
	// been processed (a failure policy's decision; Reason says which).
	InputDone
	// InputCheckpoint: the processor asks to checkpoint lease Key at
	// Checkpoint; the answer is a CheckpointDone notice with Token.
	InputCheckpoint
	// InputShutdown: drain, checkpoint and release every lease, then stop.
	InputShutdown
	// InputWatch: news of one of the watches Ready.Watch asks for
	// (Input.Watch; see Config.WatchPending).
	InputWatch
)

// Input is an event for the core.
type Input struct {
	Kind   InputKind
	Result Result // InputResult

	Key        string     // InputDone, InputCheckpoint
	Batch      uint64     // InputDone
	Failed     bool       // InputDone
	Skipped    bool       // InputDone with Failed: pass the batch over
	Reason     string     // InputDone with Skipped: the decision, for the trace
	Checkpoint Checkpoint // InputCheckpoint
	Token      uint64     // InputCheckpoint
	Watch      WatchInput // InputWatch
}

// Ready is what the core asks of its driver after a Step: calls to make,
// notices for processors, and when to step it next. Its slices are owned by
// the core and valid until the next Step.
type Ready struct {
	Calls   []Call
	Notices []Notice
	// WakeAt is the monotonic time at which the core wants an InputTick.
	WakeAt time.Duration
	// Stopped is true once a shutdown has completed: every lease is
	// released (or lost) and nothing more will be asked.
	Stopped bool
	// Err is set with Stopped when the worker stopped on an error it
	// cannot recover from (see Worker.Err): a failed start-up check or a
	// stream re-created while it ran.
	Err error
	// Watch lists, sorted, the Pending values whose rows the worker wants
	// pushed to it (Config.WatchPending): its own owner id, and the
	// assigner's (AssignerPending) while it is the assigner. The driver
	// keeps one PendingWatch per value, opens one for a value that joins
	// the list, closes one that leaves it, and reports each through
	// InputWatch: Started once it is established (again), its changes, and
	// Lost when it ends.
	Watch []string
}
