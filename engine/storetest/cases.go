package storetest

import (
	"fmt"
	"slices"

	"github.com/shardlease/shardlease/engine"
)

// A realistic 56-digit Kinesis sequence number and the full hash range.
const (
	seqA    = "49590338271490256608559692538361571095921575989136588802"
	seqB    = "49590338271490256608559692538361571095921575989136588898"
	maxHash = "340282366920938463463374607431768211455"
)

// lease returns a small valid row.
func lease(key, owner string, counter int64) engine.Lease {
	return engine.Lease{
		Key: key, Owner: owner, Counter: counter,
		Checkpoint:      engine.SentinelCheckpoint(engine.TrimHorizon),
		StartingHashKey: "0", EndingHashKey: maxHash,
	}
}

// full returns a row with every field set.
func full(key string) engine.Lease {
	return engine.Lease{
		Key: key, Owner: "worker-1", Counter: 7,
		Checkpoint:      engine.Checkpoint{Sequence: seqA, SubSequence: 3},
		OwnerSwitches:   2,
		Parents:         []string{"shardId-000000000000", "shardId-000000000001"},
		Children:        []string{"shardId-000000000003", "shardId-000000000004"},
		StartingHashKey: "170141183460469231731687303715884105728",
		EndingHashKey:   maxHash,
		HandoffFrom:     "worker-0",
		Writer:          "1x2y3z",
		Session:         "4q5r6s",
	}
}

// next returns l as its holder would write it next: counter + 1.
func next(l engine.Lease) engine.Lease {
	l = l.Clone()
	l.Counter++
	return l
}

type testCase struct {
	name string
	run  func(h *harness)
}

var cases = []testCase{
	{"create/then_get", func(h *harness) {
		l := lease("shardId-000000000000", "", 0)
		h.mustCreate(l)
		h.wantRow(l)
	}},
	{"create/every_field_round_trips", func(h *harness) {
		l := full("stream-a:shardId-000000000002")
		h.mustCreate(l)
		h.wantRow(l)
	}},
	{"create/sentinel_checkpoints_round_trip", func(h *harness) {
		for _, s := range []string{engine.TrimHorizon, engine.Latest, engine.AtTimestamp, engine.ShardEnd} {
			l := lease("shard-"+s, "w", 1)
			l.Checkpoint = engine.SentinelCheckpoint(s)
			h.mustCreate(l)
			h.wantRow(l)
		}
	}},
	{"create/existing_row_fails", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		other := lease(l.Key, "w2", 9)
		h.wantErr("CreateLease over an existing row", h.create(other), engine.ErrConditionFailed)
		h.wantRow(l)
	}},
	{"create/after_delete", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		if err := h.delete(l.Key, engine.ExpectOf(l)); err != nil {
			h.t.Fatalf("DeleteLease: %v", err)
		}
		l2 := lease(l.Key, "", 0)
		h.mustCreate(l2)
		h.wantRow(l2)
	}},
	{"update/matching_owner_and_counter", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		n := next(l)
		n.Checkpoint = engine.SequenceCheckpoint(seqA)
		h.mustUpdate(engine.ExpectOf(l), n)
		h.wantRow(n)
	}},
	{"update/sub_sequence_checkpoints_round_trip", func(h *harness) {
		// A checkpoint inside a KPL aggregate, the next user record, then
		// a plain record: the sub-sequence number is stored, and reset to
		// 0, never left behind.
		l := lease("shardId-000000000000", "w1", 3)
		l.Checkpoint = engine.Checkpoint{Sequence: seqA, SubSequence: 3}
		h.mustCreate(l)
		h.wantRow(l)
		for _, cp := range []engine.Checkpoint{{Sequence: seqA, SubSequence: 4}, {Sequence: seqB, SubSequence: 0}, {Sequence: seqB, SubSequence: 1 << 40}} {
			n := next(l)
			n.Checkpoint = cp
			h.mustUpdate(engine.ExpectOf(l), n)
			h.wantRow(n)
			l = n
		}
	}},
	{"update/wrong_counter_fails", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		for _, c := range []int64{2, 4, 0} {
			err := h.update(engine.Expect{Owner: "w1", Counter: c}, next(l))
			h.wantErr(fmt.Sprintf("UpdateLease expecting counter %d", c), err, engine.ErrConditionFailed)
		}
		h.wantRow(l)
	}},
	{"update/wrong_owner_fails", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		err := h.update(engine.Expect{Owner: "w2", Counter: 3}, next(l))
		h.wantErr("UpdateLease expecting another owner", err, engine.ErrConditionFailed)
		h.wantRow(l)
	}},
	{"update/unowned_expectation_on_owned_row_fails", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		err := h.update(engine.Expect{Owner: "", Counter: 3}, next(l))
		h.wantErr("UpdateLease expecting no owner", err, engine.ErrConditionFailed)
		h.wantRow(l)
	}},
	{"update/owner_expectation_on_unowned_row_fails", func(h *harness) {
		l := lease("shardId-000000000000", "", 3)
		h.mustCreate(l)
		err := h.update(engine.Expect{Owner: "w1", Counter: 3}, next(l))
		h.wantErr("UpdateLease expecting an owner of an unowned row", err, engine.ErrConditionFailed)
		h.wantRow(l)
	}},
	{"update/take_unowned_row", func(h *harness) {
		l := lease("shardId-000000000000", "", 3)
		h.mustCreate(l)
		n := next(l)
		n.Owner = "w1"
		n.OwnerSwitches = 1
		h.mustUpdate(engine.Expect{Owner: "", Counter: 3}, n)
		h.wantRow(n)
	}},
	{"update/release_then_take", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		released := next(l)
		released.Owner = ""
		h.mustUpdate(engine.ExpectOf(l), released)
		h.wantRow(released)
		taken := next(released)
		taken.Owner = "w2"
		h.mustUpdate(engine.Expect{Owner: "", Counter: released.Counter}, taken)
		h.wantRow(taken)
	}},
	{"update/missing_row_fails", func(h *harness) {
		for _, e := range []engine.Expect{{Owner: "", Counter: 0}, {Owner: "w1", Counter: 3}} {
			err := h.update(e, lease("shardId-000000000000", "w1", e.Counter+1))
			h.wantErr(fmt.Sprintf("UpdateLease of a missing row expecting %+v", e), err, engine.ErrConditionFailed)
		}
		h.wantGone("shardId-000000000000")
	}},
	{"update/compare_and_swap_one_winner", func(h *harness) {
		l := lease("shardId-000000000000", "", 5)
		h.mustCreate(l)
		a, b := next(l), next(l)
		a.Owner, b.Owner = "w1", "w2"
		h.mustUpdate(engine.ExpectOf(l), a)
		h.wantErr("second UpdateLease with the same expectation", h.update(engine.ExpectOf(l), b), engine.ErrConditionFailed)
		h.wantRow(a)
	}},
	{"update/replaces_the_whole_row", func(h *harness) {
		l := full("shardId-000000000002")
		h.mustCreate(l)
		n := lease(l.Key, "w9", l.Counter+1)
		n.StartingHashKey, n.EndingHashKey = "", ""
		n.Checkpoint = engine.SentinelCheckpoint(engine.ShardEnd)
		h.mustUpdate(engine.ExpectOf(l), n)
		h.wantRow(n)
	}},
	{"update/binds_and_unbinds_a_session", func(h *harness) {
		// A take in session renewal binds the lease (Lease.Session); a
		// later write of another mode leaves it out, and the stored row
		// must lose it, not keep the old binding.
		l := lease("shardId-000000000000", "", 3)
		h.mustCreate(l)
		bound := next(l)
		bound.Owner, bound.Writer, bound.Session = "w1", "1x2y3z", "1x2y3z"
		h.mustUpdate(engine.ExpectOf(l), bound)
		h.wantRow(bound)
		unbound := next(bound)
		unbound.Session = ""
		h.mustUpdate(engine.ExpectOf(bound), unbound)
		h.wantRow(unbound)
	}},
	{"update/many_versions", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 0)
		h.mustCreate(l)
		for i := 0; i < 20; i++ {
			n := next(l)
			n.Checkpoint = engine.SequenceCheckpoint(fmt.Sprint(1000 + i))
			h.mustUpdate(engine.ExpectOf(l), n)
			l = n
		}
		h.wantRow(l)
	}},
	{"delete/matching", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		if err := h.delete(l.Key, engine.ExpectOf(l)); err != nil {
			h.t.Fatalf("DeleteLease: %v", err)
		}
		h.wantGone(l.Key)
	}},
	{"delete/unowned_row", func(h *harness) {
		l := lease("shardId-000000000000", "", 3)
		h.mustCreate(l)
		if err := h.delete(l.Key, engine.Expect{Counter: 3}); err != nil {
			h.t.Fatalf("DeleteLease: %v", err)
		}
		h.wantGone(l.Key)
	}},
	{"delete/wrong_expectation_fails", func(h *harness) {
		l := lease("shardId-000000000000", "w1", 3)
		h.mustCreate(l)
		for _, e := range []engine.Expect{{Owner: "w1", Counter: 2}, {Owner: "w2", Counter: 3}, {Owner: "", Counter: 3}} {
			h.wantErr(fmt.Sprintf("DeleteLease expecting %+v", e), h.delete(l.Key, e), engine.ErrConditionFailed)
		}
		h.wantRow(l)
	}},
	{"delete/missing_row_fails", func(h *harness) {
		h.wantErr("DeleteLease of a missing row", h.delete("nope", engine.Expect{Counter: 0}), engine.ErrConditionFailed)
	}},
	{"get/not_found", func(h *harness) {
		h.wantGone("shardId-000000000099")
	}},
	{"get/reads_its_own_writes", func(h *harness) {
		// GetLease is strongly consistent: every write is visible at once.
		l := lease("shardId-000000000000", "w1", 0)
		h.mustCreate(l)
		for i := 0; i < 5; i++ {
			n := next(l)
			h.mustUpdate(engine.ExpectOf(l), n)
			h.wantRow(n)
			l = n
		}
	}},
	{"list/empty", func(h *harness) {
		for _, consistent := range []bool{true, false} {
			if got := h.list(consistent); len(got.Leases) != 0 || len(got.Malformed) != 0 {
				h.t.Fatalf("ListLeases(consistent=%v) of an empty table = %+v", consistent, got)
			}
		}
	}},
	{"list/many_rows_consistent", func(h *harness) {
		want := map[string]engine.Lease{}
		for i := 0; i < h.cfg.manyRows; i++ {
			l := lease(fmt.Sprintf("shardId-%012d", i), fmt.Sprintf("w%d", i%7), int64(i))
			if i%3 == 0 {
				l = full(l.Key)
			}
			h.mustCreate(l)
			want[l.Key] = l
		}
		got := h.list(true)
		if len(got.Malformed) != 0 {
			h.t.Fatalf("ListLeases: unexpected malformed rows %+v", got.Malformed)
		}
		if len(got.Leases) != len(want) {
			h.t.Fatalf("ListLeases returned %d rows, want %d", len(got.Leases), len(want))
		}
		seen := map[string]bool{}
		for _, l := range got.Leases {
			w, ok := want[l.Key]
			if !ok || seen[l.Key] {
				h.t.Fatalf("ListLeases returned unexpected or repeated row %q", l.Key)
			}
			seen[l.Key] = true
			if !Normalize(l).Equal(Normalize(w)) {
				h.t.Fatalf("ListLeases row:\n got  %s\n want %s", Describe(l), Describe(w))
			}
		}
	}},
	{"list/consistent_sees_updates_and_deletes", func(h *harness) {
		a, b, c := lease("a", "w1", 1), lease("b", "w1", 1), lease("c", "", 1)
		for _, l := range []engine.Lease{a, b, c} {
			h.mustCreate(l)
		}
		a2 := next(a)
		a2.Owner = "w2"
		h.mustUpdate(engine.ExpectOf(a), a2)
		if err := h.delete(b.Key, engine.ExpectOf(b)); err != nil {
			h.t.Fatalf("DeleteLease: %v", err)
		}
		got := h.list(true)
		want := []engine.Lease{a2, c}
		keys := []string{}
		for _, l := range got.Leases {
			keys = append(keys, l.Key)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"a", "c"}) {
			h.t.Fatalf("ListLeases keys = %v, want [a c]", keys)
		}
		for _, w := range want {
			for _, l := range got.Leases {
				if l.Key == w.Key && !Normalize(l).Equal(Normalize(w)) {
					h.t.Fatalf("ListLeases row:\n got  %s\n want %s", Describe(l), Describe(w))
				}
			}
		}
	}},
	{"list/eventually_consistent_returns_written_versions", func(h *harness) {
		// A non-consistent scan may lag, but every row it returns must be
		// a version that was written.
		written := map[string][]engine.Lease{}
		for i := 0; i < 10; i++ {
			l := lease(fmt.Sprintf("shardId-%012d", i), "w1", 0)
			h.mustCreate(l)
			written[l.Key] = append(written[l.Key], l)
			n := next(l)
			h.mustUpdate(engine.ExpectOf(l), n)
			written[l.Key] = append(written[l.Key], n)
		}
		for _, l := range h.list(false).Leases {
			if !slices.ContainsFunc(written[l.Key], func(w engine.Lease) bool { return Normalize(w).Equal(Normalize(l)) }) {
				h.t.Fatalf("ListLeases(consistent=false) returned a row never written: %s", Describe(l))
			}
		}
	}},
	{"malformed/listed_not_fatal", func(h *harness) {
		if h.cfg.malform == nil {
			h.t.Skip("no malformed-row hook (storetest.WithMalformed)")
		}
		good := []engine.Lease{lease("good-1", "w1", 1), full("good-2")}
		for _, l := range good {
			h.mustCreate(l)
		}
		h.cfg.malform(h.t, h.s, "bad-1")
		h.cfg.malform(h.t, h.s, "bad-2")
		got := h.list(true)
		var keys []string
		for _, m := range got.Malformed {
			if m.Reason == "" {
				h.t.Errorf("malformed row %q has no reason", m.Key)
			}
			keys = append(keys, m.Key)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"bad-1", "bad-2"}) {
			h.t.Fatalf("Listing.Malformed keys = %v, want [bad-1 bad-2] (malformed: %+v)", keys, got.Malformed)
		}
		if len(got.Leases) != len(good) {
			h.t.Fatalf("ListLeases returned %d good rows, want %d", len(got.Leases), len(good))
		}
	}},
	{"malformed/get_fails", func(h *harness) {
		if h.cfg.malform == nil {
			h.t.Skip("no malformed-row hook (storetest.WithMalformed)")
		}
		h.cfg.malform(h.t, h.s, "bad-1")
		if l, err := h.get("bad-1"); err == nil {
			h.t.Fatalf("GetLease of a malformed row = %s, want an error", Describe(l))
		}
	}},
}
