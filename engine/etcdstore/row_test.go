package etcdstore_test

import (
	"strings"
	"testing"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/engine/storetest"
)

// TestEncodingGolden pins encoding 1: a change to the row format must be a
// new encoding version, not a silent one.
func TestEncodingGolden(t *testing.T) {
	l := engine.Lease{Key: "shardId-000000000001", Owner: "w1", Counter: 7,
		Checkpoint:    engine.Checkpoint{Sequence: "49590338271490256608559692538361571095921575989136588802", SubSequence: 3},
		OwnerSwitches: 2, Parents: []string{"shardId-000000000000"}, Children: []string{"b", "a", "a"},
		StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
		HandoffFrom: "w0", Writer: "1x2y3z", StreamID: "arn:aws:kinesis:us-east-1:1:stream/s@1700000000000",
		Pending: "w2", HandoffTo: "w3", ThroughputKBps: 1.5, Session: "4q5r6s"}
	want := `{"v":1,"leaseKey":"shardId-000000000001","leaseOwner":"w1","leaseCounter":7,` +
		`"checkpoint":"49590338271490256608559692538361571095921575989136588802","checkpointSubSequenceNumber":3,` +
		`"ownerSwitchesSinceCheckpoint":2,"parentShardId":["shardId-000000000000"],"childShardIds":["a","b"],` +
		`"startingHashKey":"0","endingHashKey":"340282366920938463463374607431768211455","handoffFrom":"w0",` +
		`"leaseWriter":"1x2y3z","streamId":"arn:aws:kinesis:us-east-1:1:stream/s@1700000000000","pending":"w2",` +
		`"handoffTo":"w3","throughputKBps":1.5,"leaseSession":"4q5r6s"}`
	if got := string(etcdstore.EncodeLease(l)); got != want {
		t.Fatalf("encoding 1 changed:\n got  %s\n want %s", got, want)
	}
	back, err := etcdstore.DecodeLease(l.Key, []byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if !storetest.Normalize(back).Equal(storetest.Normalize(l)) {
		t.Fatalf("round trip:\n got  %s\n want %s", storetest.Describe(back), storetest.Describe(l))
	}
	minimal := engine.Lease{Key: "k", Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	if got, want := string(etcdstore.EncodeLease(minimal)), `{"v":1,"leaseKey":"k","leaseCounter":0,"checkpoint":"TRIM_HORIZON"}`; got != want {
		t.Fatalf("an unowned row with nothing else set encodes as\n %s\nwant\n %s", got, want)
	}
}

// TestDecodeMalformed: each malformed value is refused with a reason that
// names what is wrong.
func TestDecodeMalformed(t *testing.T) {
	for _, c := range []struct{ value, reason string }{
		{`not json`, "not a JSON lease row"},
		{`[1,2]`, "not a JSON lease row"},
		{`{"leaseKey":"k","leaseCounter":1,"checkpoint":"TRIM_HORIZON"}`, `no encoding version`},
		{`{"v":2,"leaseKey":"k","leaseCounter":1,"checkpoint":"TRIM_HORIZON"}`, "encoding version 2, newer"},
		{`{"v":0,"leaseKey":"k","leaseCounter":1,"checkpoint":"TRIM_HORIZON"}`, "encoding version 0"},
		{`{"v":1,"leaseCounter":1,"checkpoint":"TRIM_HORIZON"}`, "leaseKey is missing"},
		{`{"v":1,"leaseKey":"other","leaseCounter":1,"checkpoint":"TRIM_HORIZON"}`, `leaseKey "other" is not the row's key "k"`},
		{`{"v":1,"leaseKey":"k","checkpoint":"TRIM_HORIZON"}`, "leaseCounter is missing"},
		{`{"v":1,"leaseKey":"k","leaseCounter":"seven","checkpoint":"TRIM_HORIZON"}`, "leaseCounter"},
		{`{"v":1,"leaseKey":"k","leaseCounter":1.5,"checkpoint":"TRIM_HORIZON"}`, "leaseCounter"},
		{`{"v":1,"leaseKey":"k","leaseCounter":1}`, "checkpoint is missing"},
		{`{"v":1,"leaseKey":"k","leaseCounter":-1,"checkpoint":"TRIM_HORIZON"}`, "negative leaseCounter"},
		{`{"v":1,"leaseKey":"k","leaseCounter":1,"checkpoint":"TRIM_HORIZON","color":"red"}`, `unknown field "color"`},
		{`{"v":1,"leaseKey":"k","leaseCounter":1,"checkpoint":"12x"}`, "checkpoint"},
		{`{"v":1,"leaseKey":"k","leaseCounter":1,"checkpoint":"TRIM_HORIZON","parentShardId":[""]}`, "empty shard id"},
		{`{"v":1,"leaseKey":"k","leaseCounter":1,"checkpoint":"TRIM_HORIZON","throughputKBps":-2}`, "throughputKBps"},
	} {
		l, err := etcdstore.DecodeLease("k", []byte(c.value))
		if err == nil {
			t.Errorf("DecodeLease(%s) = %s, want an error", c.value, storetest.Describe(l))
			continue
		}
		if !strings.Contains(err.Error(), c.reason) {
			t.Errorf("DecodeLease(%s) = %v, want a reason with %q", c.value, err, c.reason)
		}
	}
}

// FuzzDecodeLease: no value makes DecodeLease panic, and every value it
// accepts encodes to one it decodes to the same lease.
func FuzzDecodeLease(f *testing.F) {
	f.Add([]byte(`{"v":1,"leaseKey":"k","leaseCounter":1,"checkpoint":"TRIM_HORIZON"}`))
	f.Add([]byte(`{"v":1,"leaseKey":"k","leaseOwner":"w","leaseCounter":9,"checkpoint":"123","checkpointSubSequenceNumber":2,"parentShardId":["a","a"],"throughputKBps":0.5}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := etcdstore.DecodeLease("k", b)
		if err != nil {
			return
		}
		again, err := etcdstore.DecodeLease("k", etcdstore.EncodeLease(l))
		if err != nil {
			t.Fatalf("%s decodes, but its encoding does not: %v", b, err)
		}
		if !again.Equal(l) {
			t.Fatalf("%s: round trip\n got  %s\n want %s", b, storetest.Describe(again), storetest.Describe(l))
		}
	})
}
