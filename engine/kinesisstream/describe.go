package kinesisstream

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
)

// DescribeStream returns the stream's identity (ARN, creation time) and
// retention from DescribeStreamSummary. A missing stream is an error
// wrapping engine.ErrStreamMissing and engine.ErrNotFound.
func (s *Stream) DescribeStream(ctx context.Context, stream string) (engine.StreamInfo, error) {
	out, err := s.api.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		err = s.mapError(fmt.Sprintf("describe stream %q", stream), fmt.Sprintf("stream %q", stream), err)
		if isNotFound(err) {
			err = fmt.Errorf("%w: %w", engine.ErrStreamMissing, err)
		}
		return engine.StreamInfo{}, err
	}
	d := out.StreamDescriptionSummary
	if d == nil {
		return engine.StreamInfo{}, fmt.Errorf("kinesisstream: describe stream %q: no description in the reply", stream)
	}
	info := engine.StreamInfo{Name: aws.ToString(d.StreamName), ARN: aws.ToString(d.StreamARN), Created: aws.ToTime(d.StreamCreationTimestamp)}
	if d.RetentionPeriodHours != nil {
		info.Retention = time.Duration(*d.RetentionPeriodHours) * time.Hour
	}
	if info.ARN == "" {
		return engine.StreamInfo{}, fmt.Errorf("kinesisstream: describe stream %q: the reply names no StreamARN", stream)
	}
	return info, nil
}
