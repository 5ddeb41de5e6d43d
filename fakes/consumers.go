package fakes

import (
	"context"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Enhanced fan-out defaults, as Kinesis has them.
const (
	DefaultSubscriptionLifetime = 5 * time.Minute
	DefaultInUseWindow          = 5 * time.Second
	DefaultMaxConsumers         = 20
	DefaultMaxEventRecords      = 10000
)

// FanOutOptions configure the enhanced fan-out of a Kinesis (see
// Kinesis.SetFanOutOptions). The zero value has the service's rules, with
// consumers ACTIVE (and deregistered ones gone) at once.
type FanOutOptions struct {
	// Activation is how long a registered consumer stays CREATING, and a
	// deregistered one DELETING, before it is ACTIVE (gone).
	Activation time.Duration
	// Lifetime is how long a subscription delivers events. Default
	// DefaultSubscriptionLifetime.
	Lifetime time.Duration
	// InUseWindow is how long after a successful subscription another of
	// the same consumer and shard fails with engine.ErrResourceInUse; one
	// after it takes the subscription over. Default DefaultInUseWindow.
	InUseWindow time.Duration
	// MinSubscribeInterval is the least time between two Subscribe calls
	// of one consumer and shard; a call sooner fails with
	// engine.ErrThrottled (LimitExceededException). Default one second;
	// negative: no limit.
	MinSubscribeInterval time.Duration
	// MaxConsumers caps the consumers of a stream. Default 20.
	MaxConsumers int
	// MaxEventRecords caps the records of one event. Default 10000.
	MaxEventRecords int
}

func (o FanOutOptions) withDefaults() FanOutOptions {
	if o.Lifetime <= 0 {
		o.Lifetime = DefaultSubscriptionLifetime
	}
	if o.InUseWindow <= 0 {
		o.InUseWindow = DefaultInUseWindow
	}
	if o.MinSubscribeInterval == 0 {
		o.MinSubscribeInterval = time.Second
	}
	if o.MaxConsumers <= 0 {
		o.MaxConsumers = DefaultMaxConsumers
	}
	if o.MaxEventRecords <= 0 {
		o.MaxEventRecords = DefaultMaxEventRecords
	}
	return o
}

// fanOut is the state of a Kinesis's enhanced fan-out: consumers and
// subscriptions. It is only ever read by lookup, never iterated, so the
// maps cannot make it nondeterministic.
type fanOut struct {
	opts      FanOutOptions
	consumers map[string]*kconsumer // by ARN
	byName    map[string]*kconsumer // by stream + "/" + name
	count     map[string]int        // consumers per stream
	subs      map[string]*ksub      // by handle
	pairs     map[string]*kpair     // by consumer ARN + " " + shard id
	serial    uint64
}

// kconsumer is one registered consumer.
type kconsumer struct {
	name, stream, arn string
	created           time.Time
	deleted           time.Time // zero unless deregistered
}

var _ engine.FanOutStream = (*Kinesis)(nil)

// SetFanOutOptions sets the fan-out options; call it before any fan-out
// call. Without it the fake has the zero FanOutOptions.
func (k *Kinesis) SetFanOutOptions(o FanOutOptions) { k.fanOutState().opts = o.withDefaults() }

func (k *Kinesis) fanOutState() *fanOut {
	if k.fo == nil {
		k.fo = &fanOut{
			opts:      FanOutOptions{}.withDefaults(),
			consumers: make(map[string]*kconsumer),
			byName:    make(map[string]*kconsumer),
			count:     make(map[string]int),
			subs:      make(map[string]*ksub),
			pairs:     make(map[string]*kpair),
		}
	}
	return k.fo
}

// status returns the consumer's status at now, or "" once it is gone.
func (f *fanOut) status(c *kconsumer, now time.Time) engine.ConsumerStatus {
	switch {
	case !c.deleted.IsZero() && !now.Before(c.deleted.Add(f.opts.Activation)):
		return ""
	case !c.deleted.IsZero():
		return engine.ConsumerDeleting
	case now.Before(c.created.Add(f.opts.Activation)):
		return engine.ConsumerCreating
	}
	return engine.ConsumerActive
}

// live returns the consumer of stream called name that is not gone at now,
// forgetting one that is.
func (f *fanOut) live(stream, name string, now time.Time) *kconsumer {
	c := f.byName[stream+"/"+name]
	if c != nil && f.status(c, now) == "" {
		delete(f.byName, stream+"/"+name)
		delete(f.consumers, c.arn)
		f.count[stream]--
		return nil
	}
	return c
}

// consumerARN is Kinesis's format:
// arn:aws:kinesis:<region>:<account>:stream/<stream>/consumer/<name>:<epoch>.
func consumerARN(stream, name string, created time.Time) string {
	return "arn:aws:kinesis:us-east-1:000000000000:stream/" + stream + "/consumer/" + name + ":" + strconv.FormatInt(created.Unix(), 10)
}

// RegisterConsumer registers consumer name on stream. It is CREATING for
// FanOutOptions.Activation, then ACTIVE. A name registered already (in any
// status) fails with an error wrapping engine.ErrResourceInUse; more than
// MaxConsumers with one wrapping engine.ErrThrottled (LimitExceeded).
func (k *Kinesis) RegisterConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	const op = engine.OpRegisterConsumer
	now := k.clock.Now()
	if err := k.begin(ctx, op, stream, name, now); err != nil {
		return engine.StreamConsumer{}, err
	}
	f := k.fanOutState()
	var out engine.StreamConsumer
	var err error
	switch {
	case k.streams[stream] == nil:
		err = &callError{op: op, subject: stream, sub: name, msg: "no such stream", err: engine.ErrNotFound}
	case validStreamName(name) != nil:
		err = &callError{op: op, subject: stream, sub: name, msg: "consumer name is not 1 to 128 of [a-zA-Z0-9_.-]", err: ErrInvalidArgument}
	case f.live(stream, name, now) != nil:
		err = &callError{op: op, subject: stream, sub: name, msg: "consumer exists", err: engine.ErrResourceInUse}
	case f.count[stream] >= f.opts.MaxConsumers:
		err = &callError{op: op, subject: stream, sub: name, msg: "LimitExceeded: " + strconv.Itoa(f.opts.MaxConsumers) + " consumers", err: engine.ErrThrottled}
	default:
		c := &kconsumer{name: name, stream: stream, arn: consumerARN(stream, name, now), created: now}
		f.consumers[c.arn] = c
		f.byName[stream+"/"+name] = c
		f.count[stream]++
		out = engine.StreamConsumer{Name: name, ARN: c.arn, Status: f.status(c, now)}
	}
	if err = k.end(op, stream, name, err); err != nil {
		return engine.StreamConsumer{}, err
	}
	return out, nil
}

// DescribeConsumer returns consumer name of stream, or an error wrapping
// engine.ErrNotFound if there is none (or it is gone).
func (k *Kinesis) DescribeConsumer(ctx context.Context, stream, name string) (engine.StreamConsumer, error) {
	const op = engine.OpDescribeConsumer
	now := k.clock.Now()
	if err := k.begin(ctx, op, stream, name, now); err != nil {
		return engine.StreamConsumer{}, err
	}
	f := k.fanOutState()
	var out engine.StreamConsumer
	var err error
	if c := f.live(stream, name, now); c == nil {
		err = &callError{op: op, subject: stream, sub: name, msg: "no such consumer", err: engine.ErrNotFound}
	} else {
		out = engine.StreamConsumer{Name: name, ARN: c.arn, Status: f.status(c, now)}
	}
	if err = k.end(op, stream, name, err); err != nil {
		return engine.StreamConsumer{}, err
	}
	return out, nil
}

// DeregisterConsumer deregisters consumer name of stream: it is DELETING
// for FanOutOptions.Activation, then gone; its subscriptions end at once.
func (k *Kinesis) DeregisterConsumer(ctx context.Context, stream, name string) error {
	const op = engine.OpDeregisterConsumer
	now := k.clock.Now()
	if err := k.begin(ctx, op, stream, name, now); err != nil {
		return err
	}
	f := k.fanOutState()
	var err error
	switch c := f.live(stream, name, now); {
	case c == nil:
		err = &callError{op: op, subject: stream, sub: name, msg: "no such consumer", err: engine.ErrNotFound}
	case !c.deleted.IsZero():
		err = &callError{op: op, subject: stream, sub: name, msg: "consumer is being deleted", err: engine.ErrResourceInUse}
	default:
		c.deleted = now
		f.live(stream, name, now) // gone at once without an Activation delay
	}
	return k.end(op, stream, name, err)
}
