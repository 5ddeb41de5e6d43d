package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults match the field (KCL): a 10 s lease renewed every 3 s, shard
// sync every 10 s.
const (
	DefaultLeaseDuration     = 10 * time.Second
	DefaultRenewInterval     = 3 * time.Second
	DefaultShardSyncInterval = 10 * time.Second
	DefaultMaxClockDrift     = 0.01
	DefaultGetRecordsLimit   = 10000
	DefaultIdleTimeBetween   = time.Second
	DefaultMaxStealAtOnce    = 1
)

// StreamConfig names one stream a worker consumes.
type StreamConfig struct {
	Name string
	// InitialPosition is where leases of the shards that exist when the
	// application first starts begin: TrimHorizon, Latest (default) or
	// AtTimestamp. Children of splits and merges always begin at their
	// first record.
	InitialPosition string
	// Timestamp is the AT_TIMESTAMP position.
	Timestamp time.Time
}

// Config configures one worker. The zero value of every duration and limit
// means its default; Owner and Streams are required. NewWorker rejects an
// invalid configuration with an error naming the broken rule.
type Config struct {
	// Owner is the worker's id, written into leaseOwner. A process
	// restarted under the same id resumes its leases at once; two live
	// processes must never share an id.
	Owner string
	// Streams are the streams consumed. More than one requires
	// MultiStream.
	Streams []StreamConfig
	// MultiStream keys rows "stream:shardId". LegacyStream names the
	// stream that rows keyed by shard id alone belong to (a KCL or
	// single-stream table being adopted); in single-stream mode it defaults
	// to the one stream.
	MultiStream  bool
	LegacyStream string

	// LeaseDuration is how long a lease stays valid after a renew is sent,
	// and how long a taker must see a lease's counter stand still before
	// taking it.
	LeaseDuration time.Duration
	// RenewInterval is the time between renewals of held leases.
	RenewInterval time.Duration
	// SafetyMargin is how long before its own view of expiry a holder
	// stops acting (no delivery, no checkpoint). Default: LeaseDuration/10,
	// or the minimum MaxClockDrift demands if larger.
	SafetyMargin time.Duration
	// MaxClockDrift bounds the rate drift between any two workers' clocks
	// (0.01 = 1%).
	MaxClockDrift float64
	// TakeInterval is the time between table scans that look for leases to
	// take. Default: LeaseDuration.
	TakeInterval time.Duration
	// ShardSyncInterval is the time between shard syncs (ListShards,
	// lease creation, cleanup of finished leases) on the sync leader;
	// other workers sync BackupSyncFactor times less often, and any
	// worker at once when a shard it holds ends.
	ShardSyncInterval time.Duration
	// MaxLeasesForWorker caps the leases held; 0 means no cap.
	MaxLeasesForWorker int
	// MaxLeasesToStealAtOnce bounds how many leases one balancing round
	// steals (from the most-loaded worker). Negative disables stealing.
	MaxLeasesToStealAtOnce int
	// Assignment is how leases reach workers: AssignmentAssigner (the
	// default) elects one assigner through the table, which observes every
	// lease, hands out the expired and unowned ones and moves leases for
	// balance by cooperative handoff, while the others read only what
	// waits for them (the store's PendingIndex); AssignmentScan has every
	// worker scan the table and take leases itself (KCL 2.x's way). A
	// worker whose store has no pending index works as AssignmentScan. Both
	// kinds of worker may run against one table at once (a rolling deploy
	// from one to the other): every write is conditional either way.
	Assignment string
	// Renewal is how a worker keeps its leases valid. RenewalPerLease
	// renews every held lease's own row every RenewInterval, as KCL does,
	// and is what a table shared with KCL workers must use;
	// RenewalSession renews one session row per worker
	// (SessionKey(Owner)) every RenewInterval instead, binds every lease
	// it takes to that session (Lease.Session), and writes a lease's row
	// only when its ownership, checkpoint or handoff changes. The
	// assigner then times session rows, so one observation fails over
	// every lease of a dead worker. RenewalSession needs AssignmentAssigner
	// and refuses to start beside a live KCL worker (ErrSessionRefused);
	// see docs/design/sessions.md. RenewalAuto, the default with
	// AssignmentAssigner, renews by session unless the worker's start-up
	// scan shows a lease row held by a writer without a writer nonce (a
	// KCL worker, live or left behind, or a shardlease older than session
	// renewal: a table shared with or adopted from KCL), and then per
	// lease for the life of the process (TraceRenewalFallback says so).
	// With AssignmentScan the default, and RenewalAuto, is per lease.
	Renewal string
	// AssignerScanInterval is the time between the assigner's scans of
	// the table (AssignmentAssigner). Default: LeaseDuration/3, and
	// LeaseDuration/2 in session renewal, where the assigner times leases
	// by the session rows it reads every PendingPollInterval between its
	// scans (RenewalAuto: LeaseDuration/2 until the worker renews per
	// lease, then LeaseDuration/3).
	AssignerScanInterval time.Duration
	// PendingPollInterval is the time between a worker's reads of what
	// waits for it (AssignmentAssigner). Default: LeaseDuration/8.
	PendingPollInterval time.Duration
	// WatchPending makes a worker in assigned mode learn what waits for it
	// from a watch its driver keeps (Ready.Watch, InputWatch) instead of
	// polling the pending index every PendingPollInterval: it reads the
	// index once whenever a watch starts, then only the rows a watch
	// reports, so a planned move costs the watch's latency and the take.
	// Consumer sets it when its Store implements PendingWatcher (an etcd
	// store does); a driver of its own sets it only if it keeps the
	// watches.
	WatchPending bool
	// BalanceBy is what the assigner balances: BalanceLeases (the
	// default: lease counts) or BalanceThroughput (the KB per second each
	// holder reports with its renewals, Lease.ThroughputKBps).
	BalanceBy string
	// GetRecordsLimit is the most records one GetRecords asks for.
	GetRecordsLimit int
	// IdleTimeBetweenReads is the pause after an empty GetRecords.
	IdleTimeBetweenReads time.Duration
	// Consumer is how held shards are read: Polling (GetRecords, the
	// default) or FanOut (SubscribeToShard, see FanOut).
	Consumer ConsumerMode
	// ConsumerName is the stream consumer a FanOut worker registers (or
	// finds registered) on every stream it consumes; every worker of the
	// application uses the same name. Required with FanOut.
	ConsumerName string
	// DeregisterConsumer makes a FanOut worker deregister its consumer
	// when it shuts down. Off by default: the consumer is shared by every
	// worker of the application, and deregistering it under workers still
	// running ends their subscriptions.
	DeregisterConsumer bool
	// ConsistentTakeScans makes the take scans strongly consistent. They
	// need not be: every take is a compare-and-swap on the row version, so
	// a stale scan can delay a take but never make a wrong one.
	ConsistentTakeScans bool
	// Seed seeds the worker's jitter and the Lease.Writer of its writes.
	// Every process must have its own seed, including a process restarted
	// under the same owner id: the seed is what tells its writes from its
	// predecessor's. The same seed gives the same decisions. Consumer
	// draws a random seed when it is 0.
	Seed uint64
	// AdoptUnverifiedRows lets a worker adopt a lease table that has no
	// stream marker yet (see KeyFormat.MarkerKey) although some of its
	// unfinished rows are of shards the stream neither lists nor descends
	// from. Without it such a table is refused at start with a
	// StreamMismatchError, because the rows may be another stream's (a typo
	// in a stream name, two applications sharing a table). Set it once, to
	// adopt a KCL table whose shards have expired; the rows it cannot
	// prove are the stream's are still never ended or deleted.
	AdoptUnverifiedRows bool
	// Trace, if set, receives every trace event.
	Trace Tracer
	// DeliverCorruptAggregates hands a record that starts with the KPL's
	// magic bytes but fails its MD5 check or does not parse to the
	// processor as it was read (as the KCL does), instead of dropping it
	// (the default). Either way a trace event reports it
	// (TraceAggregateUndecoded, TraceAggregateDropped), which Consumer
	// logs at WARN. Set it when producers other than the KPL write binary
	// payloads: one in 2^32 random payloads starts with the magic bytes.
	DeliverCorruptAggregates bool

	// planted is a known bug planted by a test (internal/planted); it can
	// be set only in builds with the shardlease_mutations tag.
	planted string
	// scanIntervalDefaulted: AssignerScanInterval was left to its default
	// (a worker that leaves RenewalAuto for per-lease renewal takes the
	// per-lease one)
	scanIntervalDefaulted bool
}

// The ways leases reach workers (Config.Assignment) and what an assigner
// balances (Config.BalanceBy).
const (
	AssignmentAssigner = "assigner"
	AssignmentScan     = "scan"
	RenewalPerLease    = "lease"
	RenewalSession     = "session"
	RenewalAuto        = "auto"
	BalanceLeases      = "leases"
	BalanceThroughput  = "throughput"
)

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = DefaultRenewInterval
	}
	if c.MaxClockDrift == 0 {
		c.MaxClockDrift = DefaultMaxClockDrift
	}
	if c.SafetyMargin == 0 {
		c.SafetyMargin = c.LeaseDuration / 10
		if m := MinSafetyMargin(c.LeaseDuration, c.MaxClockDrift); m > c.SafetyMargin {
			c.SafetyMargin = m
		}
	}
	if c.TakeInterval == 0 {
		c.TakeInterval = c.LeaseDuration
	}
	if c.ShardSyncInterval == 0 {
		c.ShardSyncInterval = DefaultShardSyncInterval
	}
	if c.MaxLeasesToStealAtOnce == 0 {
		c.MaxLeasesToStealAtOnce = DefaultMaxStealAtOnce
	}
	if c.GetRecordsLimit == 0 {
		c.GetRecordsLimit = DefaultGetRecordsLimit
	}
	if c.Assignment == "" {
		c.Assignment = AssignmentAssigner
	}
	if c.Renewal == "" || c.Renewal == RenewalAuto {
		c.Renewal = RenewalAuto
		if c.Assignment != AssignmentAssigner {
			c.Renewal = RenewalPerLease
		}
	}
	if c.AssignerScanInterval == 0 {
		c.AssignerScanInterval = c.LeaseDuration / 3
		c.scanIntervalDefaulted = true
		if c.Renewal == RenewalSession || c.Renewal == RenewalAuto {
			// liveness comes from the session polls (session_poll.go):
			// the scans only refresh the lease rows
			c.AssignerScanInterval = c.LeaseDuration / 2
		}
	}
	if c.PendingPollInterval == 0 {
		c.PendingPollInterval = c.LeaseDuration / 8
	}
	if c.BalanceBy == "" {
		c.BalanceBy = BalanceLeases
	}
	if c.IdleTimeBetweenReads == 0 {
		c.IdleTimeBetweenReads = DefaultIdleTimeBetween
	}
	if !c.MultiStream && c.LegacyStream == "" && len(c.Streams) == 1 {
		c.LegacyStream = c.Streams[0].Name
	}
	for i := range c.Streams {
		if c.Streams[i].InitialPosition == "" {
			c.Streams[i].InitialPosition = Latest
		}
	}
	return c
}

// MinSafetyMargin is the smallest safety margin that keeps a holder from
// acting after a taker, whose clock may run faster by up to drift, has seen
// the lease stand still for leaseDuration: leaseDuration·2·drift/(1+drift).
func MinSafetyMargin(leaseDuration time.Duration, drift float64) time.Duration {
	return time.Duration(float64(leaseDuration)*2*drift/(1+drift)) + time.Millisecond
}

// Validate returns c with defaults applied, or an error naming every rule
// it breaks.
func (c Config) Validate() (Config, error) {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Owner == "" {
		bad("Owner is required: every worker needs an id unique among live processes")
	}
	if len(c.Streams) == 0 {
		bad("Streams is required: name at least one stream")
	}
	if len(c.Streams) > 1 && !c.MultiStream {
		bad("MultiStream is required to consume %d streams from one lease table", len(c.Streams))
	}
	seen := map[string]bool{}
	for _, s := range c.Streams {
		if err := validStreamName(s.Name); err != nil {
			bad("stream %q: %v", s.Name, err)
		}
		if seen[s.Name] {
			bad("stream %q is named twice", s.Name)
		}
		seen[s.Name] = true
		switch s.InitialPosition {
		case TrimHorizon, Latest:
		case AtTimestamp:
			if s.Timestamp.IsZero() {
				bad("stream %q: InitialPosition AT_TIMESTAMP needs a Timestamp", s.Name)
			}
		default:
			bad("stream %q: InitialPosition %q is not TRIM_HORIZON, LATEST or AT_TIMESTAMP", s.Name, s.InitialPosition)
		}
	}
	if c.LegacyStream != "" && !seen[c.LegacyStream] {
		bad("LegacyStream %q is not one of the consumed streams", c.LegacyStream)
	}
	if c.LeaseDuration < 0 || c.RenewInterval < 0 || c.SafetyMargin < 0 || c.TakeInterval < 0 ||
		c.ShardSyncInterval < 0 || c.IdleTimeBetweenReads < 0 {
		bad("durations must not be negative")
	}
	if c.LeaseDuration < 3*c.RenewInterval {
		bad("LeaseDuration (%v) must be at least 3 x RenewInterval (%v), so that two renewals can fail before a lease expires", c.LeaseDuration, c.RenewInterval)
	}
	if c.MaxClockDrift < 0 || c.MaxClockDrift >= 0.5 {
		bad("MaxClockDrift (%v) must be in [0, 0.5)", c.MaxClockDrift)
	}
	if min := MinSafetyMargin(c.LeaseDuration, c.MaxClockDrift); c.SafetyMargin < min && !c.bug("config-margin-unchecked") {
		bad("SafetyMargin (%v) must be at least LeaseDuration·2·MaxClockDrift/(1+MaxClockDrift) = %v for a drift bound of %v", c.SafetyMargin, min, c.MaxClockDrift)
	}
	if c.SafetyMargin >= c.LeaseDuration-c.RenewInterval {
		bad("SafetyMargin (%v) must be less than LeaseDuration - RenewInterval (%v), or the holder stops acting before its next renewal", c.SafetyMargin, c.LeaseDuration-c.RenewInterval)
	}
	if c.MaxLeasesForWorker < 0 {
		bad("MaxLeasesForWorker (%d) must not be negative (0 means no cap)", c.MaxLeasesForWorker)
	}
	switch c.Assignment {
	case AssignmentAssigner, AssignmentScan:
	default:
		bad("Assignment %q is not %q or %q", c.Assignment, AssignmentAssigner, AssignmentScan)
	}
	switch c.Renewal {
	case RenewalPerLease, RenewalAuto:
	case RenewalSession:
		if c.Assignment != AssignmentAssigner {
			bad("Renewal %q needs Assignment %q: a scan-mode taker would have to time every session row itself, and steals from a session-bound holder are not safe", RenewalSession, AssignmentAssigner)
		}
	default:
		bad("Renewal %q is not %q, %q or %q", c.Renewal, RenewalAuto, RenewalPerLease, RenewalSession)
	}
	switch c.BalanceBy {
	case BalanceLeases, BalanceThroughput:
	default:
		bad("BalanceBy %q is not %q or %q", c.BalanceBy, BalanceLeases, BalanceThroughput)
	}
	if c.AssignerScanInterval < 0 || c.AssignerScanInterval > c.LeaseDuration/2 {
		bad("AssignerScanInterval (%v) must be in (0, LeaseDuration/2 = %v]: failover waits for the assigner's scans", c.AssignerScanInterval, c.LeaseDuration/2)
	}
	if c.PendingPollInterval < 0 || c.PendingPollInterval > c.LeaseDuration/2 {
		bad("PendingPollInterval (%v) must be in (0, LeaseDuration/2 = %v]", c.PendingPollInterval, c.LeaseDuration/2)
	}
	if c.GetRecordsLimit < 1 || c.GetRecordsLimit > 10000 {
		bad("GetRecordsLimit (%d) must be in [1, 10000]", c.GetRecordsLimit)
	}
	errs = append(errs, c.fanOutErrors()...)
	if len(errs) > 0 {
		return c, fmt.Errorf("invalid engine configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

func validStreamName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("a stream name has 1 to 128 characters")
	}
	if strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) >= 0 {
		return fmt.Errorf("a stream name has only letters, digits, '_', '.' and '-'")
	}
	return nil
}
