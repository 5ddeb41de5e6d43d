package sim

import (
	"fmt"

	"github.com/shardlease/shardlease/engine"
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

// drawKPL draws w's KPL workload (a swarm, for 4 worlds in 10, or
// Options.KPL "on": the same workload as the swarm would draw when it
// draws one).
func (w *World) drawKPL(o Options, swarm bool) error {
	r := newRNG(o.Seed, streamKPL)
	switch o.KPL {
	case "":
		if !swarm || !r.chance(0.4) {
			return nil
		}
	case "on":
		r.chance(0.4) // the swarm's draw, so that the workload is the swarm's
	case "off":
		return nil
	default:
		return fmt.Errorf("sim: KPL %q is not on or off (or empty: drawn by a swarm)", o.KPL)
	}
	w.KPL = KPLWorld{Share: r.rangeF(0.1, 0.7), MaxRecords: r.intIn(2, 12)}
	return nil
}

// kplState is what the processor model and the corrupt aggregates draw
// for KPL aggregates, each from a stream of its own (the stream generates
// the aggregates: see workload.go).
type kplState struct {
	proc    rng // where the processor checkpoints in an aggregate
	corrupt rng // which aggregates a corrupt one follows, and its content (corrupt.go)
}

func (k *kplState) init(seed uint64) {
	k.proc = newRNG(seed, streamKPLProcessor)
	k.corrupt = newRNG(seed, streamCorrupt)
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
