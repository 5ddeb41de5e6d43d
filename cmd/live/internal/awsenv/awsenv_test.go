package awsenv

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// TestSDKLinesGoThroughSlog: the clients' SDK logger writes through the
// slog logger given, at the level its classification maps to.
func TestSDKLinesGoThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c, err := Load(context.Background(), Settings{Region: "us-east-1", DynamoDBEndpoint: "http://127.0.0.1:1", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []logging.Logger{c.Config.Logger, c.DynamoDB.Options().Logger, c.Kinesis.Options().Logger} {
		logging.WithContext(context.Background(), l).Logf(logging.Warn, "checksum %s", "missing")
		l.Logf(logging.Debug, "a debug line")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want the 3 WARN lines (DEBUG is below the level):\n%s", len(lines), buf.String())
	}
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if m["level"] != "WARN" || m["msg"] != "checksum missing" || m["source"] != "aws-sdk" {
			t.Errorf("line %s: want level WARN, msg \"checksum missing\", source aws-sdk", line)
		}
	}
}

// TestWhereRedactsPasswords: endpoints with credentials in their URL are
// described with the password redacted, from flags and from the
// environment.
func TestWhereRedactsPasswords(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_KINESIS", "http://kin:hunter2@127.0.0.1:2")
	c, err := Load(context.Background(), Settings{Region: "us-east-1", DynamoDBEndpoint: "http://dyn:s3cr3t@127.0.0.1:1", Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	_, dyn, kin := c.Where()
	if dyn != "http://dyn:xxxxx@127.0.0.1:1" || kin != "http://kin:xxxxx@127.0.0.1:2" {
		t.Errorf("Where() = %q, %q; want the passwords redacted", dyn, kin)
	}
	if got := Redact("not a url\x7f@secret"); strings.Contains(got, "secret") {
		t.Errorf("Redact of an unparsable endpoint = %q", got)
	}
}
