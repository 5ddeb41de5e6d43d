package etcdstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/engine"
)

// ListLeases reads every row under the prefix, a page of WithPageSize rows
// at a time, every page at the revision of the first, so that the listing
// is one snapshot of the table and names every row once. With consistent
// true the reads are linearizable; with false they are serializable (a
// member answers from its own state, which may lag the cluster's: the
// listing may be stale, never torn). Rows that DecodeLease rejects are
// returned in Listing.Malformed. Leases come back sorted by key.
func (s *Store) ListLeases(ctx context.Context, consistent bool) (engine.Listing, error) {
	var out engine.Listing
	p := s.rowsPrefix()
	_, err := s.scan(ctx, "list leases", p, consistent, false, func(kv *mvccpb.KeyValue) {
		key := strings.TrimPrefix(string(kv.Key), p)
		v, l, err := versionOf(key, kv.Value, kv.ModRevision)
		s.remember(key, v)
		if err != nil {
			out.Malformed = append(out.Malformed, engine.MalformedRow{Key: key, Reason: err.Error()})
			return
		}
		out.Leases = append(out.Leases, l)
	})
	if err != nil {
		return engine.Listing{}, err
	}
	return out, nil
}

// scan reads every key under prefix in pages, all at the revision of the
// first page, and calls each for every key in key order. It returns that
// revision.
func (s *Store) scan(ctx context.Context, what, prefix string, consistent, keysOnly bool, each func(kv *mvccpb.KeyValue)) (int64, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := prefix
	var rev int64
	for page := 1; ; page++ {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(s.pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		if keysOnly {
			opts = append(opts, clientv3.WithKeysOnly())
		}
		serializable := !consistent
		if serializable {
			opts = append(opts, clientv3.WithSerializable())
		}
		resp, err := s.c.Get(ctx, from, opts...)
		if err != nil && serializable && rev != 0 && isErr(err, rpctypes.ErrFutureRev) {
			// a later page went to a member that has not applied the first
			// page's revision yet: read it linearizably (at that revision)
			resp, err = s.c.Get(ctx, from, opts[:len(opts)-1]...)
		}
		if err != nil {
			return 0, s.mapError(fmt.Sprintf("%s (range read page %d)", what, page), err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			each(kv)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// GetLease reads the row key by a linearizable read. A missing row is an
// error wrapping engine.ErrNotFound; a malformed row is an error naming
// what is wrong with it.
func (s *Store) GetLease(ctx context.Context, key string) (engine.Lease, error) {
	resp, err := s.c.Get(ctx, s.rowKey(key))
	if err != nil {
		return engine.Lease{}, s.mapError(fmt.Sprintf("get lease %q", key), err)
	}
	if len(resp.Kvs) == 0 {
		s.forget(key)
		return engine.Lease{}, fmt.Errorf("etcdstore: get lease %q: no such row under %s in %s: %w", key, s.prefix, s.where, engine.ErrNotFound)
	}
	kv := resp.Kvs[0]
	v, l, err := versionOf(key, kv.Value, kv.ModRevision)
	s.remember(key, v)
	if err != nil {
		return engine.Lease{}, fmt.Errorf("etcdstore: get lease %q: malformed row: %w", key, err)
	}
	return l, nil
}

// CreateLease writes l and its pending index entry in one Txn on the
// condition that no row l.Key exists (its create revision is 0). An
// existing row, well formed or not, fails with engine.ErrConditionFailed.
// A lease that does not pass Validate is refused without a call.
func (s *Store) CreateLease(ctx context.Context, l engine.Lease) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("etcdstore: create lease: refusing to write an invalid row: %w", err)
	}
	what := fmt.Sprintf("create lease %q", l.Key)
	rk := s.rowKey(l.Key)
	ops := []clientv3.Op{clientv3.OpPut(rk, string(EncodeLease(l)))}
	if l.Pending != "" {
		ops = append(ops, clientv3.OpPut(s.pendingKey(l.Pending, l.Key), strconv.FormatInt(l.Counter, 10)))
	}
	resp, err := s.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(rk), "=", 0)).Then(ops...).Else(clientv3.OpGet(rk)).Commit()
	if err != nil {
		s.forget(l.Key)
		return s.mapWriteError(what, err)
	}
	if resp.Succeeded {
		s.remember(l.Key, version{rev: resp.Header.Revision, ok: true, owner: l.Owner, counter: l.Counter, pending: l.Pending})
		return nil
	}
	found := "a row"
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		v, _, _ := versionOf(l.Key, kvs[0].Value, kvs[0].ModRevision)
		s.remember(l.Key, v)
		found = describe(v)
	}
	return fmt.Errorf("etcdstore: %s: expected no row, found %s: %w", what, found, engine.ErrConditionFailed)
}

// UpdateLease makes the row l.Key hold l, on the condition that the stored
// row has expect's owner and counter: in one Txn that compares the row's
// mod revision with that of a version known to have them (see the package
// documentation) and replaces the row and its pending index entry. A
// missing or malformed row fails the condition. A lease that does not pass
// Validate is refused without a call.
func (s *Store) UpdateLease(ctx context.Context, expect engine.Expect, l engine.Lease) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("etcdstore: update lease: refusing to write an invalid row: %w", err)
	}
	what := fmt.Sprintf("update lease %q (expect owner %q counter %d)", l.Key, expect.Owner, expect.Counter)
	value := string(EncodeLease(l))
	rev, err := s.compareAndSwap(ctx, what, l.Key, expect, func(old version) []clientv3.Op {
		ops := []clientv3.Op{clientv3.OpPut(s.rowKey(l.Key), value)}
		if old.pending != "" && old.pending != l.Pending {
			ops = append(ops, clientv3.OpDelete(s.pendingKey(old.pending, l.Key)))
		}
		if l.Pending != "" {
			// written anew with every version that waits, so that the
			// watch of who reports each (PendingWatcher)
			ops = append(ops, clientv3.OpPut(s.pendingKey(l.Pending, l.Key), strconv.FormatInt(l.Counter, 10)))
		}
		return ops
	})
	if err != nil {
		return err
	}
	s.remember(l.Key, version{rev: rev, ok: true, owner: l.Owner, counter: l.Counter, pending: l.Pending})
	return nil
}

// DeleteLease removes the row key and its pending index entry on the same
// condition as UpdateLease.
func (s *Store) DeleteLease(ctx context.Context, key string, expect engine.Expect) error {
	what := fmt.Sprintf("delete lease %q (expect owner %q counter %d)", key, expect.Owner, expect.Counter)
	_, err := s.compareAndSwap(ctx, what, key, expect, func(old version) []clientv3.Op {
		ops := []clientv3.Op{clientv3.OpDelete(s.rowKey(key))}
		if old.pending != "" {
			ops = append(ops, clientv3.OpDelete(s.pendingKey(old.pending, key)))
		}
		return ops
	})
	if err != nil {
		return err
	}
	s.forget(key)
	return nil
}

// maxRounds bounds the Txns of one conditional write whose row keeps being
// rewritten with the owner and counter it expects (only writers other than
// shardlease, which increments the counter with every write, do that).
const maxRounds = 4

// compareAndSwap applies the ops that then returns for the row key's
// current version, on the condition that the row has expect's owner and
// counter, and returns the revision of the write. It is the one
// conditional write of the store (see the package documentation for why
// it is exactly that condition):
//
//  1. take a version v of the row known to have expect's owner and counter:
//     the store's hint, or else a linearizable read of the row (a missing
//     row, or one without them, fails the condition at once);
//  2. Txn: if the row's mod revision is v's, apply then(v); else read the
//     row, at the Txn's revision;
//  3. if the read shows a row without expect's owner and counter (or none),
//     the condition failed; if it shows them at another revision (the row
//     was rewritten with the same owner and counter), go to 2 with it.
func (s *Store) compareAndSwap(ctx context.Context, what, key string, expect engine.Expect, then func(old version) []clientv3.Op) (int64, error) {
	rk := s.rowKey(key)
	v, ok := s.hint(key)
	if !ok || !s.matches(v, expect) {
		resp, err := s.c.Get(ctx, rk)
		if err != nil {
			return 0, s.mapError(what+" (reading the row to compare)", err)
		}
		if len(resp.Kvs) == 0 {
			s.forget(key)
			return 0, fmt.Errorf("etcdstore: %s: found no row: %w", what, engine.ErrConditionFailed)
		}
		v, _, _ = versionOf(key, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
		s.remember(key, v)
		if !s.matches(v, expect) {
			return 0, fmt.Errorf("etcdstore: %s: found %s: %w", what, describe(v), engine.ErrConditionFailed)
		}
	}
	for round := 1; ; round++ {
		resp, err := s.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(rk), "=", v.rev)).Then(then(v)...).Else(clientv3.OpGet(rk)).Commit()
		if err != nil {
			s.forget(key)
			return 0, s.mapWriteError(what, err)
		}
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			s.forget(key)
			return 0, fmt.Errorf("etcdstore: %s: found no row: %w", what, engine.ErrConditionFailed)
		}
		v, _, _ = versionOf(key, kvs[0].Value, kvs[0].ModRevision)
		s.remember(key, v)
		if !s.matches(v, expect) {
			return 0, fmt.Errorf("etcdstore: %s: found %s: %w", what, describe(v), engine.ErrConditionFailed)
		}
		if round == maxRounds {
			// Not applied (every Txn's compare failed): an error that is
			// no sentinel lets the engine re-read the row.
			return 0, fmt.Errorf("etcdstore: %s: the row was rewritten %d times with the same owner and counter while this write compared it; not written", what, round)
		}
	}
}

// matches reports whether version v has expect's owner and counter.
func (s *Store) matches(v version, expect engine.Expect) bool {
	if s.bug("owner-only-compare") {
		return v.ok && v.owner == expect.Owner
	}
	return v.ok && v.owner == expect.Owner && v.counter == expect.Counter
}

// describe names a version for a failed condition's message.
func describe(v version) string {
	if !v.ok {
		return fmt.Sprintf("a malformed row (mod revision %d)", v.rev)
	}
	return fmt.Sprintf("owner %q counter %d (mod revision %d)", v.owner, v.counter, v.rev)
}
