package engine

import (
	"fmt"
	"slices"
	"strings"
)

// Lease is one row of the lease table. Its fields map one to one to the
// attribute names KCL uses, so KCL tooling can read a shardlease table and
// shardlease can adopt a KCL table:
//
//	leaseKey                      Key
//	leaseOwner                    Owner (absent or empty: unowned)
//	leaseCounter                  Counter
//	checkpoint                    Checkpoint.Sequence
//	checkpointSubSequenceNumber   Checkpoint.SubSequence
//	ownerSwitchesSinceCheckpoint  OwnerSwitches
//	parentShardId                 Parents (string set)
//	childShardIds                 Children (string set)
//	startingHashKey               StartingHashKey
//	endingHashKey                 EndingHashKey
//	handoffFrom                   HandoffFrom (shardlease's own; KCL ignores it)
//	leaseWriter                   Writer (shardlease's own; KCL ignores it)
//	streamId                      StreamID (shardlease's own; KCL ignores it)
//	pending                       Pending (shardlease's own; KCL ignores it)
//	handoffTo                     HandoffTo (shardlease's own; KCL ignores it)
//	throughputKBps                ThroughputKBps (KCL 3.x's name)
//	leaseSession                  Session (shardlease's own; KCL ignores it)
//
// Every write shardlease makes to a row increments Counter and is
// conditional on the Counter (and Owner) it read, so (Key, Counter) names
// one version of a row and every write is a compare-and-swap.
type Lease struct {
	Key             string
	Owner           string
	Counter         int64
	Checkpoint      Checkpoint
	OwnerSwitches   int64
	Parents         []string
	Children        []string
	StartingHashKey string
	EndingHashKey   string
	// HandoffFrom names the previous owner while a handoff is pending: the
	// row was taken from an owner that may still be acting (a lease stolen
	// for balance), and its new owner has not yet waited that owner out.
	// The new owner clears it with its first write after it starts acting.
	// Whoever takes or resumes a row that carries it, even unowned (released
	// before its owner ever acted), must wait a full lease duration before
	// acting, as for a live owner's row.
	HandoffFrom string
	// Writer names the process that wrote this version of the row: a
	// nonce each worker draws from its Config.Seed. A write of unknown
	// outcome is resolved by re-reading the row and finding its own
	// version there; the owner id alone cannot tell this process's write
	// from the identical one a predecessor under the same owner id (a
	// crashed process, restarted) wrote. Empty in rows others wrote.
	Writer string
	// StreamID is the identity (StreamInfo.Identity: ARN and creation
	// time) of the stream incarnation whose shard the row is. The engine
	// stamps it on the rows it creates and takes; rows written by KCL or
	// by an earlier shardlease have none. A row that names another
	// identity than its stream's is never taken, ended or deleted.
	StreamID string
	// Pending names who must act next on the row when leases are handed
	// out by an assigner (Config.Assignment): the worker an assignment is
	// for (it takes the row), the owner asked to hand the lease over to
	// HandoffTo (it checkpoints and releases it to that worker), or
	// AssignerPending (the assigner must assign it). Stores index it
	// (PendingIndex): a worker finds its work there without scanning.
	Pending string
	// HandoffTo names the worker the owner is asked to hand the lease over
	// to (a planned move: balance, scale-in), and the worker a release
	// hands it to.
	HandoffTo string
	// ThroughputKBps is the rate at which the holder read the shard, in
	// KB per second, reported with its writes; the assigner can balance by
	// it (Config.BalanceBy).
	ThroughputKBps float64
	// Session names the session (its holder's Writer nonce) the lease is
	// bound to in session renewal (Config.Renewal): while it is set, the
	// lease is valid for its holder while that session is (its row,
	// SessionKey(Owner), renewed), its own row is not renewed, and an
	// observer times the session row, not this one. Empty: renewed per
	// lease.
	Session string
}

// Clone returns a deep copy of l.
func (l Lease) Clone() Lease {
	l.Parents = slices.Clone(l.Parents)
	l.Children = slices.Clone(l.Children)
	return l
}

// Equal reports whether l and m are the same row version with the same
// contents.
func (l Lease) Equal(m Lease) bool {
	return l.Key == m.Key && l.Owner == m.Owner && l.Counter == m.Counter &&
		l.Checkpoint == m.Checkpoint && l.OwnerSwitches == m.OwnerSwitches &&
		slices.Equal(l.Parents, m.Parents) && slices.Equal(l.Children, m.Children) &&
		l.StartingHashKey == m.StartingHashKey && l.EndingHashKey == m.EndingHashKey &&
		l.HandoffFrom == m.HandoffFrom && l.Writer == m.Writer && l.StreamID == m.StreamID &&
		l.Pending == m.Pending && l.HandoffTo == m.HandoffTo && l.ThroughputKBps == m.ThroughputKBps && l.Session == m.Session
}

// Validate reports a malformed row: an empty key, a negative counter or an
// invalid checkpoint.
func (l Lease) Validate() error {
	if l.Key == "" {
		return fmt.Errorf("lease row without leaseKey")
	}
	if l.Counter < 0 {
		return fmt.Errorf("lease %s: negative leaseCounter %d", l.Key, l.Counter)
	}
	if err := l.Checkpoint.Validate(); err != nil {
		return fmt.Errorf("lease %s: %w", l.Key, err)
	}
	return nil
}

// String returns a short human form of the row.
func (l Lease) String() string {
	owner := l.Owner
	if owner == "" {
		owner = "-"
	}
	return fmt.Sprintf("%s{owner=%s counter=%d checkpoint=%s}", l.Key, owner, l.Counter, l.Checkpoint)
}

// Expect is the condition of a conditional write: the row must exist with
// this Owner ("" means unowned) and Counter.
type Expect struct {
	Owner   string
	Counter int64
}

// ExpectOf returns the condition that matches row l exactly.
func ExpectOf(l Lease) Expect { return Expect{Owner: l.Owner, Counter: l.Counter} }

// ShardRef names one shard of one stream.
type ShardRef struct {
	Stream string
	Shard  string
}

func (r ShardRef) String() string { return r.Stream + "/" + r.Shard }

// KeyFormat maps shards to lease keys and back.
//
// A multi-stream table keys rows "stream:shardId". A single-stream table
// keys rows by shard id alone, as KCL does; such rows belong to
// LegacyStream, which is how a table written by KCL or by a single-stream
// deployment is adopted when the application moves to several streams.
type KeyFormat struct {
	// MultiStream makes new rows use "stream:shardId" keys.
	MultiStream bool
	// LegacyStream is the stream that rows keyed by shard id alone belong
	// to. In single-stream mode it is the one stream.
	LegacyStream string
}

// Key returns the lease key of a new row for ref. Rows of the legacy
// stream keep bare shard-id keys even in a multi-stream table, so that
// workers of a single-stream deployment still running during a migration
// and the new ones agree on one row per shard.
func (f KeyFormat) Key(ref ShardRef) string {
	if !f.MultiStream || ref.Stream == f.LegacyStream {
		return ref.Shard
	}
	return ref.Stream + ":" + ref.Shard
}

// Parse returns the shard a lease key names. ok is false for keys that
// belong to no stream this format knows (a row of a "stream:shard" form in a
// single-stream table, or a bare shard id without a LegacyStream) and for
// the table's marker rows (see MarkerKey).
func (f KeyFormat) Parse(key string) (ref ShardRef, ok bool) {
	if IsReserved(key) {
		return ShardRef{}, false
	}
	if i := strings.LastIndexByte(key, ':'); i >= 0 {
		if !f.MultiStream {
			return ShardRef{}, false
		}
		return ShardRef{Stream: key[:i], Shard: key[i+1:]}, key[:i] != "" && key[i+1:] != ""
	}
	if f.LegacyStream == "" {
		return ShardRef{}, false
	}
	return ShardRef{Stream: f.LegacyStream, Shard: key}, true
}
