package engine

import (
	"errors"
	"fmt"
	"time"
)

// consumerPoll is the time between DescribeStreamConsumer calls while a
// consumer is CREATING or DELETING.
const consumerPoll = time.Second

// fanOutRegistry is a FanOut worker's start-up step: before it scans the
// table or syncs shards it finds (DescribeStreamConsumer) or registers
// (RegisterStreamConsumer) the consumer ConsumerName on every stream and
// waits until each is ACTIVE. Workers that start together all register:
// the first wins, the others see ErrResourceInUse and describe it.
type fanOutRegistry struct {
	regs  []*consumerReg // in the order of Config.Streams
	ready bool           // every consumer was seen ACTIVE: the worker may take leases

	deregSent  bool
	deregLeft  int
	deregUntil time.Duration
}

// regStep is the call a consumer registration makes next.
type regStep uint8

const (
	regDescribe regStep = iota
	regRegister
)

// consumerReg is the registration of the consumer on one stream.
type consumerReg struct {
	stream  string
	arn     string
	active  bool // seen ACTIVE last: subscriptions may use arn
	step    regStep
	nextAt  time.Duration
	backoff time.Duration
	call    uint64 // the call in flight, 0 if none
	sentAt  time.Duration
}

// Purposes of the fan-out calls (see pendingCall); the values leave room
// for the core's own.
const (
	forDescribeConsumer purpose = 64 + iota
	forRegisterConsumer
	forDeregisterConsumer
	forSubscribe
	forEvent
	forUnsubscribe
)

// fanOutErrors returns the rules of the fan-out settings that c breaks.
func (c Config) fanOutErrors() []error {
	var errs []error
	switch c.Consumer {
	case Polling:
		if c.ConsumerName != "" {
			errs = append(errs, fmt.Errorf("ConsumerName %q is set but Consumer is polling: set Consumer to FanOut to read with enhanced fan-out", c.ConsumerName))
		}
		if c.DeregisterConsumer {
			errs = append(errs, errors.New("DeregisterConsumer needs Consumer FanOut"))
		}
	case FanOut:
		if err := validConsumerName(c.ConsumerName); err != nil {
			errs = append(errs, fmt.Errorf("ConsumerName %q (required with Consumer FanOut): %v", c.ConsumerName, err))
		}
	default:
		errs = append(errs, fmt.Errorf("Consumer %v is neither Polling nor FanOut", c.Consumer))
	}
	return errs
}

// validConsumerName checks a Kinesis stream consumer name: 1 to 128 of
// [a-zA-Z0-9_.-].
func validConsumerName(name string) error {
	if validStreamName(name) != nil {
		return errors.New("a consumer name has 1 to 128 characters, only letters, digits, '_', '.' and '-'")
	}
	return nil
}

// tickFanOutRegistration sends the registration calls that are due and
// reports whether the worker may take leases (every consumer was seen
// ACTIVE once). A consumer found missing later is registered again
// without stopping the worker.
func (w *Worker) tickFanOutRegistration() bool {
	fo := &w.fo
	if fo.regs == nil {
		for _, s := range w.cfg.Streams {
			fo.regs = append(fo.regs, &consumerReg{stream: s.Name, nextAt: w.now.Mono})
		}
	}
	now := w.now.Mono
	all := true
	for _, reg := range fo.regs {
		if reg.active {
			continue
		}
		all = false
		if reg.call != 0 && now-reg.sentAt > 2*w.cfg.LeaseDuration {
			reg.call = 0 // a driver answers every call; should a reply never come, ask again
		}
		if reg.call != 0 || now < reg.nextAt {
			continue
		}
		c := Call{Op: OpDescribeConsumer, Stream: reg.stream, ConsumerName: w.cfg.ConsumerName}
		p := forDescribeConsumer
		if reg.step == regRegister {
			c.Op, p = OpRegisterConsumer, forRegisterConsumer
		}
		reg.sentAt = now
		reg.call = w.call(c, pendingCall{purpose: p, key: reg.stream})
	}
	if all {
		fo.ready = true
	}
	return fo.ready
}

func (fo *fanOutRegistry) reg(stream string) *consumerReg {
	for _, r := range fo.regs {
		if r.stream == stream {
			return r
		}
	}
	return nil
}

// consumerARN returns the ARN of the ACTIVE consumer of stream.
func (w *Worker) consumerARN(stream string) (string, bool) {
	if reg := w.fo.reg(stream); reg != nil && reg.active {
		return reg.arn, true
	}
	return "", false
}

// recheckConsumer makes the consumer of stream be described again (it
// seems to be gone or not ACTIVE); its subscriptions wait until it is
// ACTIVE again.
func (w *Worker) recheckConsumer(stream string) {
	if reg := w.fo.reg(stream); reg != nil && reg.active {
		reg.active = false
		reg.step = regDescribe
		reg.nextAt = w.now.Mono
	}
}

func (w *Worker) onConsumerResult(pc pendingCall, r *Result, registering bool) {
	reg := w.fo.reg(pc.key)
	if reg == nil || reg.call != r.ID {
		return
	}
	reg.call = 0
	now := w.now.Mono
	switch {
	case r.Err == nil && r.Consumer.Status == ConsumerActive:
		reg.arn, reg.active, reg.backoff = r.Consumer.ARN, true, 0
	case r.Err == nil:
		// CREATING, or DELETING (then register again once it is gone).
		reg.arn, reg.backoff = r.Consumer.ARN, 0
		reg.step = regDescribe
		reg.nextAt = now + w.jitter(consumerPoll)
	case registering && errors.Is(r.Err, ErrResourceInUse):
		// Another worker registered it first.
		reg.step = regDescribe
		reg.nextAt = now
	case !registering && errors.Is(r.Err, ErrNotFound):
		reg.step = regRegister
		reg.nextAt = now
	case errors.Is(r.Err, ErrAccessDenied):
		// No retry mends a missing permission: stop, as the start-up
		// check does (see Err).
		w.fail(fmt.Errorf("finding or registering the stream consumer %q on stream %q (kinesis:DescribeStreamSummary, kinesis:DescribeStreamConsumer and kinesis:RegisterStreamConsumer are needed): %w",
			w.cfg.ConsumerName, reg.stream, r.Err))
	default:
		// Throttled, or an unknown outcome (a registration may have
		// applied): look before registering again.
		reg.backoff = w.nextBackoff(reg.backoff)
		reg.step = regDescribe
		reg.nextAt = now + reg.backoff
	}
}

// fanOutDeregistered reports, during a shutdown with every lease given up,
// whether the worker may stop: at once unless DeregisterConsumer is set;
// else once every DeregisterStreamConsumer has been answered, or
// RenewInterval after they were sent.
func (w *Worker) fanOutDeregistered() bool {
	if w.cfg.Consumer != FanOut || !w.cfg.DeregisterConsumer {
		return true
	}
	fo := &w.fo
	if !fo.deregSent {
		fo.deregSent = true
		fo.deregUntil = w.now.Mono + w.cfg.RenewInterval
		for _, s := range w.cfg.Streams {
			w.call(Call{Op: OpDeregisterConsumer, Stream: s.Name, ConsumerName: w.cfg.ConsumerName},
				pendingCall{purpose: forDeregisterConsumer, key: s.Name})
			fo.deregLeft++
		}
	}
	return fo.deregLeft == 0 || w.now.Mono >= fo.deregUntil
}

// fanOutWake reports to min the times at which registration needs the
// worker.
func (w *Worker) fanOutWake(min func(time.Duration)) {
	if w.cfg.Consumer != FanOut {
		return
	}
	fo := &w.fo
	if !w.shutdown {
		for _, reg := range fo.regs {
			switch {
			case reg.active:
			case reg.call != 0:
				min(reg.sentAt + 2*w.cfg.LeaseDuration)
			default:
				min(reg.nextAt)
			}
		}
	}
	if fo.deregSent && fo.deregLeft > 0 {
		min(fo.deregUntil)
	}
}

// onFanOutResult handles the result of a fan-out call.
func (w *Worker) onFanOutResult(pc pendingCall, r *Result) {
	switch pc.purpose {
	case forDescribeConsumer:
		w.onConsumerResult(pc, r, false)
	case forRegisterConsumer:
		w.onConsumerResult(pc, r, true)
	case forDeregisterConsumer:
		if w.fo.deregLeft > 0 {
			w.fo.deregLeft--
		}
	case forSubscribe:
		w.onSubscribed(pc, r)
	case forEvent:
		w.onEvent(pc, r)
	case forUnsubscribe:
		// Nothing to do: the subscription is given up either way.
	}
}
