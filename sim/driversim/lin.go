package driversim

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/linearizability"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

// Lin is the invariant "the lease table's history is linearizable", as
// package sim names it: every lease-table call of the history (the
// writes from their KindSend to their reply or KindCallEnd, the GetLease
// replies with the row they read) is explained by some order of the calls
// on one register per key.
const Lin = "Lin"

// checkLin checks Lin over the history recs (linearizability.Online, key
// by key in windows) and returns its verdict and, if a key's history is
// not linearizable, the violation.
//
// The online check closes a window once no read sent within ReadLag
// before the record being observed can still be reported. The simulator
// answers every read within the call timeout; here a paused consumer
// reads (and the history records) a reply only when it wakes, long after
// it arrived. So the check runs on the whole history at the end, with
// ReadLag the longest time from a GetLease's send to its recorded reply
// in this history: no window closes before a read that belongs to it is
// reported.
func checkLin(recs []trace.Record, callTimeout time.Duration) (linearizability.OnlineResult, *check.Violation) {
	lag := callTimeout
	for i := range recs {
		if r := &recs[i]; r.Kind == trace.KindReply && r.Op == engine.OpGetLease {
			lag = max(lag, r.T-r.Sent)
		}
	}
	on := linearizability.NewOnline(linearizability.OnlineConfig{ReadLag: lag + time.Millisecond})
	for i := range recs {
		on.Observe(&recs[i])
	}
	r := on.Finish()
	if len(r.Illegal) == 0 {
		return r, nil
	}
	key, w := r.Illegal[0], r.Windows[0]
	keys := r.Illegal
	if len(keys) > 5 {
		keys = append(keys[:5:5], "...")
	}
	return r, &check.Violation{Invariant: Lin, Key: key, From: w[0], To: w[1],
		Detail: fmt.Sprintf("the lease table's history is not linearizable on %d of %d keys: %s (%d calls checked, %d writes of unknown outcome; no order of the calls of %s between %v and %v explains their outcomes)",
			len(r.Illegal), r.Keys, strings.Join(keys, ", "), r.Ops, r.UnknownWrites, key, w[0], w[1])}
}
