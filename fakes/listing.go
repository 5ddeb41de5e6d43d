package fakes

import (
	"slices"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// shardListing is a stream's ListShards answer, shared by every caller
// until the shards change (a shard added or closed: forget) or a closed
// shard's retention ends (until): a fleet of workers syncing a stream of
// thousands of shards holds one listing, not one each.
type shardListing struct {
	shards []engine.Shard // nil: none kept
	until  time.Time      // valid up to and including this time (zero: for ever)
}

// forget drops the kept listing: the stream's shards changed.
func (l *shardListing) forget() { *l = shardListing{} }

// listing returns the shards of s that are listed at now: the kept
// listing if it is still valid, else a new one, kept.
func (k *Kinesis) listing(s *kstream, now time.Time) []engine.Shard {
	l := &s.listing
	if l.shards != nil && (l.until.IsZero() || !now.After(l.until)) {
		return l.shards
	}
	out := make([]engine.Shard, 0, len(s.open))
	var until time.Time
	for _, sh := range s.shards {
		if !k.listed(sh, now) {
			continue
		}
		out = append(out, sh.info)
		if !sh.closed.IsZero() {
			// listed while now <= closed + retention
			if u := sh.closed.Add(k.opts.Retention); until.IsZero() || u.Before(until) {
				until = u
			}
		}
	}
	out = slices.Clip(out) // an append by a caller copies
	*l = shardListing{shards: out, until: until}
	return out
}
