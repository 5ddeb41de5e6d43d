// Package metrics exports the Prometheus metrics of a shardlease worker
// (an engine.Consumer), for any application built on the engine.
//
// The metrics come from three places, each wired in by one call:
//
//   - the engine's trace events (Metrics.Tracer, set as Config.Trace):
//     leases held, taken, stolen, lost and released, checkpoints, failed
//     and skipped batches, and the class of every lease-table write;
//   - the lease table and the stream (Metrics.Store, Metrics.Stream, which
//     wrap an engine.LeaseStore and an engine.Stream): the duration and
//     outcome of every DynamoDB and Kinesis call the engine makes, and the
//     malformed rows of the latest table scan; a stream with enhanced
//     fan-out (engine.FanOutStream) stays one, and its subscriptions,
//     renewals, ends, events and MillisBehindLatest are counted too;
//   - the record processors (Metrics.Processors, which wraps an
//     engine.ProcessorFactory): records and batches processed, and each
//     held shard's MillisBehindLatest.
//
// Every metric carries the constant label owner (the worker's owner id)
// when Options.Owner is set. Metrics.Handler serves them; see the example.
//
// The package imports the engine and the Prometheus client only (not the
// AWS SDK): outcomes are read from the engine's error sentinels.
package metrics
