package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
)

// TestMalformedRowsEndToEnd: rows put by hand that are not leases are
// logged by `live run` once each at WARN with their key and reason,
// counted by shardlease_malformed_rows, and listed by `live check -table`,
// which fails on them.
func TestMalformedRowsEndToEnd(t *testing.T) {
	table, stream := liveServers(t, "malformed")
	clients, err := awsenv.Load(context.Background(), awsenv.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]map[string]types.AttributeValue{
		"bad-owner": {"leaseOwner": &types.AttributeValueMemberN{Value: "42"}, "leaseCounter": &types.AttributeValueMemberN{Value: "1"},
			"checkpoint": &types.AttributeValueMemberS{Value: "TRIM_HORIZON"}},
		"bad-counter": {"leaseCounter": &types.AttributeValueMemberS{Value: "7"}, "checkpoint": &types.AttributeValueMemberS{Value: "5"}},
		"bad-checkpoint": {"leaseCounter": &types.AttributeValueMemberN{Value: "1"},
			"checkpoint": &types.AttributeValueMemberS{Value: "not-a-seq-!!"}},
	}
	for key, item := range bad {
		item["leaseKey"] = &types.AttributeValueMemberS{Value: key}
		if _, err := clients.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	var gauge string
	lines, code := liveRun(t, []string{"-table", table, "-stream", stream, "-owner", "m1", "-take-interval", "500ms"}, func(up map[string]any) {
		metrics := up["url"].(string)
		// wait for the consumer's scans (a bounded number of polls)
		for i := 0; i < 200 && gauge != "3"; i++ {
			<-time.After(50 * time.Millisecond)
			resp, err := http.Get(metrics)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, `shardlease_malformed_rows{owner="m1"} `) {
					gauge = strings.TrimPrefix(l, `shardlease_malformed_rows{owner="m1"} `)
				}
			}
		}
		// a few more scans, which must not log again
		<-time.After(1500 * time.Millisecond)
	})
	if code != exitOK {
		t.Errorf("live run exited %d", code)
	}
	if gauge != "3" {
		t.Errorf("shardlease_malformed_rows = %q, want 3", gauge)
	}
	warned := map[string]int{}
	for _, line := range lines {
		var m map[string]any
		_ = json.Unmarshal([]byte(line), &m)
		if m["msg"] == "malformed lease row skipped: fix or delete it by hand" && m["level"] == "WARN" {
			key, _ := m["key"].(string)
			warned[key]++
			if r, _ := m["reason"].(string); r == "" {
				t.Errorf("no reason: %s", line)
			}
		}
	}
	for key := range bad {
		if warned[key] != 1 {
			t.Errorf("%s logged %d times at WARN, want once (%v)", key, warned[key], warned)
		}
	}

	// live check lists them and fails
	code, out := runMain(t, "check", "-table", table, linHistoryDir(t, false, false)) // any history
	if code != exitFailed || !strings.Contains(out, "lease table: 3 malformed rows") ||
		!strings.Contains(out, "bad-checkpoint: lease bad-checkpoint: checkpoint: sequence number \"not-a-seq-!!\" is not a decimal integer") ||
		!strings.Contains(out, "verdict: FAIL (3 malformed rows in the lease table)") {
		t.Errorf("live check: exit %d:\n%s", code, out)
	}
}
