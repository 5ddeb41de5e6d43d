// Package etcdstore is the lease table on an etcd v3 cluster: Store
// implements engine.LeaseStore, engine.PendingIndex (a pending index kept
// in the same transactions as the rows, so never behind them),
// engine.PendingWatcher (an etcd watch on it: assignments are pushed to
// their workers) and engine.TableChecker.
//
// # Layout
//
// One application's table is every key under one prefix (New: "/shardlease/app/"
// for example), which no other application may share:
//
//	<prefix>rows/<lease key>                       the row, encoding 1 (below)
//	<prefix>pending/<escaped who>/<lease key>      one entry per row whose pending is who; its value is the row's counter
//	<prefix>schema                                 {"format":"shardlease-etcd","encoding":1} (EnsurePrefix)
//
// who is path-escaped (url.PathEscape), so that no worker's directory of
// the index holds another's. CheckTable refuses a prefix that holds any
// other key: another application's rows are named plainly, never read as
// malformed leases. Rows of another stream under the prefix are the
// engine's to refuse (its stream marker, see engine.KeyFormat.MarkerKey),
// as in a DynamoDB table.
//
// # Row encoding
//
// A row's value is a JSON object with the attribute names of the DynamoDB
// table (and KCL: see engine.Lease), empty optional fields left out, and
// "v", the encoding version:
//
//	{"v":1,"leaseKey":"shardId-000000000001","leaseOwner":"w1","leaseCounter":7,
//	 "checkpoint":"49590338271490256608559692538361571095921575989136588802",
//	 "checkpointSubSequenceNumber":3,"parentShardId":["shardId-000000000000"],
//	 "leaseWriter":"1x2y3z","streamId":"arn:...@1700000000000","pending":"w2"}
//
// Encoding 1 is the only one so far. A value this package cannot decode (not
// JSON, a field of the wrong type or unknown, a missing leaseKey,
// leaseCounter or checkpoint, a leaseKey other than the row's key, an
// encoding newer than Encoding) is a malformed row: listed in
// engine.Listing.Malformed with the reason, an error for GetLease, a failed
// condition for a write; never fatal, never deleted or rewritten.
//
// # Conditional writes
//
// Every write is one Txn. A create compares the row's create revision with
// 0. An update or delete must apply exactly when the stored row has the
// owner and counter of the engine's Expect; etcd compares whole values and
// revisions, not fields of a value, so the Txn compares the row's mod
// revision with that of a version v already read with that owner and
// counter (the store remembers the last version of each row it read or
// wrote; without one, or with one that does not match, it reads the row
// first), and its Else branch reads the row at the Txn's revision:
//
//	Txn If(ModRevision(rows/k) = v.rev) Then(put rows/k, delete pending/<v.pending>/k, put pending/<new>/k) Else(get rows/k)
//
// This is equivalent to comparing owner and counter. (1) If the Txn
// applies, the row's mod revision is v.rev at the Txn's revision; every
// write of a key gives it a mod revision no other version of any key has,
// so the row is then version v, which has Expect's owner and counter: the
// write applied under the condition. (2) The store reports
// engine.ErrConditionFailed only when a linearizable read (the first read,
// or the Else branch, which reads at the same revision as the failed
// compare) showed no row, a malformed one, or one whose owner or counter
// differ: at that read's point in the history the condition was false.
// (3) When the Else branch shows a row with Expect's owner and counter at
// another revision (rewritten with the same owner and counter: a writer
// other than shardlease, which increments the counter with every write, or
// a row deleted and created again), the store compares that revision in a
// new Txn, up to maxRounds times; after that it reports an error that is no
// sentinel (and has not written). So each call takes effect, if at all, at
// one Txn, exactly when owner and counter matched there: the
// engine.LeaseStore contract, with the compare on revisions doing what a
// compare on the two fields would. The same Txn moves the row's pending
// index entry from v's pending to the new one, which is exact because v is
// the version the Txn replaces. TestCompareEquivalence runs random
// operations through stores with stale memories against a reference that
// compares owner and counter.
//
// A Txn whose reply is lost (a timeout, a leader change) has an unknown
// outcome: the error matches no sentinel and the engine re-reads the row.
// The etcd client retries only requests it knows were not sent, so a
// write never applies twice; if one did, its compare would fail.
//
// # Reads
//
// GetLease, ListPending and ListLeases(consistent=true) are linearizable
// reads. ListLeases(consistent=false) is serializable: the member the
// client talks to answers from its own state, which may lag the cluster:
// one consistent snapshot of the past, never a torn one. Scans read
// WithPageSize keys per range read, each page at the revision of the
// first, so every row comes once.
//
// # Errors
//
// Errors are mapped to the engine's sentinels: "too many requests" is
// engine.ErrThrottled, refused credentials or permissions
// engine.ErrAccessDenied, a missing row engine.ErrNotFound; an unreachable
// cluster is named with its endpoints. Credentials never appear in errors.
package etcdstore
