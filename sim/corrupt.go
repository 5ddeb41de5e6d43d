package sim

import (
	"github.com/shardlease/shardlease/engine/kpl"
	"github.com/shardlease/shardlease/sim/trace"
)

// Corrupt KPL aggregates: in a share of the KPL worlds (ConfigWorld.
// CorruptShare, drawn with the options), after some of the aggregates the
// stream generates the producer puts one more record to the same shard,
// explicitly: an aggregate that starts with the KPL's magic bytes but
// fails its MD5 check, as a producer other than the KPL may write. The
// engine drops it (TraceAggregateDropped), or, with
// Config.DeliverCorruptAggregates, delivers it as one record, as it was
// read. A dropped one is owed to no processor: the simulator records it as
// not owed (trace.NotOwedPrefix) as it puts it; a delivered one is owed
// like any record. The draws come from a stream of their own, so a world
// without corrupt aggregates draws nothing here, and its stream generates
// the records it would without them.

// putCorrupt follows a generated aggregate put to the first stream's
// shard id: when the world puts corrupt aggregates and the draw says so,
// it puts to that shard an aggregate of 2..MaxRecords user records with
// its digest broken, and records it. The caller reschedules the
// generated puts (schedulePut): an explicit put starts a new stretch of
// the shard's arrivals.
func (s *simulator) putCorrupt(id string) {
	k := &s.kpl
	if s.w.Config.CorruptShare == 0 || !k.corrupt.chance(s.w.Config.CorruptShare) {
		return
	}
	ehk := ""
	for _, sh := range s.openShards() {
		if sh.ID == id {
			ehk = sh.StartingHashKey // decimal: every user record lands in the shard
		}
	}
	if ehk == "" {
		return // closed since (not by the simulator's own put loop)
	}
	recs := make([]kpl.UserRecord, k.corrupt.intIn(2, max(s.w.KPL.MaxRecords, 2)))
	for i := range recs {
		recs[i] = kpl.UserRecord{PartitionKey: s.wl.pkeys[k.corrupt.IntN(len(s.wl.pkeys))], ExplicitHashKey: ehk}
	}
	data, err := kpl.Encode(recs)
	if err != nil {
		panic("sim: encode aggregate: " + err.Error())
	}
	data[len(data)-1] ^= 0xff // the digest no longer matches
	pk, h, err := kpl.Route(recs)
	if err != nil {
		panic("sim: route aggregate: " + err.Error())
	}
	shard, seq, err := s.st.PutRecordWithHash(streamName, pk, h.Hi, h.Lo, data)
	if err != nil {
		panic("sim: put corrupt aggregate: " + err.Error())
	}
	s.wl.puts++
	key := s.shardKey(streamName, shard)
	// one record, as the engine reads it
	s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: key, First: seq, Count: 1})
	if !s.w.Config.DeliverCorruptAggregates {
		s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: key, Reason: trace.NotOwedPrefix + "a corrupt KPL aggregate, which the engine drops",
			First: seq, Last: seq, Count: 1})
	}
	s.wakeShard(key)
}
