package engine

import (
	"fmt"
	"testing"
	"time"
)

// takeSent is a take the worker sent: when, the call, and why.
type takeSent struct {
	at     time.Duration
	c      Call
	reason string
}

// takes returns the takes u sent, in order, with the reason of the
// acquisition that followed (if any).
func (u *unit) takes() []takeSent {
	var out []takeSent
	for _, e := range u.traceOf(TraceCallSent, "") {
		if e.Reason != "take" {
			continue
		}
		ts := takeSent{at: e.Mono}
		for _, s := range u.sent {
			if s.at == e.Mono && s.c.Op == OpUpdateLease && s.c.Lease.Key == e.Key && s.c.Lease.Counter == e.Counter {
				ts.c = s.c
			}
		}
		for _, a := range u.traceOf(TraceLeaseAcquired, e.Key) {
			if a.Mono >= e.Mono && a.Counter == e.Counter {
				ts.reason = a.Reason
				break
			}
		}
		out = append(out, ts)
	}
	return out
}

type wantTake struct {
	key      string
	from, to time.Duration // the take is sent in [from, to]
	expect   Expect
	reason   string
}

// Which leases a worker takes, and when. Expiry is measured on the worker's
// own clock from its first observation of the row's current version; it
// survives re-reads of an unchanged row (KCL #1803) and is reset only by a
// version change; stale reads are ignored.
func TestTakeDecisions(t *testing.T) {
	const scan = 250 * time.Millisecond // TakeInterval: scans every 225..275 ms
	slack := scan + scan/10
	dead := func(key string, counter int64) Lease {
		return Lease{Key: key, Owner: "dead", Counter: counter, Checkpoint: startSeq()}
	}
	k0, k1 := shardKey(0), shardKey(1)
	cases := []struct {
		name  string
		cfg   Config
		rows  []Lease
		at    map[time.Duration]func(u *unit) // table changes
		stale func(now time.Duration) bool    // scans at these times return the rows as at 0
		until time.Duration
		want  []wantTake
	}{
		{name: "unowned_at_once", rows: []Lease{{Key: k0, Checkpoint: startSeq()}}, until: 20 * time.Second,
			want: []wantTake{{k0, 0, 0, Expect{"", 0}, "unowned"}}},
		{name: "owned_by_dead_worker_after_a_full_lease_duration", rows: []Lease{dead(k0, 5)}, until: 30 * time.Second,
			want: []wantTake{{k0, ld, ld + slack, Expect{"dead", 5}, "expired"}}},
		{name: "counter_change_resets_expiry", rows: []Lease{dead(k0, 5)}, until: 30 * time.Second,
			at:   map[time.Duration]func(u *unit){5 * time.Second: func(u *unit) { u.put(dead(k0, 6)) }},
			want: []wantTake{{k0, 5*time.Second + ld, 5*time.Second + ld + slack, Expect{"dead", 6}, "expired"}}},
		{name: "owner_change_resets_expiry", rows: []Lease{dead(k0, 5)}, until: 30 * time.Second,
			at: map[time.Duration]func(u *unit){4 * time.Second: func(u *unit) {
				u.put(Lease{Key: k0, Owner: "other", Counter: 6, Checkpoint: startSeq()})
			}},
			want: []wantTake{{k0, 4*time.Second + ld, 4*time.Second + ld + slack, Expect{"other", 6}, "expired"}}},
		{name: "stale_lower_counter_ignored", rows: []Lease{dead(k0, 5)}, until: 30 * time.Second,
			at:    map[time.Duration]func(u *unit){5 * time.Second: func(u *unit) { u.put(dead(k0, 6)) }},
			stale: func(now time.Duration) bool { return now >= 8*time.Second && now < 18*time.Second },
			want:  []wantTake{{k0, 5*time.Second + ld, 5*time.Second + ld + slack, Expect{"dead", 6}, "expired"}}},
		{name: "own_row_resumed_at_once", rows: []Lease{{Key: k0, Owner: me, Counter: 3, Checkpoint: startSeq()}}, until: 20 * time.Second,
			want: []wantTake{{k0, 0, 0, Expect{me, 3}, "resumed"}}},
		{name: "shard_end_never_taken", until: 40 * time.Second, rows: []Lease{
			{Key: k0, Counter: 4, Checkpoint: SentinelCheckpoint(ShardEnd)},
			{Key: k1, Owner: "dead", Counter: 4, Checkpoint: SentinelCheckpoint(ShardEnd)}}},
		{name: "row_of_another_stream_never_taken", until: 30 * time.Second,
			rows: []Lease{{Key: "other:" + k0, Checkpoint: startSeq()}}},
		{name: "child_of_unfinished_parent_not_taken", until: 30 * time.Second, rows: []Lease{
			dead(k0, 5),
			{Key: k1, Parents: []string{k0}, Checkpoint: startSeq()}},
			// The parent is taken once expired; the child waits.
			want: []wantTake{{k0, ld, ld + slack, Expect{"dead", 5}, "expired"}}},
		{name: "merge_child_waits_for_its_second_parent", until: 30 * time.Second, rows: []Lease{
			{Key: k0, Counter: 3, Checkpoint: SentinelCheckpoint(ShardEnd)},
			dead(k1, 5),
			{Key: shardKey(2), Parents: []string{k0, k1}, Checkpoint: startSeq()}},
			want: []wantTake{{k1, ld, ld + slack, Expect{"dead", 5}, "expired"}}},
		{name: "merge_child_of_ended_parents_taken", until: 30 * time.Second, rows: []Lease{
			{Key: k0, Counter: 3, Checkpoint: SentinelCheckpoint(ShardEnd)},
			{Key: k1, Counter: 3, Checkpoint: SentinelCheckpoint(ShardEnd)},
			{Key: shardKey(2), Parents: []string{k0, k1}, Checkpoint: startSeq()}},
			want: []wantTake{{shardKey(2), 0, 0, Expect{"", 0}, "unowned"}}},
		{name: "max_leases_for_worker", cfg: Config{MaxLeasesForWorker: 2}, until: 30 * time.Second, rows: []Lease{
			{Key: shardKey(0), Checkpoint: startSeq()}, {Key: shardKey(1), Checkpoint: startSeq()},
			{Key: shardKey(2), Checkpoint: startSeq()}, {Key: shardKey(3), Checkpoint: startSeq()}},
			want: []wantTake{{"*", 0, 0, Expect{"", 0}, "unowned"}, {"*", 0, 0, Expect{"", 0}, "unowned"}}},
		{name: "max_leases_for_worker_caps_resumes", cfg: Config{MaxLeasesForWorker: 1}, until: 20 * time.Second, rows: []Lease{
			{Key: shardKey(0), Owner: me, Counter: 2, Checkpoint: startSeq()},
			{Key: shardKey(1), Owner: me, Counter: 2, Checkpoint: startSeq()}},
			want: []wantTake{{shardKey(0), 0, 0, Expect{me, 2}, "resumed"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.TakeInterval = scan
			u := newUnit(t, cfg)
			for _, r := range tc.rows {
				u.put(r)
			}
			initial, _ := u.store.ListLeases(t.Context(), true)
			scans := 0
			u.fault = func(c Call) (Result, bool) {
				if c.Op != OpListLeases {
					return Result{}, false
				}
				scans++
				if tc.stale != nil && tc.stale(u.now) {
					return Result{Listing: Listing{Leases: cloneLeases(initial.Leases)}}, true
				}
				return Result{}, false
			}
			for now := time.Duration(0); now <= tc.until; now += 100 * time.Millisecond {
				if f := tc.at[now]; f != nil {
					f(u)
				}
				u.runTo(now)
			}
			got := u.takes()
			if len(got) != len(tc.want) {
				t.Fatalf("%d takes, want %d: %v\n%s", len(got), len(tc.want), got, u.dump())
			}
			for i, w := range tc.want {
				g := got[i]
				if (w.key != "*" && g.c.Lease.Key != w.key) || g.at < w.from || g.at > w.to || g.c.Expect != w.expect || g.reason != w.reason {
					t.Errorf("take %d: %v at %v (%s), want %s in [%v, %v] expecting %v (%s)",
						i, g.c, g.at, g.reason, w.key, w.from, w.to, w.expect, w.reason)
				}
			}
			if tc.name == "owned_by_dead_worker_after_a_full_lease_duration" && scans < 30 {
				t.Errorf("only %d scans: the row was not re-read while unchanged", scans)
			}
		})
	}
}

func cloneLeases(ls []Lease) []Lease {
	out := make([]Lease, len(ls))
	for i := range ls {
		out[i] = ls[i].Clone()
	}
	return out
}

// A lease taken from a worker that may still be acting (expired in this
// worker's view, or stolen) is not acted on before this worker has seen its
// version stand still for LeaseDuration; one that is unowned or this
// worker's own is acted on at once.
func TestTakerWaitsOutPreviousHolder(t *testing.T) {
	cases := []struct {
		name   string
		owner  string
		leases int // the owner's leases (more than one: it is stolen from)
		// actFrom returns when the taker may act, given when it took the
		// lease.
		actFrom func(took time.Duration) time.Duration
		reason  string
	}{
		{"unowned", "", 1, func(took time.Duration) time.Duration { return took }, "unowned"},
		{"resumed", me, 1, func(took time.Duration) time.Duration { return took }, "resumed"},
		// First seen at 0, never changed: acted on from 0 + LeaseDuration.
		{"expired", "dead", 1, func(took time.Duration) time.Duration { return ld }, "expired"},
		// The victim renews at every scan: the version taken was first
		// seen by the scan that took it.
		{"stolen", "busy", 4, func(took time.Duration) time.Duration { return took + ld }, "stolen"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, Config{TakeInterval: 300 * time.Millisecond})
			for i := 0; i < tc.leases; i++ {
				key := shardKey(i)
				u.stream.add(key)
				u.stream.put(key, 1)
				u.put(Lease{Key: key, Owner: tc.owner, Counter: 2, Checkpoint: startSeq()})
			}
			if tc.name == "stolen" {
				u.fault = func(c Call) (Result, bool) {
					if c.Op == OpListLeases {
						for i := 0; i < tc.leases; i++ {
							if r := u.row(shardKey(i)); r.Owner == "busy" {
								r.Counter++
								u.put(r)
							}
						}
					}
					return Result{}, false
				}
			}
			var acq []TraceEvent
			for now := time.Duration(0); now <= 2*ld; now += 100 * time.Millisecond {
				u.runTo(now)
				if acq = u.traceOf(TraceLeaseAcquired, ""); len(acq) > 0 {
					break
				}
			}
			if len(acq) != 1 || acq[0].Reason != tc.reason {
				t.Fatalf("acquired %v, want one (%s)\n%s", acq, tc.reason, u.dump())
			}
			key := acq[0].Key
			u.runTo(acq[0].Mono + 2*ld)
			acting := u.traceOf(TraceActing, key)
			inits := u.noticesOf(NoticeInitialize, key)
			recs := u.noticesOf(NoticeRecords, key)
			if len(acting) != 1 || len(inits) != 1 || len(recs) != 1 {
				t.Fatalf("acting %v, %d initialize, %d records\n%s", acting, len(inits), len(recs), u.dump())
			}
			want := max(tc.actFrom(acq[0].Mono), acq[0].Mono)
			if acting[0].Mono != want || inits[0].at != want || recs[0].at != want {
				t.Errorf("took at %v, acted at %v (initialize %v, records %v), want %v",
					acq[0].Mono, acting[0].Mono, inits[0].at, recs[0].at, want)
			}
		})
	}
}

func (ts takeSent) String() string {
	return fmt.Sprintf("%v %v (%s)", ts.at, ts.c, ts.reason)
}
