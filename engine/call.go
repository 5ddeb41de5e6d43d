package engine

import (
	"context"
	"fmt"
	"time"
)

// Op is the kind of a store or stream call.
type Op uint8

// The calls the core asks its driver to make.
const (
	OpListLeases Op = iota + 1
	OpGetLease
	OpCreateLease
	OpUpdateLease
	OpDeleteLease
	OpListShards
	OpGetIterator
	OpGetRecords
	OpDescribeStream
	OpListPending
)

var opNames = [...]string{"", "ListLeases", "GetLease", "CreateLease", "UpdateLease", "DeleteLease", "ListShards", "GetShardIterator", "GetRecords", "DescribeStream", "ListPending"}

func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	if n, ok := o.fanOutName(); ok {
		return n
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// IsStore reports whether the call goes to the lease table.
func (o Op) IsStore() bool { return o >= OpListLeases && o <= OpDeleteLease || o == OpListPending }

// IsWrite reports whether the call writes the lease table.
func (o Op) IsWrite() bool { return o >= OpCreateLease && o <= OpDeleteLease }

// Call is an effect: one call the driver must make to the lease store or
// the stream, and answer with a Result carrying the same ID. Only the fields
// of its Op are set.
type Call struct {
	ID uint64
	Op Op

	Key        string // GetLease, DeleteLease; ListPending: who
	Lease      Lease  // CreateLease, UpdateLease (the row to write)
	Expect     Expect // UpdateLease, DeleteLease
	Consistent bool   // ListLeases

	Stream   string   // ListShards, GetIterator, DescribeStream
	Shard    string   // GetIterator
	Position Position // GetIterator
	Iterator string   // GetRecords
	Limit    int      // GetRecords

	// Fan-out calls (see FanOutStream): Stream and, for Subscribe, Shard
	// and Position are set too.
	ConsumerName string        // Describe-, Register-, DeregisterConsumer
	ConsumerARN  string        // Subscribe
	Subscription string        // NextEvent, Unsubscribe
	Wait         time.Duration // NextEvent
}

func (c Call) String() string {
	switch c.Op {
	case OpListLeases:
		return fmt.Sprintf("#%d ListLeases(consistent=%v)", c.ID, c.Consistent)
	case OpGetLease:
		return fmt.Sprintf("#%d GetLease(%s)", c.ID, c.Key)
	case OpListPending:
		return fmt.Sprintf("#%d ListPending(%s)", c.ID, c.Key)
	case OpCreateLease:
		return fmt.Sprintf("#%d CreateLease(%s)", c.ID, c.Lease)
	case OpUpdateLease:
		return fmt.Sprintf("#%d UpdateLease(%s if owner=%q counter=%d)", c.ID, c.Lease, c.Expect.Owner, c.Expect.Counter)
	case OpDeleteLease:
		return fmt.Sprintf("#%d DeleteLease(%s if owner=%q counter=%d)", c.ID, c.Key, c.Expect.Owner, c.Expect.Counter)
	case OpListShards:
		return fmt.Sprintf("#%d ListShards(%s)", c.ID, c.Stream)
	case OpDescribeStream:
		return fmt.Sprintf("#%d DescribeStream(%s)", c.ID, c.Stream)
	case OpGetIterator:
		return fmt.Sprintf("#%d GetShardIterator(%s/%s %s %s)", c.ID, c.Stream, c.Shard, c.Position.Type, c.Position.Sequence)
	case OpGetRecords:
		return fmt.Sprintf("#%d GetRecords(limit=%d)", c.ID, c.Limit)
	}
	if s, ok := c.fanOutString(); ok {
		return s
	}
	return fmt.Sprintf("#%d %s", c.ID, c.Op)
}

// Result answers a Call: its ID and outcome. Err is nil on success, or an
// error that errors.Is matches against ErrConditionFailed, ErrThrottled,
// ErrNotFound or ErrExpiredIterator (fan-out calls also ErrResourceInUse
// and ErrSubscriptionEnded); any other error is an unknown outcome
// (a timeout, a lost reply, a 5xx), which for a write means it may have
// applied.
type Result struct {
	ID  uint64
	Err error

	Lease    Lease       // GetLease
	Listing  Listing     // ListLeases, ListPending (Leases)
	Shards   []Shard     // ListShards
	Iterator string      // GetIterator
	Page     RecordsPage // GetRecords
	Stream   StreamInfo  // DescribeStream

	Consumer     StreamConsumer    // DescribeConsumer, RegisterConsumer
	Subscription string            // Subscribe
	Event        SubscriptionEvent // NextEvent
}

// Execute makes call c against store and stream and returns its Result. It
// is what a driver does with each Call; the simulator does the same through
// its virtual network.
func Execute(ctx context.Context, store LeaseStore, stream Stream, c Call) Result {
	r := Result{ID: c.ID}
	switch c.Op {
	case OpListLeases:
		r.Listing, r.Err = store.ListLeases(ctx, c.Consistent)
	case OpGetLease:
		r.Lease, r.Err = store.GetLease(ctx, c.Key)
	case OpListPending:
		if pi, ok := store.(PendingIndex); ok {
			r.Listing.Leases, r.Err = pi.ListPending(ctx, c.Key)
		} else {
			r.Err = fmt.Errorf("list pending %s: %w", c.Key, ErrNoIndex)
		}
	case OpCreateLease:
		r.Err = store.CreateLease(ctx, c.Lease)
	case OpUpdateLease:
		r.Err = store.UpdateLease(ctx, c.Expect, c.Lease)
	case OpDeleteLease:
		r.Err = store.DeleteLease(ctx, c.Key, c.Expect)
	case OpListShards:
		r.Shards, r.Err = stream.ListShards(ctx, c.Stream)
	case OpGetIterator:
		r.Iterator, r.Err = stream.GetShardIterator(ctx, c.Stream, c.Shard, c.Position)
	case OpGetRecords:
		r.Page, r.Err = stream.GetRecords(ctx, c.Iterator, c.Limit)
	case OpDescribeStream:
		r.Stream, r.Err = stream.DescribeStream(ctx, c.Stream)
	default:
		if c.Op.IsFanOut() {
			return executeFanOut(ctx, stream, c)
		}
		r.Err = fmt.Errorf("execute: unknown op %d", c.Op)
	}
	return r
}
