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
type workload struct {
	rng        rng
	noPuts     bool // the producers stopped (ActRecreateStream)
	pkeys      []string
	idle       []bool // initial shards that get no records
	puts       int
	burst      float64
	burstUntil time.Duration
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
}

func (s *simulator) putMean() time.Duration {
	rate := s.w.PutRate * float64(s.w.Shards)
	if s.now < s.wl.burstUntil {
		rate *= s.wl.burst
	}
	return time.Duration(float64(time.Second) / rate)
}

// onPut is a producer putting one record (in KPL worlds, sometimes a KPL
// aggregate of several user records).
func (s *simulator) onPut() {
	wl := &s.wl
	if wl.noPuts {
		return
	}
	var h uint64
	width := ^uint64(0) / uint64(len(wl.idle))
	for tries := 0; ; tries++ {
		h = wl.rng.Uint64()
		i := int(h / width)
		if i >= len(wl.idle) {
			i = len(wl.idle) - 1
		}
		if !wl.idle[i] || tries > 20 || s.healed {
			break
		}
	}
	// the hash key h·2^64 + h lands in the initial shard h / width
	// chose: the fakes split the hash key space as evenly as this does
	pkey := wl.pkeys[wl.rng.IntN(len(wl.pkeys))]
	sh, seq, n := s.putAggregate(h) // n user records, or a plain put (0)
	if n == 0 {
		var err error
		if sh, seq, err = s.st.PutRecordWithHash(streamName, pkey, h, h, nil); err != nil {
			panic("sim: put: " + err.Error())
		}
	}
	wl.puts++
	key := s.shardKey(streamName, sh)
	s.emit(&trace.Record{Kind: trace.KindPut, Worker: -1, Proc: -1, Key: key, First: seq, Count: n})
	s.putDone(key, seq) // corrupt.go
	s.wakeShard(key)
	s.q.push(event{at: s.now + wl.rng.exp(s.putMean()), kind: evPut})
}

// putTo puts one record into the open shard id (a boundary knob feeding
// a holder near the end of its lease: see boundary.go), unless it is
// closed or unknown.
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
func (s *simulator) onTrim(stream, shard string, recs []engine.Record) {
	s.emit(&trace.Record{Kind: trace.KindTrim, Worker: -1, Proc: -1, Key: s.shardKey(stream, shard),
		First: recs[0].Sequence, Last: recs[len(recs)-1].Sequence, Count: len(recs)})
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
