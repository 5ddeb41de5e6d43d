package awslog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"
)

// TestLevelsAndSource: WARN at WARN, DEBUG at DEBUG (filtered by the
// handler's level), each with source=aws-sdk, also through the context
// and through a config loaded with it.
func TestLevelsAndSource(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := New(log)
	l.Logf(logging.Warn, "checksum %s", "missing")
	logging.WithContext(context.Background(), l).Logf(logging.Debug, "request %d", 7)
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"), config.WithLogger(l),
		config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Logf(logging.Warn, "from the config")
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, m)
	}
	want := [][2]string{{"WARN", "checksum missing"}, {"DEBUG", "request 7"}, {"WARN", "from the config"}}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		if got[i]["level"] != w[0] || got[i]["msg"] != w[1] || got[i]["source"] != "aws-sdk" {
			t.Errorf("line %d = %v, want level %s, msg %q, source aws-sdk", i, got[i], w[0], w[1])
		}
	}
	buf.Reset()
	New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))).Logf(logging.Debug, "hidden")
	if buf.Len() != 0 {
		t.Errorf("a DEBUG line passed an INFO handler: %s", buf.String())
	}
}
