package sim

import (
	"github.com/shardlease/shardlease/engine/kpl"
	"github.com/shardlease/shardlease/sim/trace"
)

// Corrupt KPL aggregates: in a share of the KPL worlds (ConfigWorld.
// CorruptShare, drawn with the options), some of the puts that would be
// aggregates are records that start with the KPL's magic bytes but fail
// its MD5 check, as a producer other than the KPL may write. The engine
// drops them (TraceAggregateDropped), or, with
// Config.DeliverCorruptAggregates, delivers each as one record, as it was
// read. A dropped one is owed to no processor: the simulator records it as
// not owed (trace.NotOwedPrefix) as it puts it; a delivered one is owed
// like any record. The draws come from a stream of their own.

// putCorrupt puts, when the world puts corrupt aggregates and the draw
// says so, the aggregate of recs with its digest broken, and reports its
// shard and sequence number.
func (s *simulator) putCorrupt(recs []kpl.UserRecord) (shard, seq string, ok bool) {
	k := &s.kpl
	if s.w.Config.CorruptShare == 0 || !k.corrupt.chance(s.w.Config.CorruptShare) {
		return "", "", false
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
	shard, seq, err = s.st.PutRecordWithHash(streamName, pk, h.Hi, h.Lo, data)
	if err != nil {
		panic("sim: put corrupt aggregate: " + err.Error())
	}
	k.corruptSeq = seq
	return shard, seq, true
}

// putDone is a put recorded (KindPut): a corrupt aggregate that the
// engine drops is owed to no processor.
func (s *simulator) putDone(shard, seq string) {
	k := &s.kpl
	if k.corruptSeq == "" || k.corruptSeq != seq {
		return
	}
	k.corruptSeq = ""
	if s.w.Config.DeliverCorruptAggregates {
		return
	}
	s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: shard, Reason: trace.NotOwedPrefix + "a corrupt KPL aggregate, which the engine drops",
		First: seq, Last: seq, Count: 1})
}
