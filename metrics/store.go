package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Outcomes of calls (the outcome label).
const (
	OutcomeOK              = "ok"
	OutcomeCondition       = "condition-failed"
	OutcomeThrottled       = "throttled"
	OutcomeNotFound        = "not-found"
	OutcomeExpiredIterator = "expired-iterator"
	OutcomeInUse           = "in-use"             // ResourceInUse (enhanced fan-out)
	OutcomeEnded           = "subscription-ended" // the subscription ended (enhanced fan-out)
	OutcomeTimeout         = "timeout"            // the call's deadline passed, or it was cancelled
	OutcomeError           = "error"              // any other error
)

// Outcome classifies a call's error with the engine's sentinels.
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, engine.ErrConditionFailed):
		return OutcomeCondition
	case errors.Is(err, engine.ErrThrottled):
		return OutcomeThrottled
	case errors.Is(err, engine.ErrNotFound):
		return OutcomeNotFound
	case errors.Is(err, engine.ErrExpiredIterator):
		return OutcomeExpiredIterator
	case errors.Is(err, engine.ErrResourceInUse):
		return OutcomeInUse
	case errors.Is(err, engine.ErrSubscriptionEnded):
		return OutcomeEnded
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return OutcomeTimeout
	}
	return OutcomeError
}

type classKey struct {
	key     string
	counter int64
}

// maxClasses bounds the write classes remembered for calls not yet seen
// (a write the driver never made, at shutdown, would stay forever).
const maxClasses = 4096

// sent remembers the class of a write the engine is about to make.
func (m *Metrics) sent(key string, counter int64, class string) {
	k := classKey{key, counter}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.classes) >= maxClasses {
		clear(m.classes)
	}
	m.classes[k] = append(m.classes[k], class)
}

// class returns the class of a write of l.Key producing l.Counter, as the
// engine named it (with the Tracer installed), or as inferred from the
// call.
func (m *Metrics) class(op engine.Op, expect engine.Expect, l engine.Lease) string {
	k := classKey{l.Key, l.Counter}
	m.mu.Lock()
	if cs := m.classes[k]; len(cs) > 0 {
		if len(cs) == 1 {
			delete(m.classes, k)
		} else {
			m.classes[k] = cs[1:]
		}
		m.mu.Unlock()
		return cs[0]
	}
	m.mu.Unlock()
	switch {
	case op == engine.OpCreateLease:
		return "create"
	case op == engine.OpDeleteLease:
		return "delete"
	case l.Checkpoint.IsShardEnd() && l.Owner == "":
		return "shard-end"
	case l.Owner == "":
		return "release"
	case l.Owner != expect.Owner:
		return "take"
	}
	return "renew"
}

func (m *Metrics) storeCall(op engine.Op, class string, start time.Time, err error) {
	d := time.Since(start).Seconds()
	m.storeCalls.WithLabelValues(op.String(), class, Outcome(err)).Observe(d)
	if class == "renew" {
		m.renew.Observe(d)
		if err != nil {
			m.renewFailed.WithLabelValues(Outcome(err)).Inc()
		}
	}
}

// Store returns s wrapped so that every call is timed and counted by
// operation, write class and outcome, and the malformed rows of every
// scan are counted. The wrapper passes s's table check (engine.TableChecker:
// none if s has none) and its pending index (engine.PendingIndex:
// engine.ErrNoIndex if s has none) through; a store that pushes what waits
// for a worker (engine.PendingWatcher) stays one.
func (m *Metrics) Store(s engine.LeaseStore) engine.LeaseStore {
	st := &store{m: m, next: s}
	if pw, ok := s.(engine.PendingWatcher); ok {
		return &watchingStore{store: st, pw: pw}
	}
	return st
}

// watchingStore is the wrapper of a store that implements
// engine.PendingWatcher.
type watchingStore struct {
	*store
	pw engine.PendingWatcher
}

// WatchPending starts a watch of the wrapped store.
func (s *watchingStore) WatchPending(ctx context.Context, who string) (engine.PendingWatch, error) {
	return s.pw.WatchPending(ctx, who)
}

// CheckTable runs the wrapped store's table check, if it has one.
func (s *store) CheckTable(ctx context.Context) error {
	if tc, ok := s.next.(engine.TableChecker); ok {
		return tc.CheckTable(ctx)
	}
	return nil
}

// ListPending reads the wrapped store's pending index, timed and counted.
func (s *store) ListPending(ctx context.Context, who string) ([]engine.Lease, error) {
	pi, ok := s.next.(engine.PendingIndex)
	if !ok {
		return nil, fmt.Errorf("list pending %s: %w", who, engine.ErrNoIndex)
	}
	start := time.Now()
	rows, err := pi.ListPending(ctx, who)
	s.m.storeCall(engine.OpListPending, "", start, err)
	if err == nil {
		at := s.m.now()
		for _, r := range rows {
			if r.Owner == "" && r.Pending == who {
				s.m.mayTake(r.Key, at) // assigned to this worker
			}
		}
	}
	return rows, err
}

type store struct {
	m    *Metrics
	next engine.LeaseStore
}

func (s *store) ListLeases(ctx context.Context, consistent bool) (engine.Listing, error) {
	start := time.Now()
	l, err := s.next.ListLeases(ctx, consistent)
	s.m.storeCall(engine.OpListLeases, "", start, err)
	if err == nil {
		s.m.malformed.Set(float64(len(l.Malformed)))
		if consistent {
			s.m.fleet.observe(l, s.m.now())
		}
	}
	return l, err
}

func (s *store) GetLease(ctx context.Context, key string) (engine.Lease, error) {
	start := time.Now()
	l, err := s.next.GetLease(ctx, key)
	s.m.storeCall(engine.OpGetLease, "", start, err)
	return l, err
}

func (s *store) CreateLease(ctx context.Context, l engine.Lease) error {
	class := s.m.class(engine.OpCreateLease, engine.Expect{}, l)
	start := time.Now()
	err := s.next.CreateLease(ctx, l)
	s.m.storeCall(engine.OpCreateLease, class, start, err)
	return err
}

func (s *store) UpdateLease(ctx context.Context, expect engine.Expect, l engine.Lease) error {
	class := s.m.class(engine.OpUpdateLease, expect, l)
	start := time.Now()
	err := s.next.UpdateLease(ctx, expect, l)
	s.m.storeCall(engine.OpUpdateLease, class, start, err)
	return err
}

func (s *store) DeleteLease(ctx context.Context, key string, expect engine.Expect) error {
	class := s.m.class(engine.OpDeleteLease, expect, engine.Lease{Key: key})
	start := time.Now()
	err := s.next.DeleteLease(ctx, key, expect)
	s.m.storeCall(engine.OpDeleteLease, class, start, err)
	return err
}
