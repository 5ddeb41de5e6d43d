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
package streamtest
