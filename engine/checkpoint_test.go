package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	seq56a = "49590338271490256608559692538361571095921575989136588802"
	seq56b = "49590338271490256608559692538361571095921575989136588898"
	max128 = "340282366920938463463374607431768211455" // 2^128 - 1: 39 digits
)

func TestCompareSequences(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"9", "10", -1}, // not lexical
		{"10", "10", 0},
		{"99", "100", -1},
		{"010", "10", 0}, // leading zeros are ignored
		{"0009", "10", -1},
		{"0", "00", 0},
		{"0", "1", -1},
		{seq56a, seq56b, -1},
		{seq56a, seq56a, 0},
		{seq56a[1:], seq56a, -1}, // 55 digits < 56 digits
		{"3" + seq56a[1:], seq56a, -1},
		{"5" + seq56a[1:], seq56a, 1},
		{max128, "340282366920938463463374607431768211456", -1},
		{max128, seq56a, -1}, // Kinesis sequence numbers exceed 128 bits
		{max128, "0" + max128, 0},
		{"1" + strings.Repeat("0", 127), strings.Repeat("9", 127), 1},
	}
	for _, tc := range cases {
		if got := CompareSequences(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareSequences(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareSequences(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareSequences(%s, %s) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestValidateSequence(t *testing.T) {
	cases := []struct {
		s  string
		ok bool
	}{
		{"0", true}, {"123", true}, {seq56a, true}, {max128, true}, {"007", true},
		{strings.Repeat("9", 128), true},
		{strings.Repeat("9", 129), true}, // the API's longest: 0|([1-9]\d{0,128})
		{strings.Repeat("9", 130), false},
		{"", false}, {"-1", false}, {"+1", false}, {"1.5", false}, {" 1", false}, {"1 ", false},
		{"1e5", false}, {"0x10", false}, {"abc", false}, {TrimHorizon, false}, {ShardEnd, false},
		{"١٢", false}, // non-ASCII digits
	}
	for _, tc := range cases {
		if err := ValidateSequence(tc.s); (err == nil) != tc.ok {
			t.Errorf("ValidateSequence(%q) = %v, want ok=%v", tc.s, err, tc.ok)
		}
	}
}

func TestCheckpointValidate(t *testing.T) {
	cases := []struct {
		cp Checkpoint
		ok bool
	}{
		{SentinelCheckpoint(TrimHorizon), true},
		{SentinelCheckpoint(Latest), true},
		{SentinelCheckpoint(AtTimestamp), true},
		{SentinelCheckpoint(ShardEnd), true},
		{SequenceCheckpoint(seq56a), true},
		{Checkpoint{Sequence: seq56a, SubSequence: 7}, true},
		{Checkpoint{Sequence: seq56a, SubSequence: -1}, false},
		{Checkpoint{Sequence: ShardEnd, SubSequence: 1}, false},
		{Checkpoint{Sequence: TrimHorizon, SubSequence: 1}, false},
		{Checkpoint{}, false},
		{SequenceCheckpoint("12a"), false},
		{SequenceCheckpoint("trim_horizon"), false},
	}
	for _, tc := range cases {
		if err := tc.cp.Validate(); (err == nil) != tc.ok {
			t.Errorf("%#v.Validate() = %v, want ok=%v", tc.cp, err, tc.ok)
		}
	}
}

// Checkpoints are ordered: the start sentinels (equal to each other), then
// sequence numbers numerically, sub-sequence numbers breaking ties, then
// SHARD_END.
func TestCheckpointOrder(t *testing.T) {
	sub := func(s string, n int64) Checkpoint { return Checkpoint{Sequence: s, SubSequence: n} }
	// Each group holds checkpoints equal to each other; groups ascend.
	groups := [][]Checkpoint{
		{SentinelCheckpoint(TrimHorizon), SentinelCheckpoint(Latest), SentinelCheckpoint(AtTimestamp), {}},
		{SequenceCheckpoint("0"), SequenceCheckpoint("000")},
		{SequenceCheckpoint("9"), SequenceCheckpoint("09")},
		{sub("9", 1)},
		{sub("9", 2)},
		{SequenceCheckpoint("10")},
		{sub("10", 5)},
		{SequenceCheckpoint("11")},
		{SequenceCheckpoint(max128)},
		{SequenceCheckpoint(seq56a)},
		{sub(seq56a, 1)},
		{SequenceCheckpoint(seq56b)},
		{SequenceCheckpoint(strings.Repeat("9", 128))},
		{SentinelCheckpoint(ShardEnd)},
	}
	for i, gi := range groups {
		for j, gj := range groups {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			for _, a := range gi {
				for _, b := range gj {
					if got := a.Compare(b); got != want {
						t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
					}
				}
			}
		}
	}
	for _, c := range []struct {
		cp                 Checkpoint
		sentinel, start, e bool
		str                string
	}{
		{SentinelCheckpoint(TrimHorizon), true, true, false, TrimHorizon},
		{SentinelCheckpoint(Latest), true, true, false, Latest},
		{SentinelCheckpoint(AtTimestamp), true, true, false, AtTimestamp},
		{SentinelCheckpoint(ShardEnd), true, false, true, ShardEnd},
		{Checkpoint{}, false, true, false, "<none>"},
		{SequenceCheckpoint("42"), false, false, false, "42"},
		{sub("42", 3), false, false, false, "42.3"},
	} {
		if c.cp.IsSentinel() != c.sentinel || c.cp.IsStart() != c.start || c.cp.IsShardEnd() != c.e || c.cp.String() != c.str {
			t.Errorf("%#v: sentinel %v start %v end %v %q", c.cp, c.cp.IsSentinel(), c.cp.IsStart(), c.cp.IsShardEnd(), c.cp.String())
		}
	}
}

// checkpointUnit holds shard "k" whose row stores checkpoint "9" and whose
// records are 8..12: the worker resumes after 9 and delivers 10, 11, 12.
func checkpointUnit(t *testing.T) (*unit, string) {
	u := newUnit(t, Config{})
	key := shardKey(0)
	u.stream.add(key)
	for _, s := range []string{"8", "9", "10", "11", "12"} {
		u.stream.recs[key] = append(u.stream.recs[key], Record{Sequence: s})
	}
	u.put(Lease{Key: key, Counter: 4, Checkpoint: SequenceCheckpoint("9")})
	u.tick()
	init := u.noticesOf(NoticeInitialize, key)
	if len(init) != 1 || init[0].n.Start != SequenceCheckpoint("9") {
		t.Fatalf("initialize %v", init)
	}
	recs := u.noticesOf(NoticeRecords, key)
	if len(recs) != 1 || len(recs[0].n.Records) != 3 || recs[0].n.Records[0].Sequence != "10" {
		t.Fatalf("delivered %v, want 10, 11, 12 (after the checkpoint 9)", recs)
	}
	return u, key
}

// A checkpoint request is checked against the stored checkpoint and the
// last record delivered, numerically; a valid one is written as a CAS on
// the holder's version.
func TestCheckpointRequests(t *testing.T) {
	sub := func(s string, n int64) Checkpoint { return Checkpoint{Sequence: s, SubSequence: n} }
	cases := []struct {
		name string
		key  string // "" for the held lease
		cp   Checkpoint
		err  error // nil: acknowledged
		// write: the acknowledgement follows a write of cp
		write bool
	}{
		{"lower_than_stored", "", SequenceCheckpoint("8"), ErrCheckpointRejected, false},
		{"lower_than_stored_leading_zero", "", SequenceCheckpoint("08"), ErrCheckpointRejected, false},
		{"equal_to_stored_no_write", "", SequenceCheckpoint("9"), nil, false},
		{"equal_to_stored_leading_zeros_no_write", "", SequenceCheckpoint("0009"), nil, false},
		{"higher_numerically_lower_lexically", "", SequenceCheckpoint("10"), nil, true},
		{"sub_sequence", "", sub("10", 3), nil, true},
		{"last_delivered", "", SequenceCheckpoint("12"), nil, true},
		{"beyond_delivered", "", SequenceCheckpoint("13"), ErrCheckpointRejected, false},
		{"beyond_delivered_lexically_lower", "", SequenceCheckpoint("100"), ErrCheckpointRejected, false},
		{"beyond_delivered_sub_sequence", "", sub("12", 1), ErrCheckpointRejected, false},
		{"trim_horizon", "", SentinelCheckpoint(TrimHorizon), ErrCheckpointRejected, false},
		{"latest", "", SentinelCheckpoint(Latest), ErrCheckpointRejected, false},
		{"at_timestamp", "", SentinelCheckpoint(AtTimestamp), ErrCheckpointRejected, false},
		{"shard_end", "", SentinelCheckpoint(ShardEnd), ErrCheckpointRejected, false},
		{"malformed", "", SequenceCheckpoint("1x"), ErrCheckpointRejected, false},
		{"empty", "", Checkpoint{}, ErrCheckpointRejected, false},
		{"negative_sub_sequence", "", sub("10", -1), ErrCheckpointRejected, false},
		{"lease_not_held", shardKey(7), SequenceCheckpoint("10"), ErrLeaseLost, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, key := checkpointUnit(t)
			if tc.key != "" {
				key = tc.key
			}
			before := len(u.sent)
			n, ok := u.checkpoint(key, tc.cp)
			if !ok {
				t.Fatalf("no answer")
			}
			if !errors.Is(n.Err, tc.err) || (tc.err == nil) != (n.Err == nil) {
				t.Errorf("answer %v, want %v", n.Err, tc.err)
			}
			var writes []Call
			for _, s := range u.sent[before:] {
				if s.c.Op == OpUpdateLease {
					writes = append(writes, s.c)
				}
			}
			if !tc.write {
				if len(writes) != 0 {
					t.Errorf("wrote %v", writes)
				}
				if r := u.row(shardKey(0)); r.Checkpoint != SequenceCheckpoint("9") || r.Counter != 5 {
					t.Errorf("row %v changed", r)
				}
				if tc.err != nil && len(u.traceOf(TraceCheckpointRejected, key)) != 1 {
					t.Errorf("no checkpoint-rejected event")
				}
				return
			}
			if len(writes) != 1 {
				t.Fatalf("writes %v, want one", writes)
			}
			w := writes[0]
			if w.Expect != (Expect{me, 5}) || w.Lease.Counter != 6 || w.Lease.Owner != me || w.Lease.Checkpoint != tc.cp || w.Lease.OwnerSwitches != 0 {
				t.Errorf("write %v, want the checkpoint %v as a CAS on {me 5}", w, tc.cp)
			}
			if r := u.row(key); r.Checkpoint != tc.cp {
				t.Errorf("stored %v", r.Checkpoint)
			}
		})
	}
}

// The stored checkpoint never decreases: requests queued behind a write in
// flight are coalesced into the highest, acknowledged once it lands, and a
// request below what was stored is then refused.
func TestCheckpointsAreMonotonic(t *testing.T) {
	u, key := checkpointUnit(t)
	u.hold = holdUpdates
	ask := func(s string) uint64 {
		u.token++
		u.step(Input{Kind: InputCheckpoint, Key: key, Checkpoint: SequenceCheckpoint(s), Token: u.token})
		return u.token
	}
	answer := func(token uint64) (error, bool) {
		for _, n := range u.noticesOf(NoticeCheckpointDone, key) {
			if n.n.Token == token {
				return n.n.Err, true
			}
		}
		return nil, false
	}
	t10 := ask("10")
	w1 := u.mustPending(OpUpdateLease, key)
	t12 := ask("12")
	t11 := ask("11")
	if _, ok := answer(t11); ok {
		t.Fatalf("11 answered while 10 is in flight")
	}
	if len(u.out) != 1 {
		t.Fatalf("two writes in flight: %v", u.out)
	}
	u.runTo(100 * time.Millisecond)
	u.reply(w1, u.apply(w1))
	if err, ok := answer(t10); !ok || err != nil {
		t.Fatalf("10: %v %v", ok, err)
	}
	w2 := u.mustPending(OpUpdateLease, key)
	if w2.Lease.Checkpoint != SequenceCheckpoint("12") || w2.Expect != (Expect{me, 6}) {
		t.Fatalf("second write %v, want 12 on {me 6}", w2)
	}
	u.reply(w2, u.apply(w2))
	for _, tok := range []uint64{t11, t12} {
		if err, ok := answer(tok); !ok || err != nil {
			t.Errorf("token %d: %v %v", tok, ok, err)
		}
	}
	tLow := ask("11")
	if err, ok := answer(tLow); !ok || !errors.Is(err, ErrCheckpointRejected) {
		t.Errorf("11 after 12 stored: %v %v, want ErrCheckpointRejected", ok, err)
	}
	if r := u.row(key); r.Checkpoint != SequenceCheckpoint("12") || r.Counter != 7 {
		t.Errorf("row %v", r)
	}
	written := u.traceOf(TraceCheckpointWritten, key)
	if len(written) != 2 || written[0].Checkpoint.Sequence != "10" || written[1].Checkpoint.Sequence != "12" {
		t.Errorf("written %v", written)
	}
}

// positionAfter: where reading resumes.
func TestPositionAfter(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u := newUnit(t, Config{Streams: []StreamConfig{{Name: "s", InitialPosition: AtTimestamp, Timestamp: ts}}})
	cases := []struct {
		pos  Checkpoint
		want Position
	}{
		{SentinelCheckpoint(TrimHorizon), Position{Type: IterTrimHorizon}},
		{Checkpoint{}, Position{Type: IterTrimHorizon}},
		{SentinelCheckpoint(Latest), Position{Type: IterLatest}},
		{SentinelCheckpoint(AtTimestamp), Position{Type: IterAtTimestamp, Timestamp: ts}},
		// A sequence number is read again (AT), as the KCL does: (s, 0)
		// may be the first user record of an aggregate, whose others are
		// still to deliver. What was delivered is skipped (onRecords).
		{SequenceCheckpoint(seq56a), Position{Type: IterAtSequenceNumber, Sequence: seq56a}},
		{Checkpoint{Sequence: seq56a, SubSequence: 2}, Position{Type: IterAtSequenceNumber, Sequence: seq56a}},
	}
	for _, tc := range cases {
		h := &holding{ref: ShardRef{Stream: "s", Shard: "x"}}
		h.c.position = tc.pos
		if got := u.w.positionAfter(h); got != tc.want {
			t.Errorf("positionAfter(%v) = %+v, want %+v", tc.pos, got, tc.want)
		}
	}
}
