package sim

import (
	"github.com/shardlease/shardlease/sim/trace"
)

// recorder is the run's trace: every record is numbered, stamped with the
// true time, hashed into the trace hash and written to the sink, if any.
type recorder struct {
	recs   []trace.Record // the current chunk
	chunks [][]trace.Record
	n      int
	hash   trace.Hash
	sink   *trace.Writer
}

const chunkSize = 4096

func (rc *recorder) init(o Options) {
	rc.hash = trace.NewHash()
	if o.Trace != nil {
		rc.sink = trace.NewWriter(o.Trace)
	}
}

// emit records one trace record.
func (s *simulator) emit(r *trace.Record) {
	rc := &s.rec
	rc.n++
	r.Seq = uint64(rc.n)
	r.T = s.now
	rc.hash.Add(r)
	if len(rc.recs) == cap(rc.recs) {
		if rc.recs != nil {
			rc.chunks = append(rc.chunks, rc.recs)
		}
		rc.recs = make([]trace.Record, 0, chunkSize)
	}
	rc.recs = append(rc.recs, *r)
	if rc.sink != nil {
		_ = rc.sink.Write(r)
	}
}

// all returns every record so far in one slice.
func (rc *recorder) all() []trace.Record {
	all := make([]trace.Record, 0, rc.n)
	for _, c := range rc.chunks {
		all = append(all, c...)
	}
	all = append(all, rc.recs...)
	rc.chunks, rc.recs = nil, all
	return all
}

// procRec fills the process fields of a record.
func (s *simulator) procRec(p *proc, r *trace.Record) *trace.Record {
	r.Worker = int32(p.slot)
	r.Proc = p.id
	r.Owner = p.owner
	r.Mono = p.clk.mono(s.now)
	r.Wall = p.clk.wall(s.now).UnixNano()
	return r
}

// fault records an injected fault. Its Worker is -1, or the slot an action
// aimed at a shard's owner resolved to (faultWorker).
func (s *simulator) fault(desc, key string) {
	s.emit(&trace.Record{Kind: trace.KindFault, Worker: s.fs.faultWorker, Proc: -1, Key: key, Reason: desc})
}
