package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ConsumerMode is how a worker reads the shards it holds (Config.Consumer).
type ConsumerMode uint8

const (
	// Polling reads each shard with GetShardIterator and GetRecords: the
	// default. Every application reading a stream this way shares each
	// shard's 5 GetRecords calls and 2 MB per second.
	Polling ConsumerMode = iota
	// FanOut reads each shard with enhanced fan-out: the worker registers
	// (or finds registered) the stream consumer Config.ConsumerName on
	// every stream, subscribes to each held shard with SubscribeToShard and
	// reads the events the service pushes, with its own 2 MB per second
	// per shard. The Stream must implement FanOutStream.
	FanOut
)

func (m ConsumerMode) String() string {
	switch m {
	case Polling:
		return "polling"
	case FanOut:
		return "fan-out"
	}
	return fmt.Sprintf("ConsumerMode(%d)", uint8(m))
}

// ParseConsumerMode parses "polling" (or "getrecords") and "fan-out" (or
// "efo", "enhanced-fan-out"), in any case.
func ParseConsumerMode(s string) (ConsumerMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "polling", "getrecords", "get-records", "":
		return Polling, nil
	case "fan-out", "fanout", "efo", "enhanced-fan-out":
		return FanOut, nil
	}
	return Polling, fmt.Errorf("consumer mode %q is neither polling nor fan-out", s)
}

// Sentinel errors of the fan-out calls, matched with errors.Is.
var (
	// ErrResourceInUse: a SubscribeToShard of the same consumer and shard
	// succeeded less than 5 seconds ago (what a hand-off race produces),
	// the consumer is not ACTIVE yet, or RegisterStreamConsumer found a
	// consumer of that name already registered. An event stream that ends
	// with it was taken over by a newer subscription.
	ErrResourceInUse = errors.New("resource in use")
	// ErrSubscriptionEnded: the subscription delivers no more events. It
	// ends normally after its lifetime (5 minutes on Kinesis), or early
	// when it is taken over (then the error also wraps ErrResourceInUse)
	// or fails; the consumer subscribes again from the last continuation
	// sequence number.
	ErrSubscriptionEnded = errors.New("subscription ended")
	// ErrSubscriptionExpired is wrapped, with ErrSubscriptionEnded, by the
	// error of a subscription that ended at the end of its lifetime (not
	// taken over, not failed).
	ErrSubscriptionExpired = errors.New("the subscription's lifetime is over")
)

// ConsumerStatus is the status of a registered stream consumer.
type ConsumerStatus string

// The consumer statuses of Kinesis.
const (
	ConsumerCreating ConsumerStatus = "CREATING"
	ConsumerActive   ConsumerStatus = "ACTIVE"
	ConsumerDeleting ConsumerStatus = "DELETING"
)

// StreamConsumer is a consumer registered on a stream for enhanced
// fan-out.
type StreamConsumer struct {
	Name   string
	ARN    string
	Status ConsumerStatus
}

// SubscriptionEvent is one event of a subscription (a
// SubscribeToShardEvent), or, when NextEvent waited without one, an empty
// event: no records, no continuation, End false.
type SubscriptionEvent struct {
	// Records are in sequence order.
	Records []Record
	// Continuation is the ContinuationSequenceNumber: a subscription
	// started AFTER_SEQUENCE_NUMBER it continues after everything this
	// event and earlier ones covered, records or not. Empty on an empty
	// event and on the last event of a closed shard.
	Continuation string
	MillisBehind int64
	// End is true on the last event of a closed shard: ChildShards lists
	// the children and the subscription delivers nothing more.
	End         bool
	ChildShards []Shard
}

// FanOutStream reads shards with enhanced fan-out. Implementations:
// fakes.Kinesis (simulation) and kinesisstream.Stream (Kinesis). A
// subscription is named by an opaque handle that the implementation keeps
// until Unsubscribe.
type FanOutStream interface {
	// DescribeConsumer returns the consumer name of stream, or an error
	// wrapping ErrNotFound if there is none.
	DescribeConsumer(ctx context.Context, stream, name string) (StreamConsumer, error)
	// RegisterConsumer registers consumer name on stream (its status is
	// then usually CREATING), or fails with an error wrapping
	// ErrResourceInUse if one of that name is registered already.
	RegisterConsumer(ctx context.Context, stream, name string) (StreamConsumer, error)
	// DeregisterConsumer deregisters consumer name of stream.
	DeregisterConsumer(ctx context.Context, stream, name string) error
	// Subscribe subscribes the consumer consumerARN to shard of stream
	// from pos (TRIM_HORIZON, LATEST, AT_TIMESTAMP, AT_ or
	// AFTER_SEQUENCE_NUMBER) and returns the subscription's handle. It
	// fails with an error wrapping ErrResourceInUse within 5 seconds of
	// another successful Subscribe of the same consumer and shard, with
	// ErrThrottled when called too often, and with ErrNotFound for a
	// missing shard or consumer.
	Subscribe(ctx context.Context, consumerARN, stream, shard string, pos Position) (string, error)
	// NextEvent returns the next event of subscription sub, waiting for
	// it up to wait, or an empty event if none came by then. Once the
	// subscription has ended it fails with an error wrapping
	// ErrSubscriptionEnded. Events not yet asked for are held back, at
	// most a few buffered: never dropped.
	NextEvent(ctx context.Context, sub string, wait time.Duration) (SubscriptionEvent, error)
	// Unsubscribe ends subscription sub and forgets it; a handle already
	// ended or unknown is not an error.
	Unsubscribe(ctx context.Context, sub string) error
}

// The fan-out calls. Their values leave room below for more store and
// polling calls.
const (
	OpDescribeConsumer Op = 16 + iota
	OpRegisterConsumer
	OpDeregisterConsumer
	OpSubscribe
	OpNextEvent
	OpUnsubscribe
)

var fanOutOpNames = [...]string{"DescribeStreamConsumer", "RegisterStreamConsumer", "DeregisterStreamConsumer",
	"SubscribeToShard", "NextEvent", "Unsubscribe"}

// IsFanOut reports whether the call is one of the fan-out calls.
func (o Op) IsFanOut() bool { return o >= OpDescribeConsumer && o <= OpUnsubscribe }

// fanOutName returns the name of a fan-out op.
func (o Op) fanOutName() (string, bool) {
	if !o.IsFanOut() {
		return "", false
	}
	return fanOutOpNames[o-OpDescribeConsumer], true
}

// fanOutString formats a fan-out call.
func (c Call) fanOutString() (string, bool) {
	switch c.Op {
	case OpDescribeConsumer, OpRegisterConsumer, OpDeregisterConsumer:
		return fmt.Sprintf("#%d %s(%s %s)", c.ID, c.Op, c.Stream, c.ConsumerName), true
	case OpSubscribe:
		return fmt.Sprintf("#%d SubscribeToShard(%s/%s %s %s)", c.ID, c.Stream, c.Shard, c.Position.Type, c.Position.Sequence), true
	case OpNextEvent:
		return fmt.Sprintf("#%d NextEvent(%s wait=%v)", c.ID, c.Subscription, c.Wait), true
	case OpUnsubscribe:
		return fmt.Sprintf("#%d Unsubscribe(%s)", c.ID, c.Subscription), true
	}
	return "", false
}

// executeFanOut makes a fan-out call against stream.
func executeFanOut(ctx context.Context, stream Stream, c Call) Result {
	r := Result{ID: c.ID}
	fo, ok := stream.(FanOutStream)
	if !ok {
		r.Err = fmt.Errorf("execute %s: the stream (%T) does not implement engine.FanOutStream", c.Op, stream)
		return r
	}
	switch c.Op {
	case OpDescribeConsumer:
		r.Consumer, r.Err = fo.DescribeConsumer(ctx, c.Stream, c.ConsumerName)
	case OpRegisterConsumer:
		r.Consumer, r.Err = fo.RegisterConsumer(ctx, c.Stream, c.ConsumerName)
	case OpDeregisterConsumer:
		r.Err = fo.DeregisterConsumer(ctx, c.Stream, c.ConsumerName)
	case OpSubscribe:
		r.Subscription, r.Err = fo.Subscribe(ctx, c.ConsumerARN, c.Stream, c.Shard, c.Position)
	case OpNextEvent:
		r.Event, r.Err = fo.NextEvent(ctx, c.Subscription, c.Wait)
	case OpUnsubscribe:
		r.Err = fo.Unsubscribe(ctx, c.Subscription)
	}
	return r
}
