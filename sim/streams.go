package sim

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/engine"
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

// setupSecond creates the second stream and starts its producer.
func (s *simulator) setupSecond() {
	m := s.w.Config.Multi
	if !m.On {
		return
	}
	if err := s.st.CreateStream(secondStream, m.Shards); err != nil {
		panic("sim: " + err.Error())
	}
	shards, _ := s.st.Shards(secondStream)
	for _, sh := range shards {
		s.emit(&trace.Record{Kind: trace.KindShardCreated, Worker: -1, Proc: -1, Key: s.shardKey(secondStream, sh.ID)})
	}
	s.second = newRNG(s.o.Seed, streamSecond)
	s.q.push(event{at: s.second.exp(s.secondMean()), kind: evPutSecond})
}

func (s *simulator) secondMean() time.Duration {
	return time.Duration(float64(time.Second) / (s.w.PutRate * float64(s.w.Config.Multi.Shards)))
}

// onPutSecond is the second stream's producer putting one record.
func (s *simulator) onPutSecond() {
	if s.wl.noPuts {
		return
	}
	r := s.second
	h := r.Uint64()
	sh, seq, err := s.st.PutRecordWithHash(secondStream, s.wl.pkeys[r.IntN(len(s.wl.pkeys))], h, h, nil)
	if err != nil {
		panic("sim: put: " + err.Error())
	}
	s.wl.puts++
	key := s.shardKey(secondStream, sh)
	s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: key, First: seq})
	s.wakeShard(key)
	s.q.push(event{at: s.now + r.exp(s.secondMean()), kind: evPutSecond})
}
