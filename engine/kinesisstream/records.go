package kinesisstream

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/shardlease/shardlease/engine"
)

// MaxRecordsPerCall is the largest Limit GetRecords accepts.
const MaxRecordsPerCall = 10000

// GetShardIterator returns an iterator at pos in shard of stream. Every
// iterator type is supported: AT_ and AFTER_SEQUENCE_NUMBER send
// pos.Sequence, AT_TIMESTAMP sends pos.Timestamp (which must not be later
// than now; some servers never answer if it is later than every record, so
// give ctx a deadline). A missing stream or shard wraps engine.ErrNotFound.
func (s *Stream) GetShardIterator(ctx context.Context, stream, shard string, pos engine.Position) (string, error) {
	in := &kinesis.GetShardIteratorInput{
		StreamName:        aws.String(stream),
		ShardId:           aws.String(shard),
		ShardIteratorType: types.ShardIteratorType(pos.Type),
	}
	switch pos.Type {
	case engine.IterTrimHorizon, engine.IterLatest:
	case engine.IterAtSequenceNumber, engine.IterAfterSequenceNumber:
		if err := engine.ValidateSequence(pos.Sequence); err != nil {
			return "", fmt.Errorf("kinesisstream: get %s iterator of %s/%s: %w", pos.Type, stream, shard, err)
		}
		in.StartingSequenceNumber = aws.String(pos.Sequence)
	case engine.IterAtTimestamp:
		if pos.Timestamp.IsZero() {
			return "", fmt.Errorf("kinesisstream: get AT_TIMESTAMP iterator of %s/%s: no timestamp", stream, shard)
		}
		in.Timestamp = aws.Time(pos.Timestamp)
	default:
		return "", fmt.Errorf("kinesisstream: get iterator of %s/%s: unknown iterator type %q", stream, shard, pos.Type)
	}
	out, err := s.api.GetShardIterator(ctx, in)
	if err != nil {
		return "", s.mapError(fmt.Sprintf("get %s iterator of %s/%s", pos.Type, stream, shard),
			fmt.Sprintf("stream %q or its shard %q", stream, shard), err)
	}
	it := aws.ToString(out.ShardIterator)
	if it == "" {
		return "", fmt.Errorf("kinesisstream: get %s iterator of %s/%s: the reply has no iterator", pos.Type, stream, shard)
	}
	return it, nil
}

// GetRecords reads up to limit records (limit <= 0 or above
// MaxRecordsPerCall means MaxRecordsPerCall) from iterator. At the end of
// a closed shard NextIterator is "" and ChildShards lists the children if
// the service returned them. Records carry no sub-sequence number (records
// are not de-aggregated here).
func (s *Stream) GetRecords(ctx context.Context, iterator string, limit int) (engine.RecordsPage, error) {
	if limit <= 0 || limit > MaxRecordsPerCall {
		limit = MaxRecordsPerCall
	}
	out, err := s.api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String(iterator), Limit: aws.Int32(int32(limit))})
	if err != nil {
		return engine.RecordsPage{}, s.mapError("get records", "the iterator's stream or shard", err)
	}
	page := engine.RecordsPage{
		NextIterator: aws.ToString(out.NextShardIterator),
		MillisBehind: aws.ToInt64(out.MillisBehindLatest),
		Records:      make([]engine.Record, 0, len(out.Records)),
	}
	for _, r := range out.Records {
		page.Records = append(page.Records, engine.Record{
			Sequence:     aws.ToString(r.SequenceNumber),
			PartitionKey: aws.ToString(r.PartitionKey),
			Data:         r.Data,
			Arrival:      aws.ToTime(r.ApproximateArrivalTimestamp),
		})
	}
	for _, c := range out.ChildShards {
		page.ChildShards = append(page.ChildShards, childOf(c))
	}
	return page, nil
}
