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
// Stream also implements engine.FanOutStream (enhanced fan-out): it finds
// the stream's ARN with DescribeStreamSummary, registers, describes and
// deregisters consumers, and opens SubscribeToShard event streams (HTTP/2)
// on a context of their own, so that a subscription outlives the call that
// opened it. Events are read from an event stream only when NextEvent asks
// (the SDK's reader holds at most one decoded event; HTTP/2 flow control
// holds the rest at the service), which is how a slow processor holds a
// subscription back without losing anything. An event stream that ends
// wraps engine.ErrSubscriptionEnded, with engine.ErrResourceInUse when a
// newer subscription took it over.
//
// The package also has a small producer (Stream.PutRecords) and stream
// administration helpers (CreateStream, SplitShard, MergeShards) for demos
// and tests.
package kinesisstream
