package driversim

import (
	"context"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// nodeStore is one consumer's lease store: the world's shared
// fakes.LeaseTable behind the node's network (node.call), which serialises
// every call to the fake under the world's lock and records it.
type nodeStore struct{ n *node }

var _ engine.LeaseStore = (*nodeStore)(nil)

func (s *nodeStore) ListLeases(ctx context.Context, consistent bool) (engine.Listing, error) {
	var l engine.Listing
	err := s.n.call(ctx, &callSpec{op: engine.OpListLeases}, func(ctx context.Context) (err error) {
		l, err = s.n.w.tbl.ListLeases(ctx, consistent)
		return err
	}, func(r *trace.Record) {
		r.Count = len(l.Leases)
		r.Reason = "eventual"
		if consistent {
			r.Reason = "consistent"
		}
	})
	return l, err
}

func (s *nodeStore) GetLease(ctx context.Context, key string) (engine.Lease, error) {
	var l engine.Lease
	err := s.n.call(ctx, &callSpec{op: engine.OpGetLease, key: key}, func(ctx context.Context) (err error) {
		l, err = s.n.w.tbl.GetLease(ctx, key)
		return err
	}, func(r *trace.Record) {
		r.RowOwner, r.Counter, r.Checkpoint = l.Owner, l.Counter, l.Checkpoint
	})
	return l, err
}

func (s *nodeStore) CreateLease(ctx context.Context, l engine.Lease) error {
	return s.n.call(ctx, &callSpec{op: engine.OpCreateLease, key: l.Key, lease: l}, func(ctx context.Context) error {
		return s.n.w.tbl.CreateLease(ctx, l)
	}, nil)
}

func (s *nodeStore) UpdateLease(ctx context.Context, expect engine.Expect, l engine.Lease) error {
	return s.n.call(ctx, &callSpec{op: engine.OpUpdateLease, key: l.Key, expect: expect, lease: l}, func(ctx context.Context) error {
		return s.n.w.tbl.UpdateLease(ctx, expect, l)
	}, nil)
}

func (s *nodeStore) DeleteLease(ctx context.Context, key string, expect engine.Expect) error {
	return s.n.call(ctx, &callSpec{op: engine.OpDeleteLease, key: key, expect: expect}, func(ctx context.Context) error {
		return s.n.w.tbl.DeleteLease(ctx, key, expect)
	}, nil)
}

// ListPending reads the table's pending index (engine.PendingIndex):
// what waits for who, in assignment by an assigner.
func (s *nodeStore) ListPending(ctx context.Context, who string) ([]engine.Lease, error) {
	var out []engine.Lease
	// recorded with no key, as the simulator records a poll of the index
	// (a call on no lease's row); its draws are named by who
	err := s.n.call(ctx, &callSpec{op: engine.OpListPending, draw: who}, func(ctx context.Context) (err error) {
		out, err = s.n.w.tbl.ListPending(ctx, who)
		return err
	}, func(r *trace.Record) { r.Count = len(out) })
	return out, err
}

var _ engine.PendingIndex = (*nodeStore)(nil)

// nodeStream is one consumer's stream: the world's shared fakes.Kinesis
// behind the node's network.
type nodeStream struct{ n *node }

var _ engine.Stream = (*nodeStream)(nil)

func (s *nodeStream) DescribeStream(ctx context.Context, stream string) (engine.StreamInfo, error) {
	var info engine.StreamInfo
	err := s.n.call(ctx, &callSpec{op: engine.OpDescribeStream}, func(ctx context.Context) (err error) {
		info, err = s.n.w.kin.DescribeStream(ctx, stream)
		return err
	}, nil)
	return info, err
}

func (s *nodeStream) ListShards(ctx context.Context, stream string) ([]engine.Shard, error) {
	var shards []engine.Shard
	err := s.n.call(ctx, &callSpec{op: engine.OpListShards}, func(ctx context.Context) (err error) {
		shards, err = s.n.w.kin.ListShards(ctx, stream)
		return err
	}, func(r *trace.Record) { r.Count = len(shards) })
	return shards, err
}

func (s *nodeStream) GetShardIterator(ctx context.Context, stream, shard string, pos engine.Position) (string, error) {
	var it string
	err := s.n.call(ctx, &callSpec{op: engine.OpGetIterator, key: shard}, func(ctx context.Context) (err error) {
		it, err = s.n.w.kin.GetShardIterator(ctx, stream, shard, pos)
		return err
	}, func(r *trace.Record) { r.First = pos.Sequence; r.Previous = string(pos.Type) })
	return it, err
}

func (s *nodeStream) GetRecords(ctx context.Context, iterator string, limit int) (engine.RecordsPage, error) {
	var page engine.RecordsPage
	err := s.n.call(ctx, &callSpec{op: engine.OpGetRecords, draw: iterator}, func(ctx context.Context) (err error) {
		page, err = s.n.w.kin.GetRecords(ctx, iterator, limit)
		return err
	}, func(r *trace.Record) { r.Count = len(page.Records) })
	return page, err
}
