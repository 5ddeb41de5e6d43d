package fakes

import (
	"math"
	"math/big"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// SplitShard splits the open shard of stream into two children, as the
// Kinesis SplitShard call does: the shard closes (its EndingSequence is
// set and it takes no more records), the first child covers
// [StartingHashKey, newStartingHashKey-1] and the second
// [newStartingHashKey, EndingHashKey], both with Parent set to shard.
// newStartingHashKey is a decimal hash key strictly inside the shard's
// range (greater than its StartingHashKey, at most its EndingHashKey). It
// returns the children's ids. A missing stream or shard is an error
// wrapping engine.ErrNotFound; a closed shard or a hash key out of range
// is an invalid request.
func (k *Kinesis) SplitShard(stream, shard, newStartingHashKey string) ([]string, error) {
	s, sh, err := k.reshardable("SplitShard", stream, shard)
	if err != nil {
		return nil, err
	}
	at, err := parseHashKey(newStartingHashKey)
	if err != nil {
		return nil, &callError{msg: "SplitShard " + stream + "/" + shard + ": " + err.Error(), err: ErrInvalidArgument}
	}
	if at.cmp(sh.start) <= 0 || at.cmp(sh.end) > 0 {
		return nil, &callError{msg: "SplitShard " + stream + "/" + shard + ": new starting hash key " + newStartingHashKey +
			" is not in (" + sh.info.StartingHashKey + ", " + sh.info.EndingHashKey + "]", err: ErrInvalidArgument}
	}
	now := k.clock.Now()
	k.closeShard(s, sh)
	a := s.addShard(sh.start, at.dec(), shard, "", now)
	b := s.addShard(at, sh.end, shard, "", now)
	sh.children = []string{a.info.ID, b.info.ID}
	s.reindexOpen()
	if s.gen != nil {
		k.startGen(s, a, sh.gen.quiet, now)
		k.startGen(s, b, sh.gen.quiet, now)
		s.gen.rebuild(s.open)
	}
	return []string{a.info.ID, b.info.ID}, nil
}

// SplitShardEvenly splits the open shard in the middle of its hash range
// (see SplitShard). A shard covering a single hash key cannot be split.
func (k *Kinesis) SplitShardEvenly(stream, shard string) ([]string, error) {
	_, sh, err := k.reshardable("SplitShardEvenly", stream, shard)
	if err != nil {
		return nil, err
	}
	// mid = start + (end-start+1)/2, which is > start when end > start.
	lo, hi := sh.start.big(), sh.end.big()
	mid := new(big.Int).Sub(hi, lo)
	mid.Add(mid, big.NewInt(1)).Rsh(mid, 1).Add(mid, lo)
	return k.SplitShard(stream, shard, mid.String())
}

// MergeShards merges two open shards of stream with adjacent hash ranges
// into one child, as the Kinesis MergeShards call does: both close, and
// the child covers the union of their ranges, with Parent set to shard and
// AdjacentParent to adjacentShard. It returns the child's id. A missing
// stream or shard is an error wrapping engine.ErrNotFound; a closed shard,
// a shard merged with itself or ranges that do not touch are invalid
// requests.
func (k *Kinesis) MergeShards(stream, shard, adjacentShard string) (string, error) {
	s, a, err := k.reshardable("MergeShards", stream, shard)
	if err != nil {
		return "", err
	}
	_, b, err := k.reshardable("MergeShards", stream, adjacentShard)
	if err != nil {
		return "", err
	}
	if a == b {
		return "", &callError{msg: "MergeShards " + stream + ": cannot merge " + shard + " with itself", err: ErrInvalidArgument}
	}
	lo, hi := a, b
	if b.start.cmp(a.start) < 0 {
		lo, hi = b, a
	}
	if lo.end.inc() != hi.start {
		return "", &callError{msg: "MergeShards " + stream + ": " + shard + " [" + a.info.StartingHashKey + ", " +
			a.info.EndingHashKey + "] and " + adjacentShard + " [" + b.info.StartingHashKey + ", " +
			b.info.EndingHashKey + "] are not adjacent", err: ErrInvalidArgument}
	}
	now := k.clock.Now()
	k.closeShard(s, a)
	k.closeShard(s, b)
	c := s.addShard(lo.start, hi.end, shard, adjacentShard, now)
	a.children = []string{c.info.ID}
	b.children = []string{c.info.ID}
	s.reindexOpen()
	if s.gen != nil {
		k.startGen(s, c, a.gen.quiet && b.gen.quiet, now)
		s.gen.rebuild(s.open)
	}
	return c.info.ID, nil
}

// reshardable returns the shard if it exists and is open.
func (k *Kinesis) reshardable(call, stream, shard string) (*kstream, *kshard, error) {
	s, sh, err := k.lookup(0, stream, shard)
	if err != nil {
		return nil, nil, &callError{msg: call, err: err}
	}
	if !sh.closed.IsZero() {
		return nil, nil, &callError{msg: call + " " + stream + "/" + shard + ": shard is closed", err: ErrInvalidArgument}
	}
	return s, sh, nil
}

// closeShard closes sh at the clock's reading: its EndingSequence is the
// next number of the stream (of a generated shard, its own), above every
// record it holds. A generated shard gets no more records: what it holds
// is what it had when it closed.
func (k *Kinesis) closeShard(s *kstream, sh *kshard) {
	if sh.gen != nil {
		sh.info.EndingSequence = sh.seq.format(sh.counter(sh.gen.n))
		sh.gen.next, sh.gen.tip = math.MaxInt64, segCursor{}
	} else {
		sh.info.EndingSequence = sh.seq.format(s.seq.take())
	}
	s.listing.forget()
	sh.closed = k.clock.Now()
	if last := k.origin.Add(time.Duration(sh.lastArrival)); sh.closed.Before(last) {
		sh.closed = last
	}
}

// childInfos returns the current descriptions of sh's children.
func (s *kstream) childInfos(sh *kshard) []engine.Shard {
	out := make([]engine.Shard, len(sh.children))
	for i, id := range sh.children {
		out[i] = s.byID[id].info
	}
	return out
}
