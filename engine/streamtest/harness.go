package streamtest

import (
	"testing"

	"github.com/shardlease/shardlease/engine"
)

// Harness drives one implementation of engine.Stream for the suite.
// Failures inside a method should call t.Fatal.
type Harness interface {
	// Stream returns the engine.Stream under test.
	Stream() engine.Stream
	// CreateStream creates a new stream with the given number of open
	// shards, whose hash ranges split the 128-bit key space evenly as
	// Kinesis does, waits until it can be read, and returns its name
	// (unique for the harness).
	CreateStream(t *testing.T, shards int) string
	// Put writes one record holding data on the open shard whose hash
	// range holds hashKey (a decimal 128-bit number). A stream that takes
	// explicit hash keys is given hashKey; one that routes only by
	// partition key gets a partition key that hashes into that shard.
	// Records put later must not get an earlier arrival time.
	Put(t *testing.T, stream, hashKey string, data []byte) Written
	// Split splits shard at newStartingHashKey (the first hash key of the
	// second child) and waits until the children can be read.
	Split(t *testing.T, stream, shard, newStartingHashKey string)
	// Merge merges shard with adjacent and waits until the child can be
	// read.
	Merge(t *testing.T, stream, shard, adjacent string)
}

// Expirer is an optional interface of a Harness that can make iterators
// expire (the fakes advance time past the iterator lifetime). Without it
// the expired-iterator test is skipped; the Kinesis adapter covers the
// error mapping with a proxy instead.
type Expirer interface {
	// ExpireIterators makes every iterator handed out so far expired.
	ExpireIterators(t *testing.T)
}

// Written says where Harness.Put wrote a record.
type Written struct {
	PartitionKey string
	Shard        string
	Sequence     string
}
