package sim

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// kstream is the simulated Kinesis stream: shards with hash-key ranges,
// records with increasing sequence numbers, splits and merges, retention
// trimming, iterators that expire.
type kstream struct {
	name      string
	shards    []*kshard
	byID      map[string]*kshard
	nextSeq   uint64
	nextShard int
	retention time.Duration
	iterLife  time.Duration
}

type kshard struct {
	idx      int
	info     engine.Shard
	lo, hi   uint64 // hash range, inclusive
	recs     []engine.Record
	seqs     []uint64
	puts     []time.Duration
	trim     int // index of the first record retention kept
	closed   bool
	closedAt time.Duration
	expired  bool
	children []engine.Shard
}

const seqBase = 49_000_000_000_000_000

func newStream(name string, shards int, retention time.Duration) *kstream {
	s := &kstream{name: name, byID: map[string]*kshard{}, nextSeq: seqBase, retention: retention, iterLife: 5 * time.Minute}
	width := math.MaxUint64 / uint64(shards)
	for i := 0; i < shards; i++ {
		lo := uint64(i) * width
		hi := lo + width - 1
		if i == shards-1 {
			hi = math.MaxUint64
		}
		s.addShard(lo, hi, "", "")
	}
	return s
}

func (s *kstream) addShard(lo, hi uint64, parent, parent2 string) *kshard {
	id := fmt.Sprintf("shardId-%012d", s.nextShard)
	s.nextShard++
	sh := &kshard{idx: len(s.shards), lo: lo, hi: hi}
	sh.info = engine.Shard{ID: id, Parent: parent, AdjacentParent: parent2,
		StartingHashKey: strconv.FormatUint(lo, 10), EndingHashKey: strconv.FormatUint(hi, 10),
		StartingSequence: strconv.FormatUint(s.nextSeq+1, 10)}
	s.shards = append(s.shards, sh)
	s.byID[id] = sh
	return sh
}

// open returns the open shards in hash order.
func (s *kstream) open() []*kshard {
	var out []*kshard
	for _, sh := range s.shards {
		if !sh.closed {
			out = append(out, sh)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lo < out[j].lo })
	return out
}

// put appends a record with hash h at true time now.
func (s *kstream) put(now time.Duration, h uint64, pk string) (*kshard, string) {
	var sh *kshard
	for _, x := range s.shards {
		if !x.closed && x.lo <= h && h <= x.hi {
			sh = x
			break
		}
	}
	s.nextSeq++
	seq := strconv.FormatUint(s.nextSeq, 10)
	sh.recs = append(sh.recs, engine.Record{Sequence: seq, PartitionKey: pk, Arrival: epoch.Add(now)})
	sh.seqs = append(sh.seqs, s.nextSeq)
	sh.puts = append(sh.puts, now)
	return sh, seq
}

func (s *kstream) close(now time.Duration, sh *kshard) {
	sh.closed = true
	sh.closedAt = now
	sh.info.EndingSequence = strconv.FormatUint(s.nextSeq, 10)
	s.nextSeq++ // children start after the parent's end
}

// split closes sh and creates two children that share its hash range.
func (s *kstream) split(now time.Duration, sh *kshard) (a, b *kshard) {
	s.close(now, sh)
	mid := sh.lo + (sh.hi-sh.lo)/2
	a = s.addShard(sh.lo, mid, sh.info.ID, "")
	b = s.addShard(mid+1, sh.hi, sh.info.ID, "")
	sh.children = []engine.Shard{a.info, b.info}
	return a, b
}

// merge closes two adjacent shards and creates their child.
func (s *kstream) merge(now time.Duration, x, y *kshard) *kshard {
	if x.lo > y.lo {
		x, y = y, x
	}
	s.close(now, x)
	s.close(now, y)
	c := s.addShard(x.lo, y.hi, x.info.ID, y.info.ID)
	x.children = []engine.Shard{c.info}
	y.children = []engine.Shard{c.info}
	return c
}

// trimmed is one retention trim of a shard.
type trimmed struct {
	sh          *kshard
	first, last string
	count       int
}

// expire trims records older than the retention and drops closed shards
// whose records are all gone. It returns what it trimmed and expired.
func (s *kstream) expire(now time.Duration) (trims []trimmed, gone []*kshard) {
	cut := now - s.retention
	for _, sh := range s.shards {
		if sh.expired {
			continue
		}
		j := sh.trim
		for j < len(sh.recs) && sh.puts[j] < cut {
			j++
		}
		if j > sh.trim {
			trims = append(trims, trimmed{sh, sh.recs[sh.trim].Sequence, sh.recs[j-1].Sequence, j - sh.trim})
			sh.trim = j
		}
		if sh.closed && sh.trim == len(sh.recs) && sh.closedAt < cut {
			sh.expired = true
			gone = append(gone, sh)
		}
	}
	return trims, gone
}

func (s *kstream) listShards() []engine.Shard {
	out := make([]engine.Shard, 0, len(s.shards))
	for _, sh := range s.shards {
		if !sh.expired {
			out = append(out, sh.info)
		}
	}
	return out
}

var (
	errNoShard     = fmt.Errorf("sim stream: %w", engine.ErrNotFound)
	errExpiredIter = fmt.Errorf("sim stream: %w", engine.ErrExpiredIterator)
	errBadIterator = errors.New("sim stream: invalid shard iterator")
)

func (s *kstream) iterator(sh *kshard, pos int, now time.Duration) string {
	return "it/" + strconv.Itoa(sh.idx) + "/" + strconv.Itoa(pos) + "/" + strconv.FormatInt(int64(now), 10)
}

func (s *kstream) getIterator(now time.Duration, stream, shard string, p engine.Position) (string, error) {
	sh := s.byID[shard]
	if stream != s.name || sh == nil || sh.expired {
		return "", errNoShard
	}
	var pos int
	switch p.Type {
	case engine.IterTrimHorizon:
		pos = sh.trim
	case engine.IterLatest:
		pos = len(sh.recs)
	case engine.IterAtSequenceNumber, engine.IterAfterSequenceNumber:
		v, err := strconv.ParseUint(strings.TrimLeft(p.Sequence, "0"), 10, 64)
		if err != nil {
			return "", fmt.Errorf("sim stream: bad sequence number %q", p.Sequence)
		}
		if p.Type == engine.IterAfterSequenceNumber {
			pos = sort.Search(len(sh.seqs), func(i int) bool { return sh.seqs[i] > v })
		} else {
			pos = sort.Search(len(sh.seqs), func(i int) bool { return sh.seqs[i] >= v })
		}
	case engine.IterAtTimestamp:
		t := p.Timestamp.Sub(epoch)
		pos = sort.Search(len(sh.puts), func(i int) bool { return sh.puts[i] >= t })
	default:
		return "", fmt.Errorf("sim stream: iterator type %q", p.Type)
	}
	return s.iterator(sh, pos, now), nil
}

func (s *kstream) parseIterator(it string) (sh *kshard, pos int, issued time.Duration, err error) {
	parts := strings.Split(it, "/")
	if len(parts) != 4 || parts[0] != "it" {
		return nil, 0, 0, errBadIterator
	}
	idx, e1 := strconv.Atoi(parts[1])
	pos, e2 := strconv.Atoi(parts[2])
	iss, e3 := strconv.ParseInt(parts[3], 10, 64)
	if e1 != nil || e2 != nil || e3 != nil || idx < 0 || idx >= len(s.shards) {
		return nil, 0, 0, errBadIterator
	}
	return s.shards[idx], pos, time.Duration(iss), nil
}

func (s *kstream) getRecords(now time.Duration, it string, limit int) (engine.RecordsPage, error) {
	sh, pos, issued, err := s.parseIterator(it)
	if err != nil {
		return engine.RecordsPage{}, err
	}
	if sh.expired {
		return engine.RecordsPage{}, errNoShard
	}
	if now-issued > s.iterLife {
		return engine.RecordsPage{}, errExpiredIter
	}
	if pos < sh.trim {
		pos = sh.trim // the data is gone: Kinesis continues at the oldest record kept
	}
	n := len(sh.recs) - pos
	if n > limit {
		n = limit
	}
	if n < 0 {
		n = 0
	}
	var page engine.RecordsPage
	if n > 0 {
		page.Records = sh.recs[pos : pos+n : pos+n]
	}
	next := pos + n
	if next < len(sh.recs) {
		page.MillisBehind = int64((now - sh.puts[next]) / time.Millisecond)
	}
	if sh.closed && next >= len(sh.recs) {
		page.ChildShards = sh.children
		return page, nil
	}
	page.NextIterator = s.iterator(sh, next, now)
	return page, nil
}
