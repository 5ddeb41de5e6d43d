package livecheck

import (
	"strconv"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/trace"
)

// userRec is a user record's position in its shard: the sequence number
// of the Kinesis record that carries it and its sub-sequence number (its
// index in a KPL aggregate; 0 for a record that is not aggregated). The
// figures count user records: a put of a KPL aggregate (KindPut with
// Count > 1) is Count of them.
type userRec struct {
	seq string
	sub int64
}

func (u userRec) String() string {
	if u.sub == 0 {
		return u.seq
	}
	return u.seq + "/" + strconv.FormatInt(u.sub, 10)
}

// cmpUser orders user records by sequence number, then sub-sequence
// number.
func cmpUser(a, b userRec) int {
	if c := engine.CompareSequences(a.seq, b.seq); c != 0 {
		return c
	}
	switch {
	case a.sub < b.sub:
		return -1
	case a.sub > b.sub:
		return 1
	}
	return 0
}

// firstOf and lastOf are the first and last user records of a batch.
func firstOf(r *trace.Record) userRec { return userRec{r.First, int64(r.FirstSub)} }
func lastOf(r *trace.Record) userRec  { return userRec{r.Last, int64(r.LastSub)} }

// atCheckpoint is the user record a checkpoint names.
func atCheckpoint(c engine.Checkpoint) userRec { return userRec{c.Sequence, c.SubSequence} }

// usersOf is the number of user records a put carries.
func usersOf(r *trace.Record) int { return max(r.Count, 1) }
