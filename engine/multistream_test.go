package engine

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKeyFormat(t *testing.T) {
	single := KeyFormat{LegacyStream: "s1"}
	multi := KeyFormat{MultiStream: true, LegacyStream: "s1"}
	multiOnly := KeyFormat{MultiStream: true}
	const sh = "shardId-000000000007"
	keys := []struct {
		name string
		f    KeyFormat
		ref  ShardRef
		key  string
	}{
		{"single", single, ShardRef{"s1", sh}, sh},
		{"multi_legacy_stream_keeps_bare_keys", multi, ShardRef{"s1", sh}, sh},
		{"multi_other_stream", multi, ShardRef{"s2", sh}, "s2:" + sh},
		{"multi_without_legacy", multiOnly, ShardRef{"s1", sh}, "s1:" + sh},
	}
	for _, tc := range keys {
		if got := tc.f.Key(tc.ref); got != tc.key {
			t.Errorf("%s: Key(%v) = %q, want %q", tc.name, tc.ref, got, tc.key)
		}
		if ref, ok := tc.f.Parse(tc.key); !ok || ref != tc.ref {
			t.Errorf("%s: Parse(%q) = %v %v, want %v", tc.name, tc.key, ref, ok, tc.ref)
		}
	}
	parses := []struct {
		name string
		f    KeyFormat
		key  string
		ref  ShardRef
		ok   bool
	}{
		{"single_bare", single, sh, ShardRef{"s1", sh}, true},
		{"single_rejects_prefixed", single, "s2:" + sh, ShardRef{}, false},
		{"multi_bare_is_legacy", multi, sh, ShardRef{"s1", sh}, true},
		{"multi_prefixed", multi, "s2:" + sh, ShardRef{"s2", sh}, true},
		{"multi_prefixed_legacy_name", multi, "s1:" + sh, ShardRef{"s1", sh}, true},
		{"multi_without_legacy_rejects_bare", multiOnly, sh, ShardRef{}, false},
		{"zero_format_rejects_bare", KeyFormat{}, sh, ShardRef{}, false},
		{"empty_stream", multi, ":" + sh, ShardRef{"", sh}, false},
		{"empty_shard", multi, "s2:", ShardRef{"s2", ""}, false},
		{"last_colon_splits", multi, "a:b:" + sh, ShardRef{"a:b", sh}, true},
	}
	for _, tc := range parses {
		ref, ok := tc.f.Parse(tc.key)
		if ok != tc.ok || (ok && ref != tc.ref) {
			t.Errorf("%s: Parse(%q) = %v %v, want %v %v", tc.name, tc.key, ref, ok, tc.ref, tc.ok)
		}
	}
}

// rowKeys returns the keys of the table's lease rows (not its stream
// markers), sorted.
func rowKeys(c *cluster) []string {
	l, _ := c.store.ListLeases(c.t.Context(), true)
	var keys []string
	for _, r := range l.Leases {
		if !IsReserved(r.Key) {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// markerKeys returns the keys of the table's stream markers, sorted.
func markerKeys(c *cluster) []string {
	l, _ := c.store.ListLeases(c.t.Context(), true)
	var keys []string
	for _, r := range l.Leases {
		if IsReserved(r.Key) {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// A multi-stream worker keys the rows of each stream "stream:shardId", except
// those of its LegacyStream, which keep bare shard ids; it reads each shard
// from its own stream.
func TestMultiStreamRows(t *testing.T) {
	cases := []struct {
		name   string
		legacy string
		keys   []string
	}{
		{"with_legacy_stream", "s1", []string{"s2:shardId-000000000000", "s2:shardId-000000000001", "shardId-000000000000", "shardId-000000000001"}},
		{"without_legacy_stream", "", []string{"s1:shardId-000000000000", "s1:shardId-000000000001", "s2:shardId-000000000000", "s2:shardId-000000000001"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 0, Config{MultiStream: true, LegacyStream: tc.legacy, Streams: []StreamConfig{
				{Name: "s1", InitialPosition: TrimHorizon}, {Name: "s2", InitialPosition: TrimHorizon}}})
			c.streams = tStreams{"s1": newTStream(2), "s2": newTStream(2)}
			want := map[string][]string{}
			for i, name := range []string{"s1", "s2"} {
				for j := 0; j < 2; j++ {
					key := KeyFormat{MultiStream: true, LegacyStream: tc.legacy}.Key(ShardRef{name, shardKey(j)})
					want[key] = c.streams[name].put(shardKey(j), 2+i+j)
				}
			}
			a := c.start("A")
			c.runUntil(20*time.Second, "all delivered", func() bool { return totalGot(a) == 2+3+3+4 })
			if got := rowKeys(c); !slices.Equal(got, tc.keys) {
				t.Errorf("rows %v, want %v", got, tc.keys)
			}
			for key, seqs := range want {
				if !slices.Equal(a.got[key], seqs) {
					t.Errorf("%s delivered %v, want %v", key, a.got[key], seqs)
				}
				stream := "s2"
				if strings.HasPrefix(key, "s1:") || !strings.Contains(key, ":") {
					stream = "s1"
				}
				for _, e := range c.traceOf(TraceDelivered, "A", key) {
					if e.Shard.Stream != stream {
						t.Errorf("%s delivered as stream %s", key, e.Shard.Stream)
					}
				}
			}
			for _, key := range tc.keys {
				if row := c.row(key); row.Checkpoint.Sequence != want[key][len(want[key])-1] {
					t.Errorf("%s checkpoint %v", key, row.Checkpoint)
				}
			}
		})
	}
}

// Adoption: a table written by KCL for one stream (bare shard-id keys,
// sequence-number checkpoints, owned by a KCL worker that is gone) is taken
// over by a multi-stream worker whose LegacyStream names that stream: it
// creates no rows for those shards, takes them once expired, and resumes
// after each checkpoint.
func TestAdoptKCLTable(t *testing.T) {
	// No stealing: the KCL workers' leases are taken as expired.
	c := newCluster(t, 0, Config{MaxLeasesToStealAtOnce: -1, MultiStream: true, LegacyStream: "orders", Streams: []StreamConfig{
		{Name: "orders", InitialPosition: Latest}, {Name: "payments", InitialPosition: TrimHorizon}}})
	c.streams = tStreams{"orders": newTStream(3), "payments": newTStream(1)}
	orders := c.streams["orders"]
	for i := 0; i < 3; i++ {
		orders.put(shardKey(i), 5)
	}
	c.streams["payments"].put(shardKey(0), 2)
	// KCL's rows: checkpoints at the third record of shards 0 and 1 (shard 1
	// with a sub-sequence number: an aggregated record partly processed),
	// shard 2 never checkpointed.
	kcl := []Lease{
		{Key: shardKey(0), Owner: "kcl-worker-1", Counter: 812, OwnerSwitches: 2,
			Checkpoint: SequenceCheckpoint(orders.recs[shardKey(0)][2].Sequence), StartingHashKey: "0", EndingHashKey: "1000"},
		{Key: shardKey(1), Owner: "kcl-worker-1", Counter: 95,
			Checkpoint: Checkpoint{Sequence: orders.recs[shardKey(1)][2].Sequence, SubSequence: 0}},
		{Key: shardKey(2), Owner: "kcl-worker-2", Counter: 7, Checkpoint: SentinelCheckpoint(TrimHorizon)},
	}
	for _, l := range kcl {
		if err := c.store.CreateLease(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	a := c.start("A")
	started := c.now
	c.runUntil(40*time.Second, "legacy leases taken", func() bool { return len(c.held("A")) == 4 })
	for _, l := range kcl {
		acq := c.traceOf(TraceLeaseAcquired, "A", l.Key)
		if len(acq) != 1 || acq[0].Reason != "expired" || acq[0].Previous != l.Owner || acq[0].Counter != l.Counter+1 {
			t.Errorf("acquired %s: %v", l.Key, acq)
			continue
		}
		if acq[0].Mono < started+ld {
			t.Errorf("took %s at %v, before a full lease duration", l.Key, acq[0].Mono)
		}
		if n := len(c.traceOf(TraceLeaseCreated, "", l.Key)); n != 0 {
			t.Errorf("created a row for adopted %s", l.Key)
		}
	}
	if acq := c.traceOf(TraceLeaseAcquired, "A", "payments:"+shardKey(0)); len(acq) != 1 || acq[0].Reason != "unowned" || acq[0].Mono > started+time.Second {
		t.Errorf("payments lease: %v", acq)
	}
	c.runUntil(10*time.Second, "records delivered", func() bool { return totalGot(a) == 2+2+5+2 })
	wantFirst := map[string]int{shardKey(0): 3, shardKey(1): 3, shardKey(2): 0}
	for key, i := range wantFirst {
		if d := c.traceOf(TraceDelivered, "A", key); len(d) == 0 || d[0].Mono < started+ld {
			t.Errorf("delivered %s: %v, not after a full lease duration", key, d)
		}
		got := a.got[key]
		want := orders.recs[key][i:]
		if len(got) != len(want) || got[0] != want[0].Sequence {
			t.Errorf("%s delivered %v, want from record %d (%s)", key, got, i, want[0].Sequence)
		}
		if row := c.row(key); row.Owner != "A" || row.Checkpoint.Sequence != orders.recs[key][4].Sequence {
			t.Errorf("%s row %v", key, row)
		}
	}
	if got := rowKeys(c); !slices.Equal(got, []string{"payments:" + shardKey(0), shardKey(0), shardKey(1), shardKey(2)}) {
		t.Errorf("rows %v", got)
	}
	// One marker names the stream of the bare shard-id rows (the legacy
	// stream), one each other stream.
	if got := markerKeys(c); !slices.Equal(got, []string{MarkerPrefix, MarkerPrefix + ":payments"}) {
		t.Errorf("markers %v", got)
	}
	// The rows keep KCL's attributes that the engine does not own.
	if row := c.row(shardKey(0)); row.StartingHashKey != "0" || row.EndingHashKey != "1000" {
		t.Errorf("hash keys lost: %v", row)
	}
}
