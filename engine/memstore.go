package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// MemStore is a process-local, in-memory LeaseStore. It is correct for a
// single process (every worker of the application runs in it, sharing one
// MemStore); it cannot coordinate separate processes, and its leases and
// checkpoints are gone when the process exits. It is what a Consumer uses
// when no store is given. Safe for concurrent use.
type MemStore struct {
	mu   sync.Mutex
	rows map[string]Lease
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{rows: make(map[string]Lease)} }

// ListLeases returns every row, sorted by key. Reads are always consistent.
func (s *MemStore) ListLeases(ctx context.Context, consistent bool) (Listing, error) {
	if err := ctx.Err(); err != nil {
		return Listing{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Lease, 0, len(s.rows))
	for _, l := range s.rows {
		out = append(out, l.Clone())
	}
	slices.SortFunc(out, byKey)
	return Listing{Leases: out}, nil
}

// GetLease returns the row with key, or an error wrapping ErrNotFound.
func (s *MemStore) GetLease(ctx context.Context, key string) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.rows[key]
	if !ok {
		return Lease{}, fmt.Errorf("lease %s: %w", key, ErrNotFound)
	}
	return l.Clone(), nil
}

// CreateLease writes l if its key is free.
func (s *MemStore) CreateLease(ctx context.Context, l Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("create lease: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rows[l.Key]; ok {
		return fmt.Errorf("create lease %s: %w", l.Key, ErrConditionFailed)
	}
	s.rows[l.Key] = l.Clone()
	return nil
}

// UpdateLease replaces the row if it matches expect.
func (s *MemStore) UpdateLease(ctx context.Context, expect Expect, l Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("update lease: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.rows[l.Key]
	if !ok || cur.Owner != expect.Owner || cur.Counter != expect.Counter {
		return fmt.Errorf("update lease %s: %w", l.Key, ErrConditionFailed)
	}
	s.rows[l.Key] = l.Clone()
	return nil
}

// DeleteLease removes the row if it matches expect.
func (s *MemStore) DeleteLease(ctx context.Context, key string, expect Expect) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.rows[key]
	if !ok || cur.Owner != expect.Owner || cur.Counter != expect.Counter {
		return fmt.Errorf("delete lease %s: %w", key, ErrConditionFailed)
	}
	delete(s.rows, key)
	return nil
}

// ListPending returns the rows whose Pending is who, sorted by key. The
// MemStore's index is always up to date.
func (s *MemStore) ListPending(ctx context.Context, who string) ([]Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Lease
	for _, l := range s.rows {
		if l.Pending == who && who != "" {
			out = append(out, l.Clone())
		}
	}
	slices.SortFunc(out, byKey)
	return out, nil
}
