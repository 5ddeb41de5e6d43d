package sim

import (
	"math/big"
	"sort"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/fakes"
	"github.com/shardlease/shardlease/sim/trace"
)

// workload is what happens to the stream outside the workers: producers
// put records (in bursts during ActBurst), some initial shards get none,
// retention trims, and shards closed by splits and merges expire.
//
// The records are the stream's own (fakes.CreateGeneratedStream): each
// open shard gets a Poisson process of records, at the put rate times its
// share of the hash key space, derived from the run's seed, the shard and
// the record's position rather than stored, so a day of retention costs no
// memory per record. The workload sets the rate (bursts, the idle shards
// until healing) and puts each record as it arrives (evPut: one event at
// the next arrival over the stream), which the trace records.
type workload struct {
	rng        rng
	noPuts     bool // the producers stopped (ActRecreateStream)
	pkeys      []string
	idle       []bool // initial shards that get no records (until healing)
	active     int    // initial shards that get records
	puts       int
	burst      float64
	burstUntil time.Duration
	rate       float64       // the stream's put rate as last set (records per second over the hash key space)
	putGen     uint64        // the live evPut event's (an older one is stale)
	secondGen  uint64        // the live evPutSecond event's (streams.go)
	maxOpen    int           // splits stop at this many open shards
	closed     []closedShard // closed shards in closing order, for expiry
	expCur     int           // closed[:expCur] have expired
}

// closedShard is a shard of the stream that a split or merge closed at at.
type closedShard struct {
	id string
	at time.Duration
}

func (wl *workload) init(w World) {
	wl.maxOpen = 2*w.Shards + 4
	for i := 0; i < 64; i++ {
		wl.pkeys = append(wl.pkeys, "pk-"+strconv.Itoa(i))
	}
}

// records is the content of the stream's records (KPL aggregates in KPL
// worlds); the rate is set at the start (startPuts).
func (wl *workload) records(w World) fakes.GeneratedRecords {
	return fakes.GeneratedRecords{PartitionKeys: wl.pkeys, AggregateShare: w.KPL.Share, AggregateMax: w.KPL.MaxRecords}
}

// drawIdle draws the initial shards that get no records (the idle-shards
// fault class).
func (wl *workload) drawIdle(shards int, idleShards bool) {
	wl.idle = make([]bool, shards)
	if idleShards && len(wl.idle) > 1 {
		n := 1 + wl.rng.IntN(len(wl.idle)/2+1)
		for i := 0; i < n && i < len(wl.idle)-1; i++ {
			wl.idle[wl.rng.IntN(len(wl.idle))] = true
		}
	}
	wl.active = 0
	for _, idle := range wl.idle {
		if !idle {
			wl.active++
		}
	}
}

// startPuts makes the idle initial shards quiet and starts the producers.
func (s *simulator) startPuts(shards []fakes.ShardInfo) {
	var quiet []string
	for i, idle := range s.wl.idle {
		if idle {
			quiet = append(quiet, shards[i].ID)
		}
	}
	if err := s.st.SetQuiet(streamName, quiet); err != nil {
		panic("sim: " + err.Error())
	}
	s.setPutRate()
}

// putRate returns the stream's put rate now, in records per second over
// the whole hash key space: PutRate per initial shard over the shards
// that get records (the idle ones get none until healing), times the
// burst's factor during one.
func (s *simulator) putRate() float64 {
	rate := s.w.PutRate * float64(s.w.Shards)
	if !s.healed && s.wl.active < s.w.Shards {
		rate *= float64(s.w.Shards) / float64(s.wl.active)
	}
	if s.now < s.wl.burstUntil {
		rate *= s.wl.burst
	}
	return rate
}

// setPutRate gives the stream the put rate of now (if it changed) and
// schedules the next put.
func (s *simulator) setPutRate() {
	if s.wl.noPuts {
		return
	}
	if r := s.putRate(); r != s.wl.rate {
		s.wl.rate = r
		if err := s.st.SetPutRate(streamName, r); err != nil {
			panic("sim: " + err.Error())
		}
	}
	s.schedulePut()
}

// heal ends the workload's faults: the idle shards get records too, and a
// burst ends.
func (s *simulator) healWorkload() {
	s.wl.burstUntil = 0
	if s.wl.noPuts {
		return
	}
	if err := s.st.SetQuiet(streamName, nil); err != nil {
		panic("sim: " + err.Error())
	}
	s.setPutRate()
}

// startBurst multiplies the put rate by factor for d (ActBurst): a burst
// replaces one going on.
func (s *simulator) startBurst(factor float64, d time.Duration) {
	s.wl.burst, s.wl.burstUntil = factor, s.now+d
	s.setPutRate()
	s.q.push(event{at: s.wl.burstUntil, kind: evPutRate})
}

// schedulePut schedules the put of the stream's next record, at its
// arrival; the event scheduled before is stale from now on. Anything that
// changes when the next record arrives (the rate, a split or merge, a
// record put explicitly) calls it.
func (s *simulator) schedulePut() { s.scheduleArrival(streamName, &s.wl.putGen, evPut) }

// scheduleArrival schedules kind at the arrival of stream's next record,
// under a new generation *gen: the event scheduled before is stale.
func (s *simulator) scheduleArrival(stream string, gen *uint64, kind evKind) {
	*gen++
	if s.wl.noPuts {
		return
	}
	if at, ok := s.st.NextArrival(stream); ok {
		s.q.push(event{at: max(at.Sub(epoch), s.now), kind: kind, a: *gen})
	}
}

// onPut puts the records that have arrived (one, but for ties), each
// recorded as a producer's put (a KPL aggregate with its user records'
// count), and schedules the next.
func (s *simulator) onPut(gen uint64) {
	if gen != s.wl.putGen || s.wl.noPuts {
		return
	}
	for {
		p, ok, err := s.st.PutGenerated(streamName)
		if err != nil {
			panic("sim: put: " + err.Error())
		}
		if !ok {
			break
		}
		s.wl.puts++
		key := s.shardKey(streamName, p.Shard)
		s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: key, First: p.Sequence, Count: p.Users})
		s.wakeShard(key)
		if p.Users > 0 {
			s.putCorrupt(p.Shard) // corrupt.go
		}
	}
	s.schedulePut()
}

// putTo puts one record into the first stream's open shard with lease key
// key (a boundary knob feeding a holder near the end of its lease: see
// boundary.go), unless it is closed or unknown.
func (s *simulator) putTo(key string) {
	stream, id := s.parseKey(key)
	if s.wl.noPuts || stream != streamName {
		return
	}
	for _, sh := range s.openShards() {
		if sh.ID != id {
			continue
		}
		h, ok := new(big.Int).SetString(sh.StartingHashKey, 10)
		if !ok {
			return
		}
		lo := new(big.Int).And(h, new(big.Int).SetUint64(^uint64(0))).Uint64()
		hi := new(big.Int).Rsh(h, 64).Uint64()
		key, seq, err := s.st.PutRecordWithHash(streamName, s.wl.pkeys[0], hi, lo, nil)
		if err != nil {
			panic("sim: put: " + err.Error())
		}
		s.wl.puts++
		k := s.shardKey(streamName, key)
		s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: k, First: seq})
		s.wakeShard(k)
		s.schedulePut()
		return
	}
}

// onRetention is the periodic retention pass: it makes the stream apply
// retention to every shard (onTrim records what it hides) and records the
// closed shards that left the listing.
func (s *simulator) onRetention() {
	if _, err := s.st.Shards(streamName); err != nil {
		panic("sim: " + err.Error())
	}
	s.expireShards()
	s.q.push(event{at: s.now + 5*time.Second, kind: evRetention})
}

// onTrim records records that retention hid. The stream applies
// retention lazily, when a call or the retention pass looks at a shard, so
// the trace shows a trim no later than a reader could observe it.
func (s *simulator) onTrim(stream, shard, first, last string, n int) {
	s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: s.shardKey(stream, shard), First: first, Last: last, Count: n})
}

// expireShards records the closed shards that have left the stream's
// listing (closed longer than the retention ago) since the last call: the
// stream answers for them as for shards that do not exist. It runs before
// every stream call, so the trace shows an expiry no later than a reader
// could observe it.
func (s *simulator) expireShards() {
	wl := &s.wl
	cut := s.now - s.w.Retention
	for wl.expCur < len(wl.closed) && wl.closed[wl.expCur].at < cut {
		s.emit(&trace.Record{Kind: trace.KindShardExpired, Worker: -1, Proc: -1, Key: s.shardKey(streamName, wl.closed[wl.expCur].id)})
		wl.expCur++
	}
}

// openShards returns the open shards of the stream in hash key order.
func (s *simulator) openShards() []fakes.ShardInfo {
	all, err := s.st.Shards(streamName)
	if err != nil {
		panic("sim: " + err.Error())
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

// shardInfo returns the stream's description of shard id.
func (s *simulator) shardInfo(id string) engine.Shard {
	all, err := s.st.Shards(streamName)
	if err != nil {
		panic("sim: " + err.Error())
	}
	for _, sh := range all {
		if sh.ID == id {
			return sh.Shard
		}
	}
	panic("sim: no shard " + id)
}
