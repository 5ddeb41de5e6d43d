package main

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/internal/localaws"
)

// identityWorld is a lease table and streams on the local servers.
type identityWorld struct {
	t     *testing.T
	ddb   *dynamodb.Client
	kin   *kinesis.Client
	table string
	env   []string // the endpoint flags of `live run`
}

func newIdentityWorld(t *testing.T) *identityWorld {
	dt, kt := localaws.DynamoDB(t), localaws.Kinesis(t)
	w := &identityWorld{t: t, ddb: dynamodb.NewFromConfig(localaws.FastRetries(dt.Config)), kin: kinesis.NewFromConfig(localaws.FastRetries(kt.Config)),
		table: localaws.UniqueName(t, "leases"), env: []string{"-dynamodb-endpoint", dt.Endpoint, "-kinesis-endpoint", kt.Endpoint, "-region", "us-east-1"}}
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	if code, out := runMain(t, append([]string{"create", "-table", w.table}, w.env...)...); code != 0 {
		t.Fatalf("live create: %d %s", code, out)
	}
	return w
}

// stream creates a stream of n shards and returns its name.
func (w *identityWorld) stream(prefix string, n int) string {
	name := localaws.UniqueName(w.t, prefix)
	if code, out := runMain(w.t, append([]string{"create", "-stream", name, "-shards", fmt.Sprint(n)}, w.env...)...); code != 0 {
		w.t.Fatalf("live create -stream: %d %s", code, out)
	}
	return name
}

// rows returns the table's items, raw.
func (w *identityWorld) rows() []dynamostore.Item {
	out, err := w.ddb.Scan(localaws.Context(w.t), &dynamodb.ScanInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		w.t.Fatal(err)
	}
	return out.Items
}

// put writes a lease row as a worker of the stream whose identity id is
// would have ("" for a row from before stream identities).
func (w *identityWorld) put(l engine.Lease) {
	if _, err := w.ddb.PutItem(localaws.Context(w.t), &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: dynamostore.EncodeLease(l)}); err != nil {
		w.t.Fatal(err)
	}
}

// identity returns the stream's identity as the engine computes it.
func (w *identityWorld) identity(stream string) string {
	out, err := w.kin.DescribeStreamSummary(localaws.Context(w.t), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		w.t.Fatal(err)
	}
	d := out.StreamDescriptionSummary
	return engine.StreamInfo{ARN: aws.ToString(d.StreamARN), Created: aws.ToTime(d.StreamCreationTimestamp)}.Identity()
}

// run runs `live run` for stream on the table until it exits (at most a
// minute) and returns its status and output.
func (w *identityWorld) run(stream string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	args := append([]string{"-stream", stream, "-table", w.table, "-owner", "typo", "-metrics-addr", "", "-lease-duration", "3s", "-renew-interval", "1s"}, w.env...)
	code := runWorker(ctx, args, &out, &errOut)
	if ctx.Err() != nil {
		w.t.Fatalf("live run did not exit within a minute: %s", errOut.String())
	}
	return code, out.String() + errOut.String()
}

// The data loss, on the local servers: a worker started with the
// wrong stream name on another stream's table (written by this version:
// with a stream marker), on a table of an earlier stream of the same name,
// and on a table written before stream identities: each exits 2 naming the
// table, the stream and what does not match, and the rows are untouched.
func TestLiveRunRefusesAnotherStreamsTable(t *testing.T) {
	cases := []struct {
		name string
		// rows builds the table bar-a's workers left, from bar-a's identity.
		rows func(w *identityWorld, barA, id string)
		// consume names the stream the mistaken worker consumes.
		consume func(w *identityWorld, barA string) string
		want    []string
	}{
		{"another stream", func(w *identityWorld, barA, id string) {
			w.put(engine.Lease{Key: engine.MarkerPrefix, Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.ShardEnd), StreamID: id})
			for i := 0; i < 4; i++ {
				w.put(engine.Lease{Key: fmt.Sprintf("shardId-%012d", i), Counter: 7, Checkpoint: engine.SequenceCheckpoint("49590000000000000000000000000000000000000000000000000042"), StreamID: id})
			}
		}, func(w *identityWorld, barA string) string { return w.stream("bar-b", 2) }, []string{"belongs to another stream", "{bar-a}"}},
		{"the same name, re-created", func(w *identityWorld, barA, id string) {
			w.put(engine.Lease{Key: engine.MarkerPrefix, Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.ShardEnd), StreamID: id})
			w.put(engine.Lease{Key: "shardId-000000000000", Counter: 7, Checkpoint: engine.SequenceCheckpoint("42"), StreamID: id})
		}, func(w *identityWorld, barA string) string {
			// delete the stream and create it again under its name, in
			// another second (kinesalite's creation times have one-second
			// resolution; on AWS a deletion alone takes longer)
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
			if _, err := w.kin.DeleteStream(localaws.Context(w.t), &kinesis.DeleteStreamInput{StreamName: aws.String(barA)}); err != nil {
				w.t.Fatal(err)
			}
			for i := 0; ; i++ {
				if code, out := runMain(w.t, append([]string{"create", "-stream", barA, "-shards", "4"}, w.env...)...); code == 0 {
					break
				} else if i > 50 {
					w.t.Fatalf("re-create %s: %s", barA, out)
				}
				time.Sleep(20 * time.Millisecond) // kinesalite deletes asynchronously
			}
			return barA
		}, []string{"belongs to another stream", "created"}},
		{"no marker (an earlier version's table)", func(w *identityWorld, barA, id string) {
			for i := 0; i < 4; i++ {
				w.put(engine.Lease{Key: fmt.Sprintf("shardId-%012d", i), Counter: 7, Checkpoint: engine.SequenceCheckpoint("42")})
			}
		}, func(w *identityWorld, barA string) string { return w.stream("bar-b", 2) }, []string{"shardId-000000000002, shardId-000000000003", "AdoptUnverifiedRows"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newIdentityWorld(t)
			barA := w.stream("bar-a", 4)
			tc.rows(w, barA, w.identity(barA))
			before := w.rows()
			stream := tc.consume(w, barA)
			code, out := w.run(stream)
			t.Logf("live run -stream %s: exit %d\n%s", stream, code, out)
			if code != exitUsage {
				t.Fatalf("live run exited %d, want %d:\n%s", code, exitUsage, out)
			}
			for _, s := range append(tc.want, w.table, stream) {
				s = strings.ReplaceAll(s, "{bar-a}", barA)
				if !strings.Contains(out, s) {
					t.Errorf("output does not name %q:\n%s", s, out)
				}
			}
			if after := w.rows(); !sameItems(before, after) {
				t.Errorf("the table changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// sameItems compares two scans as sets of items.
func sameItems(a, b []dynamostore.Item) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(it dynamostore.Item) string {
		l, k, _ := dynamostore.DecodeLease(it)
		return k + fmt.Sprint(l)
	}
	m := map[string]dynamostore.Item{}
	for _, it := range a {
		m[key(it)] = it
	}
	for _, it := range b {
		o, ok := m[key(it)]
		if !ok || !reflect.DeepEqual(o, it) {
			return false
		}
	}
	return true
}
