package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Health is what a Consumer knows of its own health, for liveness and
// readiness probes (Consumer.Health). It follows the Kubernetes
// convention:
//
//   - Live: the engine loop is stepping. Run is running and its loop has
//     not missed a wake-up it asked for by more than the lease duration
//     (before its first step, while Run checks the table, the bound is the
//     lease duration plus ConsumerOptions.StartTimeout).
//     A loop that is not live has hung (or the process is starved of CPU
//     far beyond what its leases survive): restart it.
//   - Ready: the worker can do its work. Run is running, live and not
//     shutting down; the start-up has passed (the first table scan and the first
//     shard listing answered); and the lease table and the stream have
//     each answered within the last lease duration, or answered the most
//     recent call made to them. A worker that is not ready keeps
//     retrying; it becomes ready again by itself once the table and the
//     stream answer.
//
// A call counts as answered when it succeeded or was refused for a reason
// that needs an answer (a failed condition, a row, shard or iterator not
// found); a timeout, a network error, throttling, rejected credentials, or
// a missing table or stream count as failures.
//
// LiveReason and ReadyReason say why, in one line for humans and probe
// logs: "ok: ..." or "not live: ..." / "not ready: ...". They name a
// failing dependency's error by its class only (timeout, throttled,
// network error, access denied, not found, error), never its text, which
// may name the table, the endpoint or the account: they are safe in an
// unauthenticated probe's body. TableErr and StreamErr hold the errors
// themselves, for logs.
type Health struct {
	Live        bool
	Ready       bool
	LiveReason  string
	ReadyReason string

	// TableErr and StreamErr are the errors of the latest failed call to
	// the lease table and the stream since their last answer (nil if the
	// latest call was answered). Their text may name the table, the
	// endpoint or the account: log them, do not serve them.
	TableErr, StreamErr error

	// Held is the number of leases held at the last step.
	Held int
	// LastStep is when the loop last stepped (zero before Run).
	LastStep time.Time
	// TableAnswered and StreamAnswered are when the lease table and the
	// stream last answered a call (zero: never).
	TableAnswered, StreamAnswered time.Time
}

// Health returns the consumer's health now. It is safe for concurrent
// use, and cheap: probes may call it as often as they like.
func (c *Consumer) Health() Health { return c.health.report(c.clk.Now()) }

// health is the state behind Consumer.Health, shared between the loop, the
// call goroutines and the probes.
type health struct {
	lease time.Duration // the bound of both checks
	// startGrace is how long the table check before the loop may take
	// (ConsumerOptions.StartTimeout), on top of the lease duration.
	startGrace time.Duration

	mu       sync.Mutex
	running  bool
	begun    time.Time
	stopped  time.Time
	shutdown time.Time
	lastStep time.Time
	dueAt    time.Time // when the loop asked to be stepped next
	held     int
	table    answers
	stream   answers
	// startupPassed: the start-up checks passed (Worker.Started).
	startupPassed bool
}

// answers tracks the outcomes of the calls to one dependency.
type answers struct {
	name         string
	answered     time.Time // last answer
	failingSince time.Time // first failure since the last answer; zero if the latest call was answered
	lastErr      error
}

func newHealth(lease, startGrace time.Duration) *health {
	return &health{lease: lease, startGrace: startGrace, table: answers{name: "lease table"}, stream: answers{name: "stream"}}
}

// run records the start and end of Run.
func (h *health) run(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.begun, h.dueAt = true, now, now
}

func (h *health) stop(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.stopped = false, now
}

// shuttingDown records the start of a graceful shutdown.
func (h *health) shuttingDown(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shutdown = now
}

// started records that the start-up checks passed.
func (h *health) started() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.startupPassed = true
}

// stepped records a step at now that asks to be stepped again at due.
func (h *health) stepped(now, due time.Time, held int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastStep, h.dueAt, h.held = now, due, held
}

// call records the outcome of a call, at its reply time now.
func (h *health) call(op Op, err error, now time.Time) {
	a := &h.stream
	if op.IsStore() {
		a = &h.table
	}
	ok := answered(op, err)
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		a.answered, a.failingSince, a.lastErr = now, time.Time{}, nil
		return
	}
	if a.failingSince.IsZero() {
		a.failingSince = now
	}
	a.lastErr = err
}

// ErrorClass names the class of a call's error for humans, without its
// text: "timeout", "throttled", "access denied", "not found", "network
// error", or "error" for anything else. Probes and aggregated outage logs
// use it; the error itself goes to the logs once.
func ErrorClass(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrAccessDenied):
		return "access denied"
	case errors.Is(err, ErrThrottled):
		return "throttled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout"
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrTableMissing), errors.Is(err, ErrStreamMissing):
		return "not found"
	case errors.As(err, &ne):
		if ne.Timeout() {
			return "timeout"
		}
		return "network error"
	}
	return "error"
}

// answered reports whether a call's outcome shows that the service
// answered.
func answered(op Op, err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrConditionFailed), errors.Is(err, ErrExpiredIterator):
		return true
	case errors.Is(err, ErrNotFound):
		// a row, shard or iterator; not the table or the stream
		return op != OpListLeases && op != OpListShards && op != OpDescribeStream
	}
	return false
}

// report computes the health at now.
func (h *health) report(now time.Time) Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := Health{Held: h.held, LastStep: h.lastStep, TableAnswered: h.table.answered, StreamAnswered: h.stream.answered,
		TableErr: h.table.lastErr, StreamErr: h.stream.lastErr}
	switch {
	case !h.running && h.stopped.IsZero():
		r.LiveReason, r.ReadyReason = "not live: Run has not started", "not ready: Run has not started"
		return r
	case !h.running:
		s := "stopped at " + stamp(h.stopped)
		r.LiveReason, r.ReadyReason = "not live: "+s, "not ready: "+s
		return r
	}
	if h.lastStep.IsZero() {
		// Run checks the table before its loop steps for the first time
		if wait := now.Sub(h.begun); wait > h.lease+h.startGrace {
			r.LiveReason = fmt.Sprintf("not live: Run started at %s and its engine loop has not stepped yet (bound: the lease duration %s plus the start timeout %s)",
				stamp(h.begun), h.lease, h.startGrace)
		} else {
			r.Live = true
			r.LiveReason = fmt.Sprintf("ok: starting since %s (checking the lease table)", stamp(h.begun))
		}
	} else if late := now.Sub(h.dueAt); late > h.lease {
		r.LiveReason = fmt.Sprintf("not live: the engine loop has not stepped since %s (a step due at %s is %s late; bound: the lease duration %s)",
			stamp(h.lastStep), stamp(h.dueAt), late.Round(time.Millisecond), h.lease)
	} else {
		r.Live = true
		r.LiveReason = fmt.Sprintf("ok: the engine loop last stepped at %s", stamp(h.lastStep))
	}

	var why []string
	if !r.Live {
		why = append(why, "the engine loop is not stepping")
	}
	switch {
	case !h.shutdown.IsZero():
		why = append(why, "shutting down since "+stamp(h.shutdown))
	case !h.startupPassed:
		why = append(why, "starting: the start-up checks (the table, the stream, the table's stream marker) have not passed yet"+h.failing())
	default:
		for _, a := range []*answers{&h.table, &h.stream} {
			if s := a.unready(now, h.lease); s != "" {
				why = append(why, s)
			}
		}
	}
	if len(why) > 0 {
		r.ReadyReason = "not ready: " + strings.Join(why, "; ")
		return r
	}
	r.Ready = true
	r.ReadyReason = fmt.Sprintf("ok: %d leases held; lease table answered %s ago, stream %s ago",
		h.held, since(now, h.table.answered), since(now, h.stream.answered))
	return r
}

// failing names the dependencies whose latest call failed, with the
// error, or "".
func (h *health) failing() string {
	var parts []string
	for _, a := range []*answers{&h.table, &h.stream} {
		if !a.failingSince.IsZero() {
			parts = append(parts, fmt.Sprintf("%s failing since %s: %s", a.name, stamp(a.failingSince), ErrorClass(a.lastErr)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// unready says why the dependency makes the worker unready, or "".
func (a *answers) unready(now time.Time, bound time.Duration) string {
	if a.failingSince.IsZero() || now.Sub(a.answered) <= bound {
		return ""
	}
	return fmt.Sprintf("%s unreachable since %s (last answer %s ago; bound: the lease duration %s): %s",
		a.name, stamp(a.failingSince), since(now, a.answered), bound, ErrorClass(a.lastErr))
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func since(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Millisecond).String()
}
