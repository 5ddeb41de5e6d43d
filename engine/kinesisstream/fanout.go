package kinesisstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	"github.com/shardlease/shardlease/engine"
)

// FanOutAPI is the subset of *kinesis.Client that enhanced fan-out uses.
// New takes it from the API when the API has it (a *kinesis.Client does).
type FanOutAPI interface {
	DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	RegisterStreamConsumer(ctx context.Context, in *kinesis.RegisterStreamConsumerInput, opts ...func(*kinesis.Options)) (*kinesis.RegisterStreamConsumerOutput, error)
	DescribeStreamConsumer(ctx context.Context, in *kinesis.DescribeStreamConsumerInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamConsumerOutput, error)
	DeregisterStreamConsumer(ctx context.Context, in *kinesis.DeregisterStreamConsumerInput, opts ...func(*kinesis.Options)) (*kinesis.DeregisterStreamConsumerOutput, error)
	SubscribeToShard(ctx context.Context, in *kinesis.SubscribeToShardInput, opts ...func(*kinesis.Options)) (*kinesis.SubscribeToShardOutput, error)
}

var (
	_ FanOutAPI           = (*kinesis.Client)(nil)
	_ engine.FanOutStream = (*Stream)(nil)
)

// fanOut is a Stream's enhanced fan-out state: stream ARNs (consumers are
// registered by stream ARN) and the open subscriptions.
type fanOut struct {
	mu     sync.Mutex
	arns   map[string]string // stream name -> ARN
	subs   map[string]*subscription
	serial uint64
}

// subscription is one open SubscribeToShard event stream. Events are read
// from it only when NextEvent asks: the SDK's reader holds at most one
// decoded event, and HTTP/2 flow control holds the rest at the service.
type subscription struct {
	stream, shard string
	es            *kinesis.SubscribeToShardEventStream
	cancel        context.CancelFunc
	mu            sync.Mutex // one NextEvent at a time
}

func (s *Stream) fanOutAPI() (FanOutAPI, error) {
	if s.fo == nil {
		return nil, fmt.Errorf("kinesisstream: the Kinesis client (%T) has no enhanced fan-out calls", s.api)
	}
	return s.fo, nil
}

// streamARN returns the ARN of stream, from DescribeStreamSummary once.
func (s *Stream) streamARN(ctx context.Context, stream string) (string, error) {
	s.efo.mu.Lock()
	arn := s.efo.arns[stream]
	s.efo.mu.Unlock()
	if arn != "" {
		return arn, nil
	}
	api, err := s.fanOutAPI()
	if err != nil {
		return "", err
	}
	out, err := api.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		return "", s.mapError(fmt.Sprintf("describe stream %q", stream), fmt.Sprintf("stream %q", stream), err)
	}
	if out.StreamDescriptionSummary == nil || aws.ToString(out.StreamDescriptionSummary.StreamARN) == "" {
		return "", fmt.Errorf("kinesisstream: describe stream %q: the reply has no stream ARN", stream)
	}
	arn = aws.ToString(out.StreamDescriptionSummary.StreamARN)
	s.efo.mu.Lock()
	s.efo.arns[stream] = arn
	s.efo.mu.Unlock()
	return arn, nil
}

func consumerOf(arn, name *string, status types.ConsumerStatus) engine.StreamConsumer {
	return engine.StreamConsumer{Name: aws.ToString(name), ARN: aws.ToString(arn), Status: engine.ConsumerStatus(status)}
}

// DescribeConsumer returns consumer name of stream (DescribeStreamConsumer).
// A missing stream or consumer wraps engine.ErrNotFound.
func (s *Stream) DescribeConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	arn, err := s.streamARN(ctx, stream)
	if err != nil {
		return engine.StreamConsumer{}, err
	}
	out, err := s.fo.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{StreamARN: aws.String(arn), ConsumerName: aws.String(name)})
	if err != nil {
		return engine.StreamConsumer{}, s.mapError(fmt.Sprintf("describe consumer %q of stream %q", name, stream), fmt.Sprintf("consumer %q of stream %q", name, stream), err)
	}
	d := out.ConsumerDescription
	if d == nil {
		return engine.StreamConsumer{}, fmt.Errorf("kinesisstream: describe consumer %q of stream %q: no description in the reply", name, stream)
	}
	return consumerOf(d.ConsumerARN, d.ConsumerName, d.ConsumerStatus), nil
}

// RegisterConsumer registers consumer name on stream
// (RegisterStreamConsumer). A consumer of that name registered already
// wraps engine.ErrResourceInUse; the stream's consumer limit (20) wraps
// engine.ErrThrottled (LimitExceededException).
func (s *Stream) RegisterConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	arn, err := s.streamARN(ctx, stream)
	if err != nil {
		return engine.StreamConsumer{}, err
	}
	out, err := s.fo.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(arn), ConsumerName: aws.String(name)})
	if err != nil {
		return engine.StreamConsumer{}, s.mapError(fmt.Sprintf("register consumer %q on stream %q", name, stream), fmt.Sprintf("stream %q", stream), err)
	}
	c := out.Consumer
	if c == nil {
		return engine.StreamConsumer{}, fmt.Errorf("kinesisstream: register consumer %q on stream %q: no consumer in the reply", name, stream)
	}
	return consumerOf(c.ConsumerARN, c.ConsumerName, c.ConsumerStatus), nil
}

// DeregisterConsumer deregisters consumer name of stream
// (DeregisterStreamConsumer).
func (s *Stream) DeregisterConsumer(ctx context.Context, stream, name string) error {
	arn, err := s.streamARN(ctx, stream)
	if err != nil {
		return err
	}
	_, err = s.fo.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{StreamARN: aws.String(arn), ConsumerName: aws.String(name)})
	if err != nil {
		return s.mapError(fmt.Sprintf("deregister consumer %q of stream %q", name, stream), fmt.Sprintf("consumer %q of stream %q", name, stream), err)
	}
	return nil
}

// EnsureConsumer returns consumer name of stream once it is ACTIVE,
// registering it if it is missing and polling DescribeStreamConsumer (from
// 100 ms to 2 s apart) until ctx ends. A consumer another process
// registers meanwhile is used as it is.
func (s *Stream) EnsureConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	delay := 100 * time.Millisecond
	for {
		c, err := s.DescribeConsumer(ctx, stream, name)
		if errors.Is(err, engine.ErrNotFound) && s.streamKnown(stream) {
			c, err = s.RegisterConsumer(ctx, stream, name)
			if errors.Is(err, engine.ErrResourceInUse) {
				err = nil // registered by another process meanwhile: describe it
			}
		}
		switch {
		case err != nil && !errors.Is(err, engine.ErrThrottled):
			return engine.StreamConsumer{}, err
		case err == nil && c.Status == engine.ConsumerActive:
			return c, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return engine.StreamConsumer{}, fmt.Errorf("kinesisstream: wait for consumer %q of stream %q to become ACTIVE: %w", name, stream, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func (s *Stream) streamKnown(stream string) bool {
	s.efo.mu.Lock()
	defer s.efo.mu.Unlock()
	return s.efo.arns[stream] != ""
}

// Subscribe calls SubscribeToShard for consumerARN and shard from pos and
// returns a handle to the open event stream. ctx bounds the call; the
// subscription itself lasts until it ends or Unsubscribe. Errors wrap
// engine.ErrResourceInUse (a subscription of the consumer and shard less
// than 5 s old, or a consumer not ACTIVE), engine.ErrThrottled
// (LimitExceededException: more than one call per second) or
// engine.ErrNotFound.
func (s *Stream) Subscribe(ctx context.Context, consumerARN, stream, shard string, pos engine.Position) (string, error) {
	api, err := s.fanOutAPI()
	if err != nil {
		return "", err
	}
	sp := &types.StartingPosition{Type: types.ShardIteratorType(pos.Type)}
	what := fmt.Sprintf("subscribe to %s/%s at %s", stream, shard, pos.Type)
	switch pos.Type {
	case engine.IterTrimHorizon, engine.IterLatest:
	case engine.IterAtSequenceNumber, engine.IterAfterSequenceNumber:
		if err := engine.ValidateSequence(pos.Sequence); err != nil {
			return "", fmt.Errorf("kinesisstream: %s: %w", what, err)
		}
		sp.SequenceNumber = aws.String(pos.Sequence)
	case engine.IterAtTimestamp:
		if pos.Timestamp.IsZero() {
			return "", fmt.Errorf("kinesisstream: %s: no timestamp", what)
		}
		sp.Timestamp = aws.Time(pos.Timestamp)
	default:
		return "", fmt.Errorf("kinesisstream: %s: unknown position type %q", what, pos.Type)
	}
	// The event stream lives on subCtx, not on ctx (the call's deadline):
	// ctx only bounds the wait for the subscription to open.
	subCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	// One attempt: the engine backs off itself, and a retry within a second
	// would only meet LimitExceededException (one call per second per
	// consumer and shard) or ResourceInUseException.
	out, err := api.SubscribeToShard(subCtx, &kinesis.SubscribeToShardInput{
		ConsumerARN: aws.String(consumerARN), ShardId: aws.String(shard), StartingPosition: sp,
	}, func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })
	if !stop() {
		// ctx ended first: whatever opened is closed.
		if err == nil {
			_ = out.GetStream().Close()
		}
		cancel()
		return "", fmt.Errorf("kinesisstream: %s: %w", what, ctx.Err())
	}
	if err != nil {
		cancel()
		return "", s.mapError(what, fmt.Sprintf("shard %q of stream %q or consumer %s", shard, stream, consumerARN), err)
	}
	sub := &subscription{stream: stream, shard: shard, es: out.GetStream(), cancel: cancel}
	s.efo.mu.Lock()
	s.efo.serial++
	h := "sub-" + strconv.FormatUint(s.efo.serial, 10) + "-" + shard
	s.efo.subs[h] = sub
	s.efo.mu.Unlock()
	return h, nil
}

// NextEvent returns the next event of subscription h, waiting up to wait
// (or until ctx ends) for one; an empty event if none came. An ended
// event stream fails with an error wrapping engine.ErrSubscriptionEnded:
// with engine.ErrSubscriptionExpired at the end of its lifetime, with
// engine.ErrResourceInUse when a newer subscription took it over, with the
// cause otherwise. An ended subscription is forgotten.
func (s *Stream) NextEvent(ctx context.Context, h string, wait time.Duration) (engine.SubscriptionEvent, error) {
	s.efo.mu.Lock()
	sub := s.efo.subs[h]
	s.efo.mu.Unlock()
	if sub == nil {
		return engine.SubscriptionEvent{}, fmt.Errorf("kinesisstream: next event of %s: unknown or given-up subscription: %w", h, engine.ErrSubscriptionEnded)
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-sub.es.Events():
			if !ok {
				err := s.ended(sub, sub.es.Err())
				s.forget(h)
				return engine.SubscriptionEvent{}, err
			}
			if e, ok := ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent); ok {
				return eventOf(e.Value), nil
			}
			// An event type this SDK does not know: skip it.
		case <-t.C:
			return engine.SubscriptionEvent{}, nil
		case <-ctx.Done():
			return engine.SubscriptionEvent{}, fmt.Errorf("kinesisstream: next event of %s/%s: %w", sub.stream, sub.shard, ctx.Err())
		}
	}
}

// ended returns the error of an event stream that closed with err (nil at
// the end of its lifetime).
func (s *Stream) ended(sub *subscription, err error) error {
	what := fmt.Sprintf("kinesisstream: subscription to %s/%s", sub.stream, sub.shard)
	var api smithy.APIError
	switch {
	case err == nil:
		return fmt.Errorf("%s: %w: %w", what, engine.ErrSubscriptionEnded, engine.ErrSubscriptionExpired)
	case errors.As(err, &api) && api.ErrorCode() == "ResourceInUseException":
		return fmt.Errorf("%s: taken over by a newer subscription: %w: %w: %w", what, engine.ErrSubscriptionEnded, engine.ErrResourceInUse, err)
	}
	return fmt.Errorf("%s: %w: %w", what, engine.ErrSubscriptionEnded, err)
}

func eventOf(e types.SubscribeToShardEvent) engine.SubscriptionEvent {
	ev := engine.SubscriptionEvent{
		Continuation: aws.ToString(e.ContinuationSequenceNumber),
		MillisBehind: aws.ToInt64(e.MillisBehindLatest),
		End:          e.ContinuationSequenceNumber == nil,
		Records:      make([]engine.Record, 0, len(e.Records)),
	}
	for _, r := range e.Records {
		ev.Records = append(ev.Records, engine.Record{
			Sequence:     aws.ToString(r.SequenceNumber),
			PartitionKey: aws.ToString(r.PartitionKey),
			Data:         r.Data,
			Arrival:      aws.ToTime(r.ApproximateArrivalTimestamp),
		})
	}
	for _, c := range e.ChildShards {
		ev.ChildShards = append(ev.ChildShards, childOf(c))
	}
	return ev
}

// Unsubscribe closes subscription h and forgets it; an unknown handle is
// not an error.
func (s *Stream) Unsubscribe(ctx context.Context, h string) error {
	s.forget(h)
	return nil
}

func (s *Stream) forget(h string) {
	s.efo.mu.Lock()
	sub := s.efo.subs[h]
	delete(s.efo.subs, h)
	s.efo.mu.Unlock()
	if sub != nil {
		_ = sub.es.Close()
		sub.cancel()
	}
}

// Subscriptions returns how many subscriptions are open.
func (s *Stream) Subscriptions() int {
	s.efo.mu.Lock()
	defer s.efo.mu.Unlock()
	return len(s.efo.subs)
}

// Close closes every open subscription. The Stream stays usable.
func (s *Stream) Close() error {
	s.efo.mu.Lock()
	var hs []string
	for h := range s.efo.subs {
		hs = append(hs, h)
	}
	s.efo.mu.Unlock()
	for _, h := range hs {
		s.forget(h)
	}
	return nil
}
