package engine

import (
	"context"
	"errors"
)

// Errors a LeaseStore or Stream returns, wrapped or as they are; the engine
// tests for them with errors.Is. Any other error is taken as an unknown
// outcome: a write that returned it may or may not have applied.
var (
	// ErrConditionFailed: a conditional write found the row in another
	// state than the one it expected (or, for a create, found the row).
	// Note that an SDK retry of a write that had already applied also ends
	// in this error; the engine resolves it by re-reading the row.
	ErrConditionFailed = errors.New("condition failed")
	// ErrThrottled: the call was rejected before it applied (DynamoDB
	// ProvisionedThroughputExceeded, Kinesis throughput exceeded). A store
	// whose client retries must not return it for a write of which an
	// earlier attempt may have applied (a lost reply, then a throttled
	// retry): that outcome is unknown.
	ErrThrottled = errors.New("throttled")
	// ErrNotFound: the row, table, stream or shard does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExpiredIterator: a shard iterator is older than the stream allows.
	ErrExpiredIterator = errors.New("shard iterator expired")
)

// LeaseStore is the lease table. Implementations: engine.MemStore (one
// process), fakes.LeaseTable (simulation), dynamostore.Store (DynamoDB).
//
// Every write is conditional. A store must apply each call atomically and
// report ErrConditionFailed when the condition does not hold.
type LeaseStore interface {
	// ListLeases returns every row of the table, all pages. With consistent
	// false the store may return rows that are stale by a bounded lag.
	// Rows that cannot be decoded are returned in Listing.Malformed, not as
	// an error.
	ListLeases(ctx context.Context, consistent bool) (Listing, error)
	// GetLease returns the row with the given key by a strongly consistent
	// read, or an error wrapping ErrNotFound.
	GetLease(ctx context.Context, key string) (Lease, error)
	// CreateLease writes l if no row with its key exists, else fails with
	// ErrConditionFailed.
	CreateLease(ctx context.Context, l Lease) error
	// UpdateLease replaces the row with key l.Key by l if the stored row
	// has the owner and counter of expect, else fails with
	// ErrConditionFailed (also when the row does not exist).
	UpdateLease(ctx context.Context, expect Expect, l Lease) error
	// DeleteLease removes the row if it has the owner and counter of
	// expect, else fails with ErrConditionFailed.
	DeleteLease(ctx context.Context, key string, expect Expect) error
}

// Listing is the result of a table scan.
type Listing struct {
	Leases    []Lease
	Malformed []MalformedRow
}

// MalformedRow is a row that could not be read as a lease: a missing or
// wrongly typed attribute. It is reported and skipped, never fatal.
type MalformedRow struct {
	Key    string // the leaseKey, if it could be read
	Reason string
}

// TableChecker is implemented by a LeaseStore that can check, before
// anything else, that its table exists and is a lease table
// (dynamostore.Store does: DescribeTable). Consumer.Run calls it at start
// and stops with its error if the table is missing (ErrTableMissing), has
// another key schema (ErrTableSchema) or the credentials are rejected
// (ErrAccessDenied).
type TableChecker interface {
	CheckTable(ctx context.Context) error
}

// ErrNoIndex: the store has no pending index (PendingIndex; for DynamoDB,
// the table lacks its GSI). A worker configured to be handed leases by an
// assigner then takes them itself, as in AssignmentScan.
var ErrNoIndex = errors.New("the lease table has no pending index")

// PendingIndex is implemented by a LeaseStore with an index of the rows'
// Pending attribute (DynamoDB: a sparse global secondary index). With it,
// workers find the rows that wait for them without scanning the table.
type PendingIndex interface {
	// ListPending returns the rows whose Pending is who, sorted by key, as
	// the index shows them: eventually consistent (a row may be missing,
	// or listed after it changed), with at least Key and Pending set. The
	// engine reads a row strongly consistently before it acts on it. A store
	// whose table has no index returns an error wrapping ErrNoIndex.
	ListPending(ctx context.Context, who string) ([]Lease, error)
}
