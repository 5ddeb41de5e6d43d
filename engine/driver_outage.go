package engine

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// OutageSummaryEvery is how often a worker logs a summary of a dependency
// (the lease table, the stream) that stays unreachable.
const OutageSummaryEvery = 30 * time.Second

// outages aggregates the call failures of the lease table and the stream
// into a few log lines: one WARN when a dependency becomes unreachable
// (with the first error), a WARN summary every OutageSummaryEvery while it
// stays so (the failed calls by class, the latest error), and one INFO
// when it answers again. Each failed call is logged at DEBUG only. A
// worker under an outage retries every lease and scan on its own timers:
// one line per failed call was a hundred lines in half a minute.
type outages struct {
	clk  clock.Clock
	log  *slog.Logger
	mu   sync.Mutex
	deps [2]outage // the lease table, the stream
}

// outage is the state of one dependency.
type outage struct {
	name     string
	down     bool
	since    time.Time      // first failure of the outage
	reported time.Time      // the latest line about it
	failed   int            // failed calls since the outage began
	byClass  map[string]int // failed calls since the latest line, by ErrorClass
	last     error          // the latest failure
}

func newOutages(clk clock.Clock, log *slog.Logger) *outages {
	return &outages{clk: clk, log: log, deps: [2]outage{{name: "lease table"}, {name: "stream"}}}
}

// outageFailure reports whether err is a failure that says the dependency
// did not answer (or refused to for a reason a person must fix): not a
// failed condition, throttling, a missing row, shard or iterator, a
// subscription in use or ended, which are routine answers.
func outageFailure(op Op, err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrConditionFailed), errors.Is(err, ErrThrottled), errors.Is(err, ErrExpiredIterator),
		errors.Is(err, ErrResourceInUse), errors.Is(err, ErrSubscriptionEnded), errors.Is(err, ErrSubscriptionExpired),
		errors.Is(err, ErrNoIndex): // the worker takes leases itself, and says so
		return false
	case errors.Is(err, ErrNotFound):
		// a missing table or stream, not a missing row or shard
		return op == OpListLeases || op == OpListShards || op == OpDescribeStream
	}
	return true
}

// call takes in the outcome of one call.
func (o *outages) call(call Call, err error) {
	d := &o.deps[1]
	if call.Op.IsStore() {
		d = &o.deps[0]
	}
	now := o.clk.Now()
	fail := outageFailure(call.Op, err)
	if err != nil {
		o.log.Debug("call failed", "call", call.Op.String(), "key", call.Key, "stream", call.Stream, "err", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case fail && !d.down:
		d.down, d.since, d.reported, d.failed, d.last = true, now, now, 1, err
		d.byClass = map[string]int{}
		// a missing table or stream, or rejected credentials, is for a
		// person to fix: ERROR; anything else may pass
		level := slog.LevelWarn
		if c := ErrorClass(err); c == "not found" || c == "access denied" {
			level = slog.LevelError
		}
		o.log.Log(context.Background(), level, d.name+" unreachable: calls fail; retrying (a summary follows every "+OutageSummaryEvery.String()+" while it lasts)",
			"dependency", d.name, "class", ErrorClass(err), "call", call.Op.String(), "err", err)
	case fail:
		d.failed++
		d.byClass[ErrorClass(err)]++
		d.last = err
		if now.Sub(d.reported) >= OutageSummaryEvery {
			o.log.Warn(d.name+" still unreachable", "dependency", d.name, "down_for", now.Sub(d.since).Round(time.Millisecond),
				"failed_calls", d.failed, "since_last_line", classes(d.byClass), "last_err", d.last)
			d.reported = now
			clear(d.byClass)
		}
	case d.down && answered(call.Op, err):
		o.log.Info(d.name+" reachable again", "dependency", d.name, "down_for", now.Sub(d.since).Round(time.Millisecond), "failed_calls", d.failed)
		d.down = false
	}
}

// classes renders failure counts by class, sorted: "timeout=12 network error=3".
func classes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		if s != "" {
			s += ", "
		}
		s += k + "=" + strconv.Itoa(m[k])
	}
	return s
}
