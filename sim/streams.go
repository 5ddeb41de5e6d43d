package sim

import (
	"fmt"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/sim/trace"
)

// Several streams: in a share of the swarm's worlds (ConfigWorld.Multi)
// the workers run with MultiStream and consume a second stream beside the
// first, with its own shards and producer, from one lease table. Rows are
// keyed "stream:shardId", but for the LegacyStream's, which keep bare
// shard ids (half of those worlds name the first stream legacy, as a
// single-stream table being moved to several streams). The first stream
// is the one every fault and reshard strikes; the second only receives
// records (and shares the table, the workers and their faults). Every
// record of the trace names a shard by its lease key, so the checkers see
// one key per shard of either stream.

// secondStream is the second stream of a multi-stream world.
const secondStream = "sim-stream-b"

// MultiWorld is a world's several streams.
type MultiWorld struct {
	On bool
	// Shards is the second stream's shard count; Legacy: the first
	// stream is the LegacyStream (its rows keep bare shard ids).
	Shards int
	Legacy bool
}

func (m MultiWorld) String() string {
	if !m.On {
		return ""
	}
	s := fmt.Sprintf("several streams (a second with %d shards, rows keyed stream:shardId", m.Shards)
	if m.Legacy {
		s += ", the first the legacy stream with bare keys"
	}
	return s + ")"
}

// shareMulti is the share of the swarm's worlds with several streams.
const shareMulti = 0.2

// drawMulti draws the world's several streams (with the options).
func drawMulti(r rng, w *World) MultiWorld {
	m := MultiWorld{Shards: r.intIn(1, 4), Legacy: r.chance(0.5)}
	m.On = r.chance(shareMulti)
	if !m.On {
		return MultiWorld{}
	}
	if e := &w.Engine; e.MaxLeasesForWorker > 0 {
		e.MaxLeasesForWorker += (m.Shards+w.Workers-1)/w.Workers + 1 // room for the second stream's shards
	}
	return m
}

// keyFormat is how the world's rows are keyed.
func (w *World) keyFormat() engine.KeyFormat {
	m := w.Config.Multi
	if !m.On {
		return engine.KeyFormat{LegacyStream: streamName}
	}
	f := engine.KeyFormat{MultiStream: true}
	if m.Legacy {
		f.LegacyStream = streamName
	}
	return f
}

// shardKey returns the lease key of shard id of stream.
func (s *simulator) shardKey(stream, id string) string {
	if !s.w.Config.Multi.On {
		return id
	}
	return s.keys.Key(engine.ShardRef{Stream: stream, Shard: id})
}

// parseKey returns the stream and shard a lease key names (the first
// stream's for a key no format knows).
func (s *simulator) parseKey(key string) (stream, id string) {
	if !s.w.Config.Multi.On {
		return streamName, key
	}
	if ref, ok := s.keys.Parse(key); ok {
		return ref.Stream, ref.Shard
	}
	return streamName, key
}

// callKey is the key a call's trace records name: the lease key of the
// shard a stream call reads, the row of a store call.
func (s *simulator) callKey(c *engine.Call) string {
	if s.w.Config.Multi.On && c.Shard != "" && !c.Op.IsStore() {
		return s.shardKey(c.Stream, c.Shard)
	}
	return leaseKey(c)
}

// streamsOf returns the streams a world's workers consume.
func (w *World) streamsOf() []engine.StreamConfig {
	ss := []engine.StreamConfig{{Name: streamName}}
	if w.Config.Multi.On {
		ss = append(ss, engine.StreamConfig{Name: secondStream})
	}
	return ss
}

// setupSecond creates the second stream, its records generated as the
// first stream's are (fakes.CreateGeneratedStream; plain records, at the
// put rate per shard), and starts its producer.
func (s *simulator) setupSecond() {
	m := s.w.Config.Multi
	if !m.On {
		return
	}
	g := fakes.GeneratedRecords{Rate: s.w.PutRate * float64(m.Shards), PartitionKeys: s.wl.pkeys}
	if err := s.st.CreateGeneratedStream(secondStream, m.Shards, g); err != nil {
		panic("sim: " + err.Error())
	}
	shards, _ := s.st.Shards(secondStream)
	for _, sh := range shards {
		s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: s.shardKey(secondStream, sh.ID)})
	}
	s.schedulePutSecond()
}

// schedulePutSecond schedules the put of the second stream's next record,
// at its arrival; the event scheduled before is stale from now on.
func (s *simulator) schedulePutSecond() {
	s.scheduleArrival(secondStream, &s.wl.secondGen, evPutSecond)
}

// onPutSecond is the second stream's producer putting the records that
// have arrived (evPutSecond).
func (s *simulator) onPutSecond(gen uint64) {
	if gen != s.wl.secondGen || s.wl.noPuts {
		return
	}
	for {
		p, ok, err := s.st.PutGenerated(secondStream)
		if err != nil {
			panic("sim: put: " + err.Error())
		}
		if !ok {
			break
		}
		s.wl.puts++
		key := s.shardKey(secondStream, p.Shard)
		s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: key, First: p.Sequence})
		s.wakeShard(key)
	}
	s.schedulePutSecond()
}
