// Package kinesisstream reads Amazon Kinesis Data Streams: Stream
// implements engine.Stream with aws-sdk-go-v2.
//
// ListShards follows every page (and falls back to DescribeStream where a
// server does not know ListShards); GetShardIterator supports every
// iterator type and always sends the stream name; GetRecords maps
// ChildShards when the service returns them. Errors are mapped to the
// engine's sentinels (engine.ErrThrottled, ErrExpiredIterator,
// ErrNotFound); others are returned wrapped as they are. Recovering from an
// expired iterator and backing off when throttled are the engine's job,
// not this package's.
//
// The package also has a small producer (Stream.PutRecords) and stream
// administration helpers (CreateStream, SplitShard, MergeShards) for demos
// and tests.
package kinesisstream
