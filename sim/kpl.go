package sim

import (
	"fmt"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kpl"
	"github.com/shardlease/shardlease/sim/trace"
)

// KPLWorld is how much of a run's workload the Kinesis Producer Library
// writes: a share of the puts are KPL aggregates of 2..MaxRecords user
// records, which the engine hands to the processor one user record at a
// time with sub-sequence numbers, and which the processor checkpoints at
// user-record positions, in the middle of an aggregate too. A swarm draws
// it for 4 worlds in 10, from its own PRNG streams: the other worlds draw
// everything else as they did before it existed.
type KPLWorld struct {
	Share      float64 // the share of puts that are aggregates (0: none)
	MaxRecords int     // user records per aggregate, at most
}

func (k KPLWorld) String() string {
	if k.Share == 0 {
		return ""
	}
	return fmt.Sprintf("; KPL aggregates of 2..%d user records for %.0f%% of puts", k.MaxRecords, 100*k.Share)
}

// drawKPL draws w's KPL workload (a swarm only).
func (w *World) drawKPL(o Options, swarm bool) {
	r := newRNG(o.Seed, streamKPL)
	if !swarm || !r.chance(0.4) {
		return
	}
	w.KPL = KPLWorld{Share: r.rangeF(0.1, 0.7), MaxRecords: r.intIn(2, 12)}
}

// kplState is what the workload and the processor model draw for KPL
// aggregates, from streams of their own.
type kplState struct {
	puts rng // which puts aggregate, and how many user records
	proc rng // where the processor checkpoints in an aggregate
	// corrupt: which aggregates are corrupt; corruptSeq the one just put
	// (corrupt.go)
	corrupt    rng
	corruptSeq string
}

func (k *kplState) init(seed uint64) {
	k.puts = newRNG(seed, streamKPLPuts)
	k.proc = newRNG(seed, streamKPLProcessor)
	k.corrupt = newRNG(seed, streamCorrupt)
}

// putAggregate puts, in place of one plain record with hash key h·2^64+h,
// a KPL aggregate of user records with that explicit hash key (so that
// it lands in the same shard and every user record belongs to it), and
// returns its shard and sequence number and how many user records it
// holds; n is 0 if the put is a plain one (drawn).
func (s *simulator) putAggregate(h uint64) (shard, seq string, n int) {
	k := &s.kpl
	if s.w.KPL.Share == 0 || !k.puts.chance(s.w.KPL.Share) {
		return "", "", 0
	}
	n = k.puts.intIn(2, s.w.KPL.MaxRecords)
	ehk := kpl.HashKey{Hi: h, Lo: h}.String()
	recs := make([]kpl.UserRecord, n)
	for i := range recs {
		recs[i] = kpl.UserRecord{PartitionKey: s.wl.pkeys[k.puts.IntN(len(s.wl.pkeys))], ExplicitHashKey: ehk}
	}
	if shard, seq, ok := s.putCorrupt(recs); ok {
		return shard, seq, 1 // one record, as the engine reads it (corrupt.go)
	}
	shard, seq, err := s.st.PutAggregated(streamName, recs)
	if err != nil {
		panic("sim: put aggregate: " + err.Error())
	}
	return shard, seq, n
}

// midAggregate returns, in KPL worlds and now and then (drawn), a user
// record of recs that is not the last of its aggregate in recs (the first
// one, more often than not): a checkpoint there covers part of the
// aggregate only. ok is false otherwise.
func (s *simulator) midAggregate(recs []engine.Record) (cp engine.Checkpoint, ok bool) {
	if s.w.KPL.Share == 0 || !s.kpl.proc.chance(0.5) {
		return cp, false
	}
	firstOnly := s.kpl.proc.chance(0.6)
	var at []int
	for i := 0; i+1 < len(recs); i++ {
		if recs[i].Aggregated && recs[i+1].Sequence == recs[i].Sequence && (!firstOnly || recs[i].SubSequence == 0) {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return cp, false
	}
	return position(&recs[at[s.kpl.proc.IntN(len(at))]]), true
}

// position is the checkpoint at record r.
func position(r *engine.Record) engine.Checkpoint {
	return engine.Checkpoint{Sequence: r.Sequence, SubSequence: r.SubSequence}
}

// batchRecord fills the First and Last of a trace record (KindReceived)
// from a batch: its first and last user records.
func batchRecord(r *trace.Record, recs []engine.Record) {
	first, last := &recs[0], &recs[len(recs)-1]
	r.First, r.FirstSub = first.Sequence, int32(first.SubSequence)
	r.Last, r.LastSub = last.Sequence, int32(last.SubSequence)
}
