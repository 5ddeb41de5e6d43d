package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/internal/efoserver"
	"github.com/shardlease/shardlease/internal/localaws"
)

// live create -consumer-name registers the consumer through the
// enhanced fan-out endpoint (internal/efoserver in front of kinesalite,
// trusted through AWS_CA_BUNDLE as a worker would trust it), and a second
// create finds it registered.
func TestCreateRegistersConsumer(t *testing.T) {
	kin := localaws.Kinesis(t)
	srv := efoserver.New(t, efoserver.Options{Backend: kinesisstream.New(kinesis.NewFromConfig(kin.Config)), Upstream: kin.Endpoint})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", ca)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	stream := localaws.UniqueName(t, "efo")
	for i := 0; i < 2; i++ {
		code, out := runMain(t, "create", "-stream", stream, "-shards", "1", "-consumer-name", "app", "-kinesis-endpoint", srv.URL)
		if code != exitOK || !strings.Contains(out, "consumer app: ACTIVE, arn:") {
			t.Fatalf("create #%d: exit %d:\n%s", i+1, code, out)
		}
	}
	if n := srv.Count("RegisterStreamConsumer"); n != 1 {
		t.Fatalf("RegisterStreamConsumer called %d times, want once (the second create finds the consumer)", n)
	}
}
