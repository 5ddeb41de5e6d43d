package livecheck

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

type hk struct {
	proc int32
	key  string
}

func isHolderWrite(class string) bool {
	switch class {
	case trace.WriteRenew, trace.WriteCheckpoint, trace.WriteRelease, "shard-end":
		return true
	}
	return false
}

// writeLogFigures replays the applied writes: stored checkpoints that go
// back, and holder writes that landed although their writer had traced
// the loss (or release) of the lease before sending them.
func writeLogFigures(recs []trace.Record, rep *Report) {
	high := map[string]engine.Checkpoint{}
	has := map[string]bool{}
	lostAt := map[hk]time.Duration{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.LeaseAcquired:
			delete(lostAt, hk{r.Proc, r.Key})
		case trace.LeaseLost, trace.LeaseReleased:
			lostAt[hk{r.Proc, r.Key}] = r.T
		case trace.KindApply:
			if r.Op != engine.OpDeleteLease {
				if has[r.Key] && r.Checkpoint.Compare(high[r.Key]) < 0 {
					rep.CheckpointRegressions++
					if len(rep.RegressionEx) < 10 {
						rep.RegressionEx = append(rep.RegressionEx, fmt.Sprintf("%s: %s write by process %d at %v stored %s after %s",
							r.Key, r.Reason, r.Proc, r.T.Round(time.Millisecond), r.Checkpoint, high[r.Key]))
					}
				}
				if !has[r.Key] || r.Checkpoint.Compare(high[r.Key]) > 0 {
					high[r.Key], has[r.Key] = r.Checkpoint, true
				}
			}
			if t, ok := lostAt[hk{r.Proc, r.Key}]; ok && isHolderWrite(r.Reason) && r.Sent > t {
				rep.LateWrites++
				if len(rep.LateEx) < 10 {
					rep.LateEx = append(rep.LateEx, fmt.Sprintf("%s: %s write by process %d sent at %v landed although it lost the lease at %v",
						r.Key, r.Reason, r.Proc, r.Sent.Round(time.Millisecond), t.Round(time.Millisecond)))
				}
			}
		}
	}
}

type window struct{ from, to time.Duration }

type faults struct {
	perProc map[int32][]window
	global  []window
}

// faultWindows returns when each process (or every one) was under an
// injected fault.
func faultWindows(recs []trace.Record, end time.Duration) faults {
	f := faults{perProc: map[int32][]window{}}
	open := map[string]time.Duration{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindFault {
			continue
		}
		word, what, _ := strings.Cut(r.Reason, " ")
		id := fmt.Sprint(r.Proc, " ", what)
		switch word {
		case FaultStop:
			open[fmt.Sprint(r.Proc, " pause")] = r.T
		case FaultCont:
			k := fmt.Sprint(r.Proc, " pause")
			if t, ok := open[k]; ok {
				f.perProc[r.Proc] = append(f.perProc[r.Proc], window{t, r.T})
				delete(open, k)
			}
		case FaultBegin:
			open[id] = r.T
		case FaultEnd:
			if t, ok := open[id]; ok {
				w := window{t, r.T}
				if r.Proc < 0 {
					f.global = append(f.global, w)
				} else {
					f.perProc[r.Proc] = append(f.perProc[r.Proc], w)
				}
				delete(open, id)
			}
		}
	}
	for k, t := range open {
		var p int32
		fmt.Sscan(k, &p)
		if p < 0 {
			f.global = append(f.global, window{t, end})
		} else {
			f.perProc[p] = append(f.perProc[p], window{t, end})
		}
	}
	return f
}

// touched reports whether proc was under a fault at any time in [from, to].
func (f faults) touched(proc int32, from, to time.Duration) bool {
	for _, w := range append(f.global, f.perProc[proc]...) {
		if w.from <= to && w.to >= from {
			return true
		}
	}
	return false
}

func procName(procs map[int32]*history.Proc, id int32) string {
	if p := procs[id]; p != nil {
		return fmt.Sprintf("%s#%d", p.Owner, id)
	}
	return fmt.Sprintf("#%d", id)
}

func leaseTimings(procs map[int32]*history.Proc, id int32) (lease, margin, renew time.Duration) {
	cfg := map[string]string{}
	if p := procs[id]; p != nil && p.Config != nil {
		cfg = p.Config
	}
	lease = history.ConfigDuration(cfg, "lease", engine.DefaultLeaseDuration)
	renew = history.ConfigDuration(cfg, "renew", engine.DefaultRenewInterval)
	margin = history.ConfigDuration(cfg, "margin", lease/10)
	return
}

// actingAt returns the keys proc was acting on at t.
func actingAt(ts []check.Tenure, proc int32, t time.Duration) []string {
	var keys []string
	for _, x := range ts {
		if x.Proc == proc && x.Start <= t && (x.Open || x.EndT >= t) {
			keys = append(keys, x.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

type act struct {
	t    time.Duration
	proc int32
}

// faultFigures measures failover per kill, and takeover and zombie acts
// per pause.
func faultFigures(recs []trace.Record, procs map[int32]*history.Proc, rep *Report) {
	ts := check.Tenures(recs)
	acting := map[string][]act{}
	for i := range recs {
		if r := &recs[i]; r.Kind == trace.Acting {
			acting[r.Key] = append(acting[r.Key], act{r.T, r.Proc})
		}
	}
	nextActing := func(key string, notProc int32, after time.Duration) (time.Duration, bool) {
		for _, a := range acting[key] {
			if a.t > after && a.proc != notProc {
				return a.t, true
			}
		}
		return 0, false
	}
	measure := func(keys []string, proc int32, at time.Duration) (mx, mean time.Duration, pending int) {
		var sum time.Duration
		n := 0
		for _, k := range keys {
			t, ok := nextActing(k, proc, at)
			if !ok {
				pending++
				continue
			}
			d := t - at
			sum += d
			n++
			mx = max(mx, d)
		}
		if n > 0 {
			mean = sum / time.Duration(n)
		}
		return
	}
	killed := map[int32]bool{}
	for i := range recs {
		if recs[i].Kind == trace.KindFault && strings.HasPrefix(recs[i].Reason, FaultKill) {
			killed[recs[i].Proc] = true
		}
	}
	ids := make([]int32, 0, len(procs))
	for id := range procs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p := procs[id]
		if p.StopReason != "vanished" || killed[id] || p.Config["role"] != "worker" {
			continue
		}
		keys := actingAt(ts, id, p.Stop)
		mx, mean, pending := measure(keys, id, p.Stop)
		rep.Vanished = append(rep.Vanished, Failover{At: p.Stop, Who: procName(procs, id), Shards: len(keys), Max: mx, Mean: mean, Pending: pending})
	}
	stops := map[int32]time.Duration{}
	cuts := map[int32]time.Duration{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindFault {
			continue
		}
		word, what, _ := strings.Cut(r.Reason, " ")
		switch {
		case word == FaultKill:
			keys := actingAt(ts, r.Proc, r.T)
			mx, mean, pending := measure(keys, r.Proc, r.T)
			rep.Kills = append(rep.Kills, Failover{At: r.T, Who: procName(procs, r.Proc), Shards: len(keys), Max: mx, Mean: mean, Pending: pending})
		case word == FaultStop:
			stops[r.Proc] = r.T
		case word == FaultBegin && what == "cut" && r.Proc >= 0:
			cuts[r.Proc] = r.T
		case word == FaultCont || (word == FaultEnd && what == "cut" && r.Proc >= 0):
			kind, from := "pause", stops
			if word == FaultEnd {
				kind, from = "cut", cuts
			}
			at, ok := from[r.Proc]
			if !ok {
				continue
			}
			delete(from, r.Proc)
			keys := actingAt(ts, r.Proc, at)
			mx, mean, pending := measure(keys, r.Proc, at)
			p := Pause{Kind: kind, At: at, Resumed: r.T, Who: procName(procs, r.Proc), Shards: len(keys), Max: mx, Mean: mean, Pending: pending}
			zombies(recs, procs, r.Proc, keys, at, &p)
			rep.Pauses = append(rep.Pauses, p)
		}
	}
}

// zombies counts what a paused or cut-off process did on each of keys once
// its own view of the lease had passed its act-until time (the send time
// of its last write of the lease that applied, plus the lease duration,
// minus the safety margin), until it took the lease again. A pause or cut
// that outlasts the lease must leave every one of those leases expired
// in the process's own view, and it must not act on them.
//
// In session renewal a lease is valid by its holder's session instead:
// from the send of the session row's last applied renewal (the lease's own
// writes do not extend it), for every lease the process took while it held
// its session row (a worker of the default renewal that found a KCL row at
// start released it before it took any lease, and renews per lease). A
// write is timed by the core's decision (its write-sent), not by the
// driver's send of it, which may come later behind slow calls: it is
// fenced by the lease's version either way.
func zombies(recs []trace.Record, procs map[int32]*history.Proc, proc int32, keys []string, from time.Duration, p *Pause) {
	lease, margin, _ := leaseTimings(procs, proc)
	sessKey, released := "", time.Duration(-1)
	for i := range recs {
		r := &recs[i]
		if r.Proc == proc && r.Kind == trace.KindApply && engine.IsSessionRow(r.Key) && r.Key == engine.SessionKey(r.Owner) {
			sessKey = r.Key
			if r.Reason == trace.WriteRelease && released < 0 {
				released = r.T
			}
		}
	}
	for _, key := range keys {
		var sent, sessSent time.Duration = -1, -1
		decided := map[int64]time.Duration{} // the core's decisions of writes, by the version they write
		expired := false
		bound := false // the lease is bound to the process's session
		for i := range recs {
			r := &recs[i]
			if r.Proc != proc || (r.Key != key && (r.Key != sessKey || sessKey == "")) {
				continue
			}
			if r.Kind == trace.KindApply && r.Key == sessKey && (r.Reason == trace.WriteTake || r.Reason == trace.WriteRenew) {
				sessSent = max(sessSent, r.Sent)
				if bound {
					sent = sessSent
				}
				continue
			}
			if r.Key != key {
				continue
			}
			if r.Kind == trace.KindApply && r.Reason == trace.WriteTake {
				bound = sessKey != "" && (released < 0 || r.T < released)
			}
			if r.Kind == trace.KindApply && (r.Reason == trace.WriteTake || r.Reason == trace.WriteRenew || r.Reason == trace.WriteCheckpoint) {
				if bound {
					sent = sessSent
				} else {
					sent = max(sent, r.Sent)
				}
				continue
			}
			if r.Kind == trace.CallSent {
				decided[r.Counter] = r.T
			}
			if r.T < from || sent < 0 {
				continue
			}
			if r.Kind == trace.LeaseAcquired {
				break
			}
			at := r.T
			if d, ok := decided[r.Counter]; ok && r.Kind == trace.KindSend {
				// a write the core decided on while it acted, which the
				// driver sent late (its calls queued behind slow ones):
				// fenced by the lease's version, it acts when decided
				at = d
			}
			if at >= sent+lease-margin {
				expired = true
				if r.Kind == trace.Delivered || r.IsAct() {
					p.Zombie++
					if len(p.ZombieEx) < 5 {
						p.ZombieEx = append(p.ZombieEx, r.String())
					}
				}
			}
		}
		if expired {
			p.Expired++
		}
	}
}

// handoffFigures counts the records re-delivered at each handoff.
func handoffFigures(recs []trace.Record, d *deliveries, procs map[int32]*history.Proc, rep *Report) {
	ts := check.Tenures(recs)
	end := time.Duration(1<<62 - 1)
	for i := 1; i < len(ts); i++ {
		a, b := ts[i-1], ts[i]
		if a.Key != b.Key || a.Proc == b.Proc {
			continue
		}
		aEnd, bEnd := a.EndT, b.EndT
		if a.Open {
			aEnd = end
		}
		if b.Open {
			bEnd = end
		}
		n := 0
		for _, p := range d.puts[a.Key] {
			inA, inB := false, false
			for _, g := range p.got {
				if g.proc == a.Proc && g.t >= a.Start && g.t <= aEnd {
					inA = true
				}
				if g.proc == b.Proc && g.t >= b.Start && g.t <= bEnd {
					inB = true
				}
			}
			if inA && inB {
				n++
			}
		}
		cause := "open"
		switch a.EndedBy {
		case trace.KindProcStop:
			cause = "process " + procs[a.Proc].StopReason
		case trace.LeaseReleased:
			cause = "released"
			if a.Planned {
				cause = "planned move" // a shutdown or a cooperative handoff
			}
		case trace.LeaseLost:
			cause = "lost"
		case trace.StoppedActing:
			cause = "expired"
		}
		rep.Handoffs.Count++
		rep.Handoffs.Redelivered += n
		rep.Handoffs.Max = max(rep.Handoffs.Max, n)
		c := rep.Handoffs.ByCause[cause]
		c.Count++
		c.Redelivered += n
		c.Max = max(c.Max, n)
		rep.Handoffs.ByCause[cause] = c
	}
}

// lossFigures classifies every lease loss, and finds losses of healthy
// workers caused by another worker's write.
func lossFigures(recs []trace.Record, procs map[int32]*history.Proc, rep *Report) {
	var end time.Duration
	if len(recs) > 0 {
		end = recs[len(recs)-1].T
	}
	fw := faultWindows(recs, end)
	lastOwn := map[hk]time.Duration{} // last applied write of (proc, key)
	type applied struct {
		t      time.Duration
		proc   int32
		reason string
	}
	byKey := map[string][]applied{}
	acquired := map[hk][]trace.Record{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case trace.KindApply:
			byKey[r.Key] = append(byKey[r.Key], applied{r.T, r.Proc, r.Reason})
		case trace.LeaseAcquired:
			acquired[hk{r.Proc, r.Key}] = append(acquired[hk{r.Proc, r.Key}], *r)
			if r.Reason == "stolen" {
				rep.BalanceSteals++
			}
		}
	}
	for i := range recs {
		r := &recs[i]
		if r.Kind == trace.KindApply {
			lastOwn[hk{r.Proc, r.Key}] = r.T
			continue
		}
		if r.Kind != trace.LeaseLost {
			continue
		}
		lease, _, renew := leaseTimings(procs, r.Proc)
		healthy := !fw.touched(r.Proc, r.T-lease-renew, r.T)
		cause := "other"
		switch {
		case strings.HasPrefix(r.Reason, "expired"):
			cause = "expired"
			if healthy {
				rep.HealthyExpired++
			}
		case strings.HasPrefix(r.Reason, "condition failed"):
			cause = "superseded"
			since := lastOwn[hk{r.Proc, r.Key}]
			for _, a := range byKey[r.Key] {
				if a.t <= since || a.proc == r.Proc || a.t > r.T {
					continue
				}
				how := a.reason
				if a.reason == trace.WriteTake {
					for _, acq := range acquired[hk{a.proc, r.Key}] {
						if acq.T >= a.t {
							how = "take (" + acq.Reason + ")"
							break
						}
					}
				}
				if how == "take (stolen)" {
					cause = "stolen for balance"
				} else if healthy {
					rep.HealthyLostToOthers++
					if len(rep.HealthyLostEx) < 10 {
						rep.HealthyLostEx = append(rep.HealthyLostEx, fmt.Sprintf("%s lost %s at %v to a %s write by %s",
							procName(procs, r.Proc), r.Key, r.T.Round(time.Millisecond), how, procName(procs, a.proc)))
					}
				}
				break
			}
		}
		rep.Losses[cause]++
	}
	// takes of an expired lease must come a lease duration after the
	// holder's last applied write was sent (the taker saw it stand still
	// that long); an earlier one took a lease its holder could still use
	type ver struct {
		key, owner string
		counter    int64
	}
	sentOf := map[ver]time.Duration{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != trace.KindApply {
			continue
		}
		if r.Reason == trace.WriteTake && r.ExpOwner != "" && r.ExpOwner != r.RowOwner {
			how := ""
			for _, acq := range acquired[hk{r.Proc, r.Key}] {
				if acq.T >= r.T {
					how = acq.Reason
					break
				}
			}
			prev, ok := sentOf[ver{r.Key, r.ExpOwner, r.ExpCounter}]
			lease, _, _ := leaseTimings(procs, r.Proc)
			if ok && how == "expired" && r.Sent-prev < lease*98/100 {
				rep.EarlyTakes++
				if len(rep.EarlyTakeEx) < 10 {
					rep.EarlyTakeEx = append(rep.EarlyTakeEx, fmt.Sprintf("%s taken by %s at %v, %v after %s's last write was sent (lease %v)",
						r.Key, procName(procs, r.Proc), r.Sent.Round(time.Millisecond), (r.Sent-prev).Round(time.Millisecond), r.ExpOwner, lease))
				}
			}
		}
		if r.Op != engine.OpDeleteLease {
			sentOf[ver{r.Key, r.RowOwner, r.Counter}] = r.Sent
		}
	}
	// children received
	kids := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Kind == trace.KindShardCreated && (r.Parent != "" || r.Parent2 != "") {
			n := 1
			if r.Parent != "" && r.Parent2 != "" {
				n = 2
			}
			kids[r.Key] = n
		}
	}
	seen := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Kind == trace.KindReceived && r.Count > 0 && !seen[r.Key] {
			seen[r.Key] = true
			switch kids[r.Key] {
			case 1:
				rep.ChildrenSplit++
			case 2:
				rep.ChildrenMerge++
			}
		}
	}
}
