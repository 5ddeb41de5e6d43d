package kinesisstream_test

import (
	"testing"

	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/engine/streamtest"
)

// TestContract runs the engine.Stream contract suite against kinesalite.
// kinesalite never returns ChildShards (the suite then checks the
// ListShards fall-back) and iterators expire only after 300 s (the suite
// skips that case; TestErrorMapping covers it through a proxy).
func TestContract(t *testing.T) {
	c, _ := client(t)
	streamtest.Run(t, &harness{c: c, stream: kinesisstream.New(c, kinesisstream.WithShardPageSize(2))})
}
