package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// writes returns the table writes u sent, in order.
func (u *unit) writes() []Call {
	var out []Call
	for _, s := range u.sent {
		if s.c.Op.IsWrite() {
			out = append(out, s.c)
		}
	}
	return out
}

// identityOf returns the identity the unit's tStream gives stream s.
func (u *unit) identityOf() string {
	info, _ := u.stream.DescribeStream(context.Background(), "s")
	return info.Identity()
}

// startUnit returns a unit whose start-up check goes through the test's
// hold, fault and log.
func startUnit(t *testing.T, cfg Config) *unit {
	u := newUnit(t, cfg)
	u.testStart = true
	return u
}

// On an empty table the first write of a worker is the stream marker,
// naming the stream's identity; then it works as ever.
func TestStartupWritesTheMarkerFirst(t *testing.T) {
	u := startUnit(t, Config{})
	u.stream.add(shardKey(0))
	u.tick()
	u.runTo(time.Second)
	ws := u.writes()
	if len(ws) < 2 || ws[0].Op != OpCreateLease || ws[0].Lease.Key != MarkerPrefix {
		t.Fatalf("writes %v: want the marker first", ws)
	}
	if m := u.row(MarkerPrefix); m.StreamID != u.identityOf() || !m.Checkpoint.IsShardEnd() || m.Owner != "" {
		t.Errorf("marker %v", m)
	}
	if r := u.row(shardKey(0)); r.StreamID != u.identityOf() {
		t.Errorf("created row %v does not carry the stream's identity", r)
	}
	if !u.w.Started() || len(u.traceOf(TraceStarted, "")) != 1 {
		t.Errorf("not started")
	}
	// A marker row is no lease: never taken.
	if slices.Contains(u.w.Held(), MarkerPrefix) {
		t.Errorf("the marker was taken")
	}
}

// mismatch runs u until it stops and returns its StreamMismatchError.
func mismatch(t *testing.T, u *unit) *StreamMismatchError {
	t.Helper()
	u.tick()
	u.runTo(5 * time.Second)
	if !u.stopped {
		t.Fatalf("the worker did not stop: %s", u.dump())
	}
	var e *StreamMismatchError
	if !errors.As(u.w.Err(), &e) || !errors.Is(u.w.Err(), ErrStreamMismatch) {
		t.Fatalf("stopped with %v, want a StreamMismatchError", u.w.Err())
	}
	if ws := u.writes(); len(ws) != 0 {
		t.Errorf("wrote %v before the check", ws)
	}
	return e
}

// A table whose marker names another stream (a typo, another application's
// table) or an earlier stream of the same name (deleted and re-created)
// stops the worker before it writes anything.
func TestStartupRefusesAnotherStreamsTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marker string
	}{
		{"another stream", "arn:aws:kinesis:test:0:stream/bar-a@1600000000"},
		{"the same name, re-created", "arn:aws:kinesis:test:0:stream/s@1500000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := startUnit(t, Config{})
			u.stream.add(shardKey(0))
			if err := u.store.CreateLease(t.Context(), markerRow(MarkerPrefix, tc.marker)); err != nil {
				t.Fatal(err)
			}
			if err := u.store.CreateLease(t.Context(), Lease{Key: shardKey(0), Checkpoint: SequenceCheckpoint("42"), StreamID: tc.marker}); err != nil {
				t.Fatal(err)
			}
			e := mismatch(t, u)
			if e.Found != DescribeIdentity(tc.marker) || e.Key != MarkerPrefix || e.Stream != "s" {
				t.Errorf("error %+v", e)
			}
			if r := u.row(shardKey(0)); r.Checkpoint.Sequence != "42" || r.Owner != "" {
				t.Errorf("row touched: %v", r)
			}
		})
	}
}

// A table without a marker (KCL's, or an earlier shardlease's) whose
// unfinished rows name shards the stream does not have is refused too:
// the case, a 4-shard stream's table opened for a 2-shard stream.
// Rows of another identity are refused whatever the listing.
func TestStartupRefusesUnverifiedRows(t *testing.T) {
	u := startUnit(t, Config{})
	u.stream.add(shardKey(0))
	u.stream.add(shardKey(1))
	for i := 0; i < 4; i++ {
		if err := u.store.CreateLease(t.Context(), Lease{Key: shardKey(i), Checkpoint: SequenceCheckpoint("42")}); err != nil {
			t.Fatal(err)
		}
	}
	e := mismatch(t, u)
	if !slices.Equal(e.Rows, []string{shardKey(2), shardKey(3)}) {
		t.Errorf("unverified rows %v, want shards 2 and 3", e.Rows)
	}

	u = startUnit(t, Config{})
	u.stream.add(shardKey(0))
	if err := u.store.CreateLease(t.Context(), Lease{Key: shardKey(0), Checkpoint: SequenceCheckpoint("42"), StreamID: "arn:other@1"}); err != nil {
		t.Fatal(err)
	}
	if e := mismatch(t, u); e.Key != shardKey(0) {
		t.Errorf("error %+v, want one naming row %s", e, shardKey(0))
	}
}

// A table without a marker whose rows are all of shards the stream lists
// (or of parents of listed shards) is adopted: the marker is written and
// the rows are consumed, and stamped with the stream's identity when
// taken. With AdoptUnverifiedRows, rows of unlisted shards are adopted too
// but never ended or deleted.
func TestStartupAdoptsATableWithoutMarker(t *testing.T) {
	u := startUnit(t, Config{})
	u.stream.add(shardKey(0))
	u.stream.close(shardKey(0))
	u.stream.add(shardKey(1), shardKey(0))
	if err := u.store.CreateLease(t.Context(), Lease{Key: shardKey(0), Checkpoint: SentinelCheckpoint(TrimHorizon)}); err != nil {
		t.Fatal(err)
	}
	u.tick()
	u.runTo(time.Second)
	if !u.w.Started() {
		t.Fatalf("not started: %v", u.w.Err())
	}
	if ws := u.writes(); len(ws) == 0 || ws[0].Lease.Key != MarkerPrefix {
		t.Fatalf("writes %v: want the marker first", ws)
	}
	if r := u.row(shardKey(0)); len(u.traceOf(TraceLeaseAcquired, shardKey(0))) != 1 || r.StreamID != u.identityOf() {
		t.Errorf("adopted row %v: not taken and stamped", r)
	}

	// AdoptUnverifiedRows: a row of a shard the stream does not list is
	// taken, but its shard not found is no proof it ended.
	u = startUnit(t, Config{AdoptUnverifiedRows: true})
	u.stream.add(shardKey(0))
	if err := u.store.CreateLease(t.Context(), Lease{Key: shardKey(7), Checkpoint: SequenceCheckpoint("42")}); err != nil {
		t.Fatal(err)
	}
	u.tick()
	u.runTo(time.Minute)
	if r := u.row(shardKey(7)); r.Checkpoint.Sequence != "42" || r.Checkpoint.IsShardEnd() {
		t.Errorf("unverified row %v ended", r)
	}
	if n := len(u.traceOf(TraceShardUnverified, shardKey(7))); n != 1 {
		t.Errorf("%d shard-unverified reports, want 1", n)
	}
	if n := len(u.sentOf(OpDeleteLease, shardKey(7), 0, time.Hour)); n != 0 {
		t.Errorf("deleted the unverified row")
	}
}

// The data loss, run to its end: without the stream check, a
// worker of a 2-shard stream on a 4-shard stream's table ended and deleted
// the rows of shards 2 and 3. A row that carries the stream's own identity
// and whose shard is no longer listed is provably past retention: it is
// ended (and its children start).
func TestOnlyProvenRowsAreEnded(t *testing.T) {
	u := newUnit(t, Config{})
	id := u.identityOf()
	u.stream.add(shardKey(0))
	u.put(Lease{Key: shardKey(0), Checkpoint: SequenceCheckpoint("1"), StreamID: id})
	u.put(Lease{Key: shardKey(5), Checkpoint: SequenceCheckpoint("1"), StreamID: id}) // ours, expired
	u.put(Lease{Key: shardKey(6), Checkpoint: SequenceCheckpoint("1")})               // unproven
	u.put(Lease{Key: shardKey(8), Checkpoint: SequenceCheckpoint("1"), StreamID: "arn:other@1"})
	u.tick()
	u.runTo(time.Minute)
	if r := u.row(shardKey(6)); r.Checkpoint.IsShardEnd() {
		t.Errorf("unproven row ended: %v", r)
	}
	if r := u.row(shardKey(8)); r.Owner != "" || r.Counter != 0 {
		t.Errorf("a row of another stream was written: %v", r)
	}
	if n := len(u.traceOf(TraceForeignRow, shardKey(8))); n != 1 {
		t.Errorf("%d foreign-row reports, want 1", n)
	}
	if _, err := u.store.GetLease(t.Context(), shardKey(5)); err == nil {
		if r := u.row(shardKey(5)); !r.Checkpoint.IsShardEnd() {
			t.Errorf("our expired shard's row not ended: %v", r)
		}
	}
	if n := len(u.traceOf(TraceShardEnded, shardKey(5))); n != 1 {
		t.Errorf("our expired shard ended %d times, want 1", n)
	}
}

// Start-up errors a person must fix stop the worker with a typed error;
// others are retried.
func TestStartupErrors(t *testing.T) {
	cases := []struct {
		name string
		op   Op
		err  error
		want error
	}{
		{"stream missing", OpDescribeStream, ErrNotFound, ErrStreamMissing},
		{"credentials rejected", OpDescribeStream, ErrAccessDenied, ErrAccessDenied},
		{"table missing", OpGetLease, ErrTableMissing, ErrTableMissing},
		{"not authorized on the table", OpGetLease, ErrAccessDenied, ErrAccessDenied},
		{"transient", OpGetLease, errTimeout, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := startUnit(t, Config{})
			u.stream.add(shardKey(0))
			failures := 0
			u.fault = func(c Call) (Result, bool) {
				if c.Op == tc.op && failures < 3 {
					failures++
					return Result{Err: tc.err}, true
				}
				return Result{}, false
			}
			u.tick()
			u.runTo(30 * time.Second)
			if tc.want == nil {
				if !u.w.Started() || u.stopped {
					t.Fatalf("a transient error stopped the start-up check: %v", u.w.Err())
				}
				return
			}
			if !u.stopped || !errors.Is(u.w.Err(), tc.want) {
				t.Fatalf("stopped %v with %v, want %v", u.stopped, u.w.Err(), tc.want)
			}
			if failures != 1 {
				t.Errorf("retried a fatal error %d times", failures-1)
			}
			if len(u.writes()) != 0 || len(u.traceOf(TraceFailed, "")) != 1 {
				t.Errorf("writes %v, failed events %d", u.writes(), len(u.traceOf(TraceFailed, "")))
			}
		})
	}
}

// Two workers starting together on an empty table: the one whose marker
// create fails its condition reads the marker again and goes on if it
// names its stream (or stops if another stream won the race).
func TestStartupMarkerRace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other string
		ok    bool
	}{
		{"same stream", "", true},
		{"another stream", "arn:other@1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := startUnit(t, Config{})
			u.stream.add(shardKey(0))
			other := tc.other
			if other == "" {
				other = u.identityOf()
			}
			u.fault = func(c Call) (Result, bool) {
				if c.Op == OpCreateLease && c.Lease.Key == MarkerPrefix {
					if err := u.store.CreateLease(context.Background(), markerRow(MarkerPrefix, other)); err != nil {
						t.Fatal(err)
					}
					return Result{Err: ErrConditionFailed}, true
				}
				return Result{}, false
			}
			u.tick()
			u.runTo(time.Second)
			if u.w.Started() != tc.ok || errors.Is(u.w.Err(), ErrStreamMismatch) == tc.ok {
				t.Fatalf("started %v, err %v", u.w.Started(), u.w.Err())
			}
		})
	}
}

// A stream deleted and re-created while workers run: the next shard sync
// sees the new identity and the worker stops at once, dropping its leases
// without a write; nothing is ended or deleted.
func TestStreamRecreatedWhileRunning(t *testing.T) {
	u := newUnit(t, Config{})
	key := u.holding(shardKey(0), SentinelCheckpoint(TrimHorizon), 3)
	before := u.row(key)
	u.stream.generation++ // deleted and re-created, with other shards
	u.stream.expire(shardKey(0))
	u.stream.add(shardKey(5))
	written := len(u.writes())
	// The sync's DescribeStream answers late: meanwhile the shard's reads
	// fail (not found) and the new listing, which lacks the shard, must not
	// make the worker end its row.
	var describe []Call
	u.hold = func(c Call) bool {
		if c.Op == OpDescribeStream {
			describe = append(describe, c)
			return true
		}
		return false
	}
	u.runTo(u.now + 2*DefaultShardSyncInterval)
	if len(describe) == 0 {
		t.Fatal("no sync described the stream")
	}
	for _, c := range u.writes()[written:] {
		if c.Lease.Checkpoint.IsShardEnd() {
			t.Fatalf("ended %v while the stream's identity was unconfirmed", c)
		}
	}
	u.hold = nil
	for _, c := range describe {
		u.reply(c, u.apply(c))
	}
	u.runTo(u.now + time.Second)
	var e *StreamMismatchError
	if !u.stopped || !errors.As(u.w.Err(), &e) || !e.Recreated {
		t.Fatalf("stopped %v with %v, want a re-created StreamMismatchError", u.stopped, u.w.Err())
	}
	for _, c := range u.writes()[written:] {
		if c.Op == OpDeleteLease || c.Lease.Checkpoint.IsShardEnd() {
			t.Errorf("wrote %v after the stream was re-created", c)
		}
	}
	if after := u.row(key); after.Checkpoint != before.Checkpoint && after.Checkpoint.IsShardEnd() {
		t.Errorf("row ended: %v", after)
	}
	if len(u.noticesOf(NoticeLeaseLost, key)) != 1 {
		t.Errorf("the processor was not told the lease is lost")
	}
}
