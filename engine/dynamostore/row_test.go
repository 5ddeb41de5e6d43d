package dynamostore_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
)

func sampleLease() engine.Lease {
	return engine.Lease{
		Key: "shardId-000000000002", Owner: "worker-1", Counter: 7,
		Checkpoint:      engine.Checkpoint{Sequence: "49590338271490256608559692538361571095921575989136588802", SubSequence: 3},
		OwnerSwitches:   2,
		Parents:         []string{"shardId-000000000001", "shardId-000000000000"},
		Children:        []string{"shardId-000000000004", "shardId-000000000003", "shardId-000000000004"},
		StartingHashKey: "0", EndingHashKey: "340282366920938463463374607431768211455",
	}
}

// TestEncodeIsKCLCompatible pins the attribute names and types KCL uses.
func TestEncodeIsKCLCompatible(t *testing.T) {
	item := dynamostore.EncodeLease(sampleLease())
	want := map[string]string{
		"leaseKey": "S", "leaseOwner": "S", "leaseCounter": "N", "checkpoint": "S",
		"checkpointSubSequenceNumber": "N", "ownerSwitchesSinceCheckpoint": "N",
		"parentShardId": "SS", "childShardIds": "SS", "startingHashKey": "S", "endingHashKey": "S",
	}
	if len(item) != len(want) {
		t.Fatalf("EncodeLease wrote %d attributes, want %d: %v", len(item), len(want), item)
	}
	for name, typ := range want {
		v, ok := item[name]
		if !ok {
			t.Fatalf("attribute %s missing", name)
		}
		var got string
		switch v.(type) {
		case *types.AttributeValueMemberS:
			got = "S"
		case *types.AttributeValueMemberN:
			got = "N"
		case *types.AttributeValueMemberSS:
			got = "SS"
		}
		if got != typ {
			t.Errorf("attribute %s has type %T, want %s", name, v, typ)
		}
	}
	if got := item["childShardIds"].(*types.AttributeValueMemberSS).Value; strings.Join(got, ",") != "shardId-000000000003,shardId-000000000004" {
		t.Errorf("childShardIds = %v, want sorted without duplicates", got)
	}
}

// TestEncodeLeavesOutEmptyAttributes: an unowned lease has no leaseOwner
// and empty sets are not written (DynamoDB rejects empty sets).
func TestEncodeLeavesOutEmptyAttributes(t *testing.T) {
	item := dynamostore.EncodeLease(engine.Lease{Key: "k", Checkpoint: engine.SentinelCheckpoint(engine.Latest)})
	for _, name := range []string{"leaseOwner", "parentShardId", "childShardIds", "startingHashKey", "endingHashKey"} {
		if _, ok := item[name]; ok {
			t.Errorf("attribute %s written for an empty value", name)
		}
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	l := sampleLease()
	got, key, err := dynamostore.DecodeLease(dynamostore.EncodeLease(l))
	if err != nil || key != l.Key {
		t.Fatalf("DecodeLease: key %q, err %v", key, err)
	}
	l.Parents = []string{"shardId-000000000000", "shardId-000000000001"}
	l.Children = []string{"shardId-000000000003", "shardId-000000000004"}
	if !got.Equal(l) {
		t.Fatalf("round trip:\n got  %+v\n want %+v", got, l)
	}
}

// TestSessionRoundTrips: a lease bound to a session (engine.Lease.Session)
// is stored with a leaseSession string attribute and read back bound; an
// unbound lease has no leaseSession.
func TestSessionRoundTrips(t *testing.T) {
	l := sampleLease()
	l.Session = "4q5r6s"
	item := dynamostore.EncodeLease(l)
	if v, ok := item[dynamostore.AttrSession].(*types.AttributeValueMemberS); !ok || v.Value != "4q5r6s" || dynamostore.AttrSession != "leaseSession" {
		t.Fatalf("EncodeLease wrote %s = %#v, want leaseSession S 4q5r6s", dynamostore.AttrSession, item[dynamostore.AttrSession])
	}
	got, _, err := dynamostore.DecodeLease(item)
	if err != nil {
		t.Fatalf("DecodeLease: %v", err)
	}
	if got.Session != l.Session {
		t.Fatalf("round trip: Session %q, want %q", got.Session, l.Session)
	}
	l.Session = ""
	if _, ok := dynamostore.EncodeLease(l)[dynamostore.AttrSession]; ok {
		t.Fatal("leaseSession written for an unbound lease")
	}
}

// TestDecodeToleratesKCLRows: KCL writes attributes shardlease does not
// use, and older rows lack the optional numbers; none of it is an error.
func TestDecodeToleratesKCLRows(t *testing.T) {
	item := dynamostore.Item{
		"leaseKey":            &types.AttributeValueMemberS{Value: "shardId-000000000000"},
		"leaseCounter":        &types.AttributeValueMemberN{Value: "12"},
		"checkpoint":          &types.AttributeValueMemberS{Value: "SHARD_END"},
		"leaseOwner":          &types.AttributeValueMemberS{Value: ""},
		"pendingCheckpoint":   &types.AttributeValueMemberS{Value: "123"},
		"throughputKBps":      &types.AttributeValueMemberN{Value: "1.5"},
		"leaseTimestampExtra": &types.AttributeValueMemberNULL{Value: true},
		"parentShardId":       &types.AttributeValueMemberNULL{Value: true},
	}
	l, _, err := dynamostore.DecodeLease(item)
	if err != nil {
		t.Fatalf("DecodeLease: %v", err)
	}
	// KCL 3.x's throughputKBps is shardlease's too (Lease.ThroughputKBps).
	want := engine.Lease{Key: "shardId-000000000000", Counter: 12, Checkpoint: engine.SentinelCheckpoint(engine.ShardEnd), ThroughputKBps: 1.5}
	if !l.Equal(want) {
		t.Fatalf("DecodeLease = %+v, want %+v", l, want)
	}
}

// malformedItems are rows that must be reported, each with the attribute
// its reason must name.
var malformedItems = []struct {
	name string
	attr string
	item dynamostore.Item
}{
	{"counter_not_N", "leaseCounter", row(func(i dynamostore.Item) { i["leaseCounter"] = &types.AttributeValueMemberS{Value: "7"} })},
	{"counter_missing", "leaseCounter", row(func(i dynamostore.Item) { delete(i, "leaseCounter") })},
	{"counter_not_integer", "leaseCounter", row(func(i dynamostore.Item) { i["leaseCounter"] = &types.AttributeValueMemberN{Value: "1.5"} })},
	{"counter_negative", "leaseCounter", row(func(i dynamostore.Item) { i["leaseCounter"] = &types.AttributeValueMemberN{Value: "-1"} })},
	{"checkpoint_missing", "checkpoint", row(func(i dynamostore.Item) { delete(i, "checkpoint") })},
	{"checkpoint_not_S", "checkpoint", row(func(i dynamostore.Item) { i["checkpoint"] = &types.AttributeValueMemberN{Value: "5"} })},
	{"checkpoint_not_a_sequence", "checkpoint", row(func(i dynamostore.Item) { i["checkpoint"] = &types.AttributeValueMemberS{Value: "abc"} })},
	{"owner_not_S", "leaseOwner", row(func(i dynamostore.Item) { i["leaseOwner"] = &types.AttributeValueMemberN{Value: "1"} })},
	{"subsequence_not_N", "checkpointSubSequenceNumber", row(func(i dynamostore.Item) {
		i["checkpointSubSequenceNumber"] = &types.AttributeValueMemberS{Value: "0"}
	})},
	{"owner_switches_not_N", "ownerSwitchesSinceCheckpoint", row(func(i dynamostore.Item) {
		i["ownerSwitchesSinceCheckpoint"] = &types.AttributeValueMemberBOOL{Value: true}
	})},
	{"parents_not_SS", "parentShardId", row(func(i dynamostore.Item) { i["parentShardId"] = &types.AttributeValueMemberS{Value: "shardId-0"} })},
	{"children_not_SS", "childShardIds", row(func(i dynamostore.Item) {
		i["childShardIds"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "a"}}}
	})},
	{"starting_hash_not_S", "startingHashKey", row(func(i dynamostore.Item) { i["startingHashKey"] = &types.AttributeValueMemberN{Value: "0"} })},
	{"session_not_S", "leaseSession", row(func(i dynamostore.Item) { i["leaseSession"] = &types.AttributeValueMemberN{Value: "1"} })},
	{"ending_hash_not_S", "endingHashKey", row(func(i dynamostore.Item) { i["endingHashKey"] = &types.AttributeValueMemberN{Value: "9"} })},
}

// row returns a valid row of key "bad" changed by edit.
func row(edit func(dynamostore.Item)) dynamostore.Item {
	item := dynamostore.EncodeLease(engine.Lease{Key: "bad", Owner: "w", Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)})
	edit(item)
	return item
}

func TestDecodeMalformed(t *testing.T) {
	for _, tc := range malformedItems {
		t.Run(tc.name, func(t *testing.T) {
			_, key, err := dynamostore.DecodeLease(tc.item)
			if err == nil {
				t.Fatal("DecodeLease accepted a malformed row")
			}
			if key != "bad" {
				t.Errorf("key = %q, want bad", key)
			}
			if !strings.Contains(err.Error(), tc.attr) {
				t.Errorf("reason %q does not name attribute %s", err, tc.attr)
			}
		})
	}
	if _, _, err := dynamostore.DecodeLease(dynamostore.Item{}); err == nil || !strings.Contains(err.Error(), "leaseKey") {
		t.Errorf("DecodeLease of an empty row: %v, want an error naming leaseKey", err)
	}
}

// TestHandoffFromRoundTrips: shardlease's own handoff marker is written
// only while a handoff is pending, and read back.
func TestHandoffFromRoundTrips(t *testing.T) {
	l := sampleLease()
	l.HandoffFrom = "worker-0"
	item := dynamostore.EncodeLease(l)
	if v, ok := item["handoffFrom"].(*types.AttributeValueMemberS); !ok || v.Value != "worker-0" {
		t.Fatalf("handoffFrom = %v", item["handoffFrom"])
	}
	got, _, err := dynamostore.DecodeLease(item)
	if err != nil || got.HandoffFrom != "worker-0" {
		t.Fatalf("decoded %v, %v", got, err)
	}
	l.HandoffFrom = ""
	if _, ok := dynamostore.EncodeLease(l)["handoffFrom"]; ok {
		t.Errorf("handoffFrom written with no handoff pending")
	}
}

// TestWriterRoundTrips: the writer of a row version is stored as
// leaseWriter and read back; a row without it (written by KCL) reads as an
// empty Writer.
func TestWriterRoundTrips(t *testing.T) {
	l := sampleLease()
	l.Writer = "3kf9z2"
	item := dynamostore.EncodeLease(l)
	if v, ok := item["leaseWriter"].(*types.AttributeValueMemberS); !ok || v.Value != "3kf9z2" {
		t.Fatalf("leaseWriter = %v", item["leaseWriter"])
	}
	got, _, err := dynamostore.DecodeLease(item)
	if err != nil || got.Writer != "3kf9z2" {
		t.Fatalf("decoded %+v, %v; want Writer 3kf9z2", got, err)
	}
	delete(item, "leaseWriter")
	if got, _, err := dynamostore.DecodeLease(item); err != nil || got.Writer != "" {
		t.Fatalf("a row without leaseWriter decoded as %v, %v", got, err)
	}
}

// issueRows are the twelve kinds of malformed row of issue 8 (put by hand,
// each a valid row of its key with one thing wrong), with the attribute
// the reason must name. They can all be stored in a lease table (leaseKey
// is a string).
func issueRows() []struct {
	name, attr string
	item       dynamostore.Item
} {
	key := func(name string) string { return "bad-" + name }
	mk := func(name string, edit func(dynamostore.Item)) dynamostore.Item {
		item := dynamostore.EncodeLease(engine.Lease{Key: key(name), Owner: "w", Counter: 1, Checkpoint: engine.SequenceCheckpoint("5")})
		edit(item)
		return item
	}
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	rows := []struct {
		name, attr string
		edit       func(dynamostore.Item)
	}{
		{"owner-number", "leaseOwner", func(i dynamostore.Item) { i["leaseOwner"] = n("42") }},
		{"counter-string", "leaseCounter", func(i dynamostore.Item) { i["leaseCounter"] = str("7") }},
		{"checkpoint-not-a-seq", "checkpoint", func(i dynamostore.Item) { i["checkpoint"] = str("not-a-seq-!!") }},
		{"counter-1e23", "leaseCounter", func(i dynamostore.Item) { i["leaseCounter"] = n("100000000000000000000000") }},
		{"checkpoint-200-digits", "checkpoint", func(i dynamostore.Item) { i["checkpoint"] = str(strings.Repeat("7", 200)) }},
		{"counter-negative", "leaseCounter", func(i dynamostore.Item) { i["leaseCounter"] = n("-3") }},
		{"counter-fractional", "leaseCounter", func(i dynamostore.Item) { i["leaseCounter"] = n("2.5") }},
		{"parents-string", "parentShardId", func(i dynamostore.Item) { i["parentShardId"] = str("shardId-000000000000") }},
		{"shard-end-with-subsequence", "SHARD_END", func(i dynamostore.Item) { i["checkpoint"], i["checkpointSubSequenceNumber"] = str("SHARD_END"), n("4") }},
		{"subsequence-negative", "sub-sequence", func(i dynamostore.Item) { i["checkpointSubSequenceNumber"] = n("-1") }},
		{"checkpoint-missing", "checkpoint", func(i dynamostore.Item) { delete(i, "checkpoint") }},
		{"children-list", "childShardIds", func(i dynamostore.Item) {
			i["childShardIds"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{str("shardId-000000000009")}}
		}},
	}
	out := make([]struct {
		name, attr string
		item       dynamostore.Item
	}, len(rows))
	for i, r := range rows {
		out[i].name, out[i].attr, out[i].item = r.name, r.attr, mk(r.name, r.edit)
	}
	return out
}

// TestDecodeIssueRows: each of the twelve kinds is rejected with its key
// and a reason naming what is wrong.
func TestDecodeIssueRows(t *testing.T) {
	rows := issueRows()
	if len(rows) != 12 {
		t.Fatalf("%d kinds, want the twelve", len(rows))
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			_, key, err := dynamostore.DecodeLease(tc.item)
			if err == nil {
				t.Fatal("DecodeLease accepted a malformed row")
			}
			if key != "bad-"+tc.name {
				t.Errorf("key = %q, want bad-%s", key, tc.name)
			}
			if !strings.Contains(err.Error(), tc.attr) {
				t.Errorf("reason %q does not name %s", err, tc.attr)
			}
			if len(err.Error()) > 200 {
				t.Errorf("reason of %d bytes: %q", len(err.Error()), err)
			}
		})
	}
}

// TestListLeasesReportsIssueRows: the twelve kinds, stored in dynalite
// beside a valid lease, come back from a scan as twelve malformed rows
// with their keys and reasons, and the lease as a lease; nothing fails.
func TestListLeasesReportsIssueRows(t *testing.T) {
	c, _ := client(t)
	table := newTable(t, c)
	rows := issueRows()
	for _, r := range rows {
		putRaw(t, c, table, r.item)
	}
	good := engine.Lease{Key: "good", Counter: 3, Checkpoint: engine.SentinelCheckpoint(engine.TrimHorizon)}
	putRaw(t, c, table, dynamostore.EncodeLease(good))
	for _, consistent := range []bool{true, false} {
		l, err := dynamostore.New(c, table).ListLeases(ctx(t), consistent)
		if err != nil {
			t.Fatalf("ListLeases: %v", err)
		}
		if len(l.Leases) != 1 || l.Leases[0].Key != "good" {
			t.Errorf("leases %v, want only good", l.Leases)
		}
		if len(l.Malformed) != len(rows) {
			t.Fatalf("%d malformed rows, want %d: %+v", len(l.Malformed), len(rows), l.Malformed)
		}
		byKey := map[string]string{}
		for _, m := range l.Malformed {
			byKey[m.Key] = m.Reason
		}
		for _, r := range rows {
			if reason, ok := byKey["bad-"+r.name]; !ok || !strings.Contains(reason, r.attr) {
				t.Errorf("bad-%s: reported %v with reason %q, want a reason naming %s", r.name, ok, reason, r.attr)
			}
		}
	}
}
