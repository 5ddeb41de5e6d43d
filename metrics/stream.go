package metrics

import (
	"context"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Stream returns s wrapped so that every Kinesis call (DescribeStream,
// ListShards, GetShardIterator, GetRecords) is timed and counted by
// operation and outcome. A stream with enhanced fan-out
// (engine.FanOutStream) stays one: its consumer calls and SubscribeToShard
// are timed too, and subscriptions, renewals, ends and events counted.
func (m *Metrics) Stream(s engine.Stream) engine.Stream {
	st := &stream{m: m, next: s}
	if fo, ok := s.(engine.FanOutStream); ok {
		return &fanOutStream{stream: st, fo: fo}
	}
	return st
}

type stream struct {
	m    *Metrics
	next engine.Stream
}

func (s *stream) observe(op engine.Op, start time.Time, err error) {
	s.m.streamCalls.WithLabelValues(op.String(), Outcome(err)).Observe(time.Since(start).Seconds())
}

func (s *stream) DescribeStream(ctx context.Context, name string) (engine.StreamInfo, error) {
	start := time.Now()
	info, err := s.next.DescribeStream(ctx, name)
	s.observe(engine.OpDescribeStream, start, err)
	return info, err
}

func (s *stream) ListShards(ctx context.Context, name string) ([]engine.Shard, error) {
	start := time.Now()
	shards, err := s.next.ListShards(ctx, name)
	s.observe(engine.OpListShards, start, err)
	return shards, err
}

func (s *stream) GetShardIterator(ctx context.Context, name, shard string, pos engine.Position) (string, error) {
	start := time.Now()
	it, err := s.next.GetShardIterator(ctx, name, shard, pos)
	s.observe(engine.OpGetIterator, start, err)
	if err == nil {
		s.m.iterator(it, engine.ShardRef{Stream: name, Shard: shard})
	}
	return it, err
}

func (s *stream) GetRecords(ctx context.Context, iterator string, limit int) (engine.RecordsPage, error) {
	start := time.Now()
	p, err := s.next.GetRecords(ctx, iterator, limit)
	s.observe(engine.OpGetRecords, start, err)
	if err == nil {
		s.m.page(iterator, p, s.m.now())
	}
	return p, err
}
