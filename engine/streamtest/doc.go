// Package streamtest is the contract suite of engine.Stream: one set of
// table-driven behaviour tests that every stream must pass, run against
// Kinesis (kinesalite) in engine/kinesisstream and against the
// simulation's fake Kinesis in fakes.
//
// A Harness gives the suite the stream under test and the producer and
// administrator sides it needs: create a stream, put a record on a chosen
// shard, split and merge shards. The suite covers every call the engine
// makes: shard listing and lineage after splits and merges, every
// iterator type, sequence-number order, page limits, the end of a closed
// shard (an empty next iterator, with ChildShards where the stream
// returns them), not-found errors and, through an optional interface,
// expired iterators.
//
// RunFanOut is the contract suite of engine.FanOutStream (enhanced fan-out),
// given a FanOutHarness: consumer registration, subscriptions from every
// position, continuation, ResourceInUse and take-over, the subscription
// lifetime, the end of a closed shard with ChildShards, and a slow reader
// that loses nothing. It runs against fakes.Kinesis and, through
// kinesisstream and the SDK, against internal/efoserver.
package streamtest
