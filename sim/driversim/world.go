package driversim

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/sim/trace"
)

// world is one run: the fakes every consumer shares, the consumers, and
// the history. Its lock guards everything in it, the fakes included (they
// are not safe for concurrent use), and is held only for short,
// non-blocking stretches: no goroutine ever waits (sleeps, blocks on a
// channel, calls into a consumer) while holding it.
type world struct {
	mu sync.Mutex

	o     Options
	w     World
	start time.Time // the bubble's time at true time 0
	tbl   *fakes.LeaseTable
	kin   *fakes.Kinesis

	recs   []trace.Record   // the history's current chunk
	chunks [][]trace.Record // its full chunks, in order
	nrecs  int
	ended  bool // the history is closed: nothing more is recorded
	healed bool // the chaos phase is over: no more faults

	slots   []*slot
	nodes   []*node // every consumer incarnation, by process number
	calls   uint64  // call ids of the history
	stats   Stats
	runErrs []string // what Run returned, for the report

	woken   chan struct{} // closed at each put or shard close: wakes parked NextEvents
	rWork   rng           // puts
	rSched  rng           // the director's draws at action time
	pkeys   []string
	maxOpen int

	wg  sync.WaitGroup // the consumers' Run goroutines
	aux sync.WaitGroup // the harness's other goroutines (producer, restarts)
}

// slot is a worker position: one consumer at a time runs in it, a new
// incarnation after each crash or shutdown.
type slot struct {
	idx      int
	owner    string
	restarts int
	node     *node // the current incarnation; nil while down
	down     bool  // crashed or shut down, to be restarted
}

// now returns the true time: the bubble's clock since the start.
func (w *world) now() time.Duration { return time.Since(w.start) }

// emit appends one record to the history, stamped with the true time. The
// caller holds w.mu.
func (w *world) emit(r *trace.Record) {
	if w.ended {
		return
	}
	w.nrecs++
	r.Seq = uint64(w.nrecs)
	r.T = w.now()
	if len(w.recs) == cap(w.recs) {
		if w.recs != nil {
			w.chunks = append(w.chunks, w.recs)
		}
		w.recs = make([]trace.Record, 0, 4096)
	}
	w.recs = append(w.recs, *r)
}

// history returns every record, in order; the caller holds w.mu or the
// run has ended.
func (w *world) history() []trace.Record {
	out := make([]trace.Record, 0, w.nrecs)
	for _, c := range w.chunks {
		out = append(out, c...)
	}
	return append(out, w.recs...)
}

// world records (no process).
func (w *world) emitWorld(r trace.Record) {
	r.Worker, r.Proc = -1, -1
	w.emit(&r)
}

// fault records an injected fault; the caller holds w.mu.
func (w *world) fault(worker int, key, desc string) {
	w.emit(&trace.Record{Kind: trace.KindFault, Worker: int32(worker), Proc: -1, Key: key, Reason: desc})
}

// put adds one record to a random shard of the stream; the caller holds
// w.mu.
func (w *world) put() {
	h := w.rWork.Uint64()
	sh, seq, err := w.kin.PutRecordWithHash(streamName, w.pkeys[w.rWork.IntN(len(w.pkeys))], h, h, nil)
	if err != nil {
		panic("driversim: put: " + err.Error())
	}
	w.stats.Puts++
	w.wake()
	w.emitWorld(trace.Record{Kind: trace.KindPut, Key: sh, First: seq})
}

// producer puts records until the history ends, at PutRate per shard of
// the initial stream.
func (w *world) producer() {
	mean := time.Duration(float64(time.Second) / (w.w.PutRate * float64(w.w.Shards)))
	for {
		w.mu.Lock()
		d := w.rWork.exp(mean)
		w.mu.Unlock()
		time.Sleep(d)
		w.mu.Lock()
		if w.ended {
			w.mu.Unlock()
			return
		}
		w.put()
		w.mu.Unlock()
	}
}

// openShards returns the open shards of the stream in hash key order; the
// caller holds w.mu.
func (w *world) openShards() []fakes.ShardInfo {
	all, err := w.kin.Shards(streamName)
	if err != nil {
		panic("driversim: " + err.Error())
	}
	open := all[:0]
	for _, sh := range all {
		if sh.ClosedAt.IsZero() {
			open = append(open, sh)
		}
	}
	sort.Slice(open, func(i, j int) bool {
		a, b := open[i].StartingHashKey, open[j].StartingHashKey // decimal, no leading zeros
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return a < b
	})
	return open
}

// ending returns the ending sequence number of shard id; the caller holds
// w.mu.
func (w *world) ending(id string) string {
	all, _ := w.kin.Shards(streamName)
	for _, sh := range all {
		if sh.ID == id {
			return sh.EndingSequence
		}
	}
	return ""
}

// split splits a random open shard; the caller holds w.mu.
func (w *world) split(r rng) {
	open := w.openShards()
	if len(open) >= w.maxOpen {
		return
	}
	id := open[r.IntN(len(open))].ID
	children, err := w.kin.SplitShardEvenly(streamName, id)
	if err != nil {
		return // a shard of a single hash key: nothing to split
	}
	w.stats.Splits++
	w.wake()
	w.fault(-1, id, "split "+id)
	w.emitWorld(trace.Record{Kind: trace.KindShardClosed, Key: id, Last: w.ending(id)})
	for _, c := range children {
		w.emitWorld(trace.Record{Kind: trace.KindShardCreated, Key: c, Parent: id})
	}
}

// merge merges two adjacent open shards; the caller holds w.mu.
func (w *world) merge(r rng) {
	open := w.openShards()
	if len(open) < 2 {
		return
	}
	i := r.IntN(len(open) - 1)
	x, y := open[i].ID, open[i+1].ID
	c, err := w.kin.MergeShards(streamName, x, y)
	if err != nil {
		panic("driversim: merge: " + err.Error())
	}
	w.stats.Merges++
	w.wake()
	w.fault(-1, x, "merge "+x+" "+y)
	w.emitWorld(trace.Record{Kind: trace.KindShardClosed, Key: x, Last: w.ending(x)})
	w.emitWorld(trace.Record{Kind: trace.KindShardClosed, Key: y, Last: w.ending(y)})
	w.emitWorld(trace.Record{Kind: trace.KindShardCreated, Key: c, Parent: x, Parent2: y})
}

// newSlot adds a worker position.
func (w *world) newSlot() *slot {
	sl := &slot{idx: len(w.slots), owner: "w" + strconv.Itoa(len(w.slots))}
	w.slots = append(w.slots, sl)
	return sl
}

// finalTable returns the lease table as it stands; the caller holds w.mu.
func (w *world) finalTable() []engine.Lease { return w.tbl.Snapshot().Leases }
