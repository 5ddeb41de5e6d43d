package fakes

import (
	"context"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// DefaultARNPrefix is the ARN of the fake's streams, before the name.
const DefaultARNPrefix = "arn:aws:kinesis:us-east-1:000000000000:stream/"

// DescribeStream returns the stream's ARN, creation time (the clock's
// time at CreateStream) and retention, or an error wrapping
// engine.ErrNotFound for a stream that does not exist (or was deleted).
func (k *Kinesis) DescribeStream(ctx context.Context, stream string) (engine.StreamInfo, error) {
	const op = engine.OpDescribeStream
	now := k.clock.Now()
	if err := k.begin(ctx, op, stream, "", now); err != nil {
		return engine.StreamInfo{}, err
	}
	var info engine.StreamInfo
	var err error
	if s := k.streams[stream]; s == nil {
		err = &callError{op: op, subject: stream, msg: "no such stream", err: engine.ErrNotFound}
	} else {
		info = engine.StreamInfo{Name: stream, ARN: DefaultARNPrefix + stream, Created: s.created, Retention: k.opts.Retention}
	}
	if err = k.end(op, stream, "", err); err != nil {
		return engine.StreamInfo{}, err
	}
	return info, nil
}

// DeleteStream deletes stream: from now on every call naming it, and
// every iterator of it, fails as for a stream that does not exist. A
// stream created later under the same name is another stream: its shard
// ids start again at 0 and its creation time differs.
func (k *Kinesis) DeleteStream(stream string) error {
	s := k.streams[stream]
	if s == nil {
		return &callError{msg: "DeleteStream " + stream + ": no such stream", err: engine.ErrNotFound}
	}
	s.deleted = true
	delete(k.streams, stream)
	return nil
}

// createdAt records the creation time of a new stream. Two streams created
// at the same clock time (a delete and re-create within one tick) still
// get different times, as their identities must differ.
func (k *Kinesis) createdAt(s *kstream, now time.Time) {
	s.created = now.Truncate(time.Millisecond)
	for _, o := range k.byIndex {
		if o.name == s.name && !o.created.Before(s.created) {
			s.created = o.created.Add(time.Millisecond)
		}
	}
}
