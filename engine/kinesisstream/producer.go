package kinesisstream

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/shardlease/shardlease/engine"
)

// MaxPutRecords is the number of entries one PutRecords call takes.
const MaxPutRecords = 500

// PutEntry is one record to write.
type PutEntry struct {
	PartitionKey string
	// ExplicitHashKey, if set, chooses the shard instead of the hash of
	// PartitionKey (a decimal 128-bit number).
	ExplicitHashKey string
	Data            []byte
}

// PutResult is the outcome of one PutEntry: the shard and sequence number
// it was written at, or Err (wrapping engine.ErrThrottled when the shard
// was over its throughput) when it was not written.
type PutResult struct {
	Shard    string
	Sequence string
	Err      error
}

// PutRecords writes entries to stream with PutRecords calls of at most
// MaxPutRecords entries, in order. It returns one result per entry. When a
// call fails as a whole, its entries and all later ones (which are not
// sent) get that error as Err, and it is also returned. Entries that
// fail one by one (throttling, internal failures) are not retried: the
// caller decides.
func (s *Stream) PutRecords(ctx context.Context, stream string, entries []PutEntry) ([]PutResult, error) {
	results := make([]PutResult, len(entries))
	for start := 0; start < len(entries); start += MaxPutRecords {
		end := min(start+MaxPutRecords, len(entries))
		in := &kinesis.PutRecordsInput{StreamName: aws.String(stream)}
		for _, e := range entries[start:end] {
			r := types.PutRecordsRequestEntry{PartitionKey: aws.String(e.PartitionKey), Data: e.Data}
			if r.Data == nil {
				r.Data = []byte{} // the SDK rejects a nil blob as missing
			}
			if e.ExplicitHashKey != "" {
				r.ExplicitHashKey = aws.String(e.ExplicitHashKey)
			}
			in.Records = append(in.Records, r)
		}
		out, err := s.api.PutRecords(ctx, in)
		if err == nil && len(out.Records) != end-start {
			err = fmt.Errorf("kinesisstream: put records to %q: %d results for %d entries", stream, len(out.Records), end-start)
		}
		if err != nil {
			err = s.mapError(fmt.Sprintf("put records %d-%d to %q", start, end-1, stream), fmt.Sprintf("stream %q", stream), err)
			for i := start; i < len(entries); i++ {
				results[i].Err = err
			}
			return results, err
		}
		for i, r := range out.Records {
			res := &results[start+i]
			switch code := aws.ToString(r.ErrorCode); code {
			case "":
				res.Shard, res.Sequence = aws.ToString(r.ShardId), aws.ToString(r.SequenceNumber)
			case "ProvisionedThroughputExceededException":
				res.Err = fmt.Errorf("kinesisstream: put record %d to %q: %w: %s", start+i, stream, engine.ErrThrottled, aws.ToString(r.ErrorMessage))
			default:
				res.Err = fmt.Errorf("kinesisstream: put record %d to %q: %s: %s", start+i, stream, code, aws.ToString(r.ErrorMessage))
			}
		}
	}
	return results, nil
}
