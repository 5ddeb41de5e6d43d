package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Option adds optional capabilities to the suite.
type Option func(*config)

type config struct {
	malform  func(t *testing.T, s engine.LeaseStore, key string)
	manyRows int
	timeout  time.Duration
}

// WithMalformed gives the suite a way to make a row that the store cannot
// decode: malform must write, bypassing the store, a row with leaseKey key
// that the store has to report in Listing.Malformed (for example a
// leaseCounter that is not a number, or a missing checkpoint). Without it
// the malformed-row tests are skipped.
func WithMalformed(malform func(t *testing.T, s engine.LeaseStore, key string)) Option {
	return func(c *config) { c.malform = malform }
}

// WithManyRows sets how many rows the scan test writes (default 150): more
// than one page of the store under test.
func WithManyRows(n int) Option { return func(c *config) { c.manyRows = n } }

// WithTimeout sets the deadline of each store call (default 10 s).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Run runs the contract suite against stores made by newStore, which must
// return an empty store of its own for each call (each subtest gets one).
func Run(t *testing.T, newStore func(t *testing.T) engine.LeaseStore, opts ...Option) {
	c := config{manyRows: 150, timeout: 10 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &harness{t: t, s: newStore(t), cfg: c}
			tc.run(h)
		})
	}
}

// harness wraps a store with call helpers that fail the test on surprises.
type harness struct {
	t   *testing.T
	s   engine.LeaseStore
	cfg config
}

func (h *harness) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), h.cfg.timeout)
}

func (h *harness) create(l engine.Lease) error {
	ctx, cancel := h.ctx()
	defer cancel()
	return h.s.CreateLease(ctx, l)
}

func (h *harness) update(e engine.Expect, l engine.Lease) error {
	ctx, cancel := h.ctx()
	defer cancel()
	return h.s.UpdateLease(ctx, e, l)
}

func (h *harness) delete(key string, e engine.Expect) error {
	ctx, cancel := h.ctx()
	defer cancel()
	return h.s.DeleteLease(ctx, key, e)
}

func (h *harness) get(key string) (engine.Lease, error) {
	ctx, cancel := h.ctx()
	defer cancel()
	return h.s.GetLease(ctx, key)
}

func (h *harness) list(consistent bool) engine.Listing {
	h.t.Helper()
	ctx, cancel := h.ctx()
	defer cancel()
	l, err := h.s.ListLeases(ctx, consistent)
	if err != nil {
		h.t.Fatalf("ListLeases(consistent=%v): %v", consistent, err)
	}
	return l
}

// mustCreate creates l and fails the test on error.
func (h *harness) mustCreate(l engine.Lease) {
	h.t.Helper()
	if err := h.create(l); err != nil {
		h.t.Fatalf("CreateLease(%v): %v", l, err)
	}
}

// mustUpdate updates l and fails the test on error.
func (h *harness) mustUpdate(e engine.Expect, l engine.Lease) {
	h.t.Helper()
	if err := h.update(e, l); err != nil {
		h.t.Fatalf("UpdateLease(%+v, %v): %v", e, l, err)
	}
}

// wantRow asserts that the stored row equals want (sets compared sorted).
func (h *harness) wantRow(want engine.Lease) {
	h.t.Helper()
	got, err := h.get(want.Key)
	if err != nil {
		h.t.Fatalf("GetLease(%q): %v", want.Key, err)
	}
	if !Normalize(got).Equal(Normalize(want)) {
		h.t.Fatalf("GetLease(%q):\n got  %s\n want %s", want.Key, Describe(got), Describe(want))
	}
}

// wantGone asserts that GetLease reports ErrNotFound for key.
func (h *harness) wantGone(key string) {
	h.t.Helper()
	_, err := h.get(key)
	if !errors.Is(err, engine.ErrNotFound) {
		h.t.Fatalf("GetLease(%q) = %v, want an error wrapping engine.ErrNotFound", key, err)
	}
}

// wantErr asserts that err wraps target.
func (h *harness) wantErr(what string, err, target error) {
	h.t.Helper()
	if !errors.Is(err, target) {
		h.t.Fatalf("%s = %v, want an error wrapping %v", what, err, target)
	}
}

// Normalize returns l with its string sets sorted and empty sets nil, the
// form in which stores that keep sets unordered (DynamoDB) return them.
func Normalize(l engine.Lease) engine.Lease {
	l = l.Clone()
	l.Parents = normSet(l.Parents)
	l.Children = normSet(l.Children)
	return l
}

func normSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(s)))
}

// Describe prints every field of l, for failure messages.
func Describe(l engine.Lease) string {
	return fmt.Sprintf("%+v", l)
}
