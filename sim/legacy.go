package sim

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// A legacy table: in a share of the swarm's worlds the lease table starts
// as a KCL application left it, and the workers adopt it. Before any
// worker starts, each shard of the stream has records the old application
// put, and a row KCL wrote: keyed by the bare shard id, no stream marker,
// no stream identity on the row, owned by a KCL worker that is gone, at a
// counter of its own, its checkpoint TRIM_HORIZON or the sequence number
// of one of those records. In the worlds that set AdoptUnverifiedRows the
// table also has rows of shards the stream no longer lists (a KCL table
// whose shards have expired), unfinished: without the option the workers
// would refuse the table at start.
//
// The records up to a row's checkpoint were processed by the old
// application: the simulator records them as not owed
// (trace.NotOwedPrefix). The rows are in the trace as writes that applied
// before the run (process -1, owner "kcl"), so that every checker and the
// linearizability check know them. The rows of unlisted shards must never
// be ended or deleted: the checks read them like any row.

// LegacyWorld is a world's legacy table.
type LegacyWorld struct {
	On bool
	// Records: how many records each shard has before the run (at most);
	// Unlisted: rows of shards the stream does not list.
	Records, Unlisted int
}

func (l LegacyWorld) String() string {
	if !l.On {
		return ""
	}
	s := fmt.Sprintf("a KCL table adopted (up to %d records a shard before the run", l.Records)
	if l.Unlisted > 0 {
		s += fmt.Sprintf(", %d rows of shards the stream no longer lists", l.Unlisted)
	}
	return s + ")"
}

// shareLegacy is the share of the swarm's worlds that adopt a KCL table.
const shareLegacy = 0.12

// drawLegacy draws a world's legacy table (with the options; not with
// several streams, whose first stream's rows it would have to key).
func drawLegacy(r rng, w *World) LegacyWorld {
	l := LegacyWorld{Records: r.intIn(1, 20), Unlisted: r.intIn(1, 3)}
	if !r.chance(shareLegacy) || w.Config.Multi.On || w.Etcd.On { // a KCL table is never an etcd one
		return LegacyWorld{}
	}
	l.On = true
	if !w.Config.AdoptUnverifiedRows {
		l.Unlisted = 0
	}
	return l
}

// setupLegacy fills the table and the stream as the KCL application left
// them, before any worker starts.
func (s *simulator) setupLegacy() {
	l := s.w.Config.Legacy
	if !l.On {
		return
	}
	r := newRNG(s.o.Seed, streamLegacy)
	call := uint64(0)
	wrote := func(row engine.Lease) {
		if err := s.tbl.CreateLease(s.ctx, row); err != nil {
			panic("sim: legacy row: " + err.Error())
		}
		call++
		for _, k := range []trace.Kind{trace.KindApply, trace.KindReply} {
			rec := trace.Record{Kind: k, Worker: -1, Proc: -1, Owner: "kcl", Key: row.Key, Call: call, Op: engine.OpCreateLease, Reason: trace.WriteCreate,
				Outcome: trace.OutcomeOK, RowOwner: row.Owner, Counter: row.Counter, Checkpoint: row.Checkpoint, Applied: s.now}
			if k == trace.KindReply {
				rec.RowOwner, rec.Counter, rec.Checkpoint = "", 0, engine.Checkpoint{}
			}
			s.emit(&rec)
		}
	}
	for _, sh := range s.openShards() {
		h, ok := new(big.Int).SetString(sh.StartingHashKey, 10)
		if !ok {
			continue
		}
		lo := new(big.Int).And(h, new(big.Int).SetUint64(^uint64(0))).Uint64()
		hi := new(big.Int).Rsh(h, 64).Uint64()
		var seqs []string
		for i := r.intIn(0, l.Records); i > 0; i-- {
			_, seq, err := s.st.PutRecordWithHash(streamName, s.wl.pkeys[r.IntN(len(s.wl.pkeys))], hi, lo, nil)
			if err != nil {
				panic("sim: legacy put: " + err.Error())
			}
			s.wl.puts++
			seqs = append(seqs, seq)
			s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: sh.ID, First: seq})
		}
		row := engine.Lease{Key: sh.ID, Owner: "kcl-worker-" + strconv.Itoa(r.IntN(3)), Counter: int64(r.intIn(1, 500)),
			Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
		if n := r.intIn(0, len(seqs)); n > 0 {
			row.Checkpoint = engine.SequenceCheckpoint(seqs[n-1])
			s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: sh.ID, Reason: trace.NotOwedPrefix + "processed by the KCL application",
				First: seqs[0], Last: seqs[n-1], Count: n})
		}
		wrote(row)
	}
	for i := 0; i < l.Unlisted; i++ {
		wrote(engine.Lease{Key: fmt.Sprintf("shardId-%012d", 990+i), Owner: "kcl-worker-" + strconv.Itoa(r.IntN(3)), Counter: int64(r.intIn(1, 500)),
			Checkpoint: engine.SequenceCheckpoint(strconv.Itoa(r.intIn(1, 1<<30)))})
	}
}
