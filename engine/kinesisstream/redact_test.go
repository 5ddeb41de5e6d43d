package kinesisstream_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/kinesisstream"
)

// TestErrorsRedactEndpointPasswords: an endpoint given with credentials in
// its URL (http://user:secret@host) is named in errors with the password
// redacted.
func TestErrorsRedactEndpointPasswords(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"Stream s not found"}`))
	}))
	defer srv.Close()
	endpoint := strings.Replace(srv.URL, "http://", "http://user:s3cr3t@", 1)
	c := kinesis.NewFromConfig(aws.Config{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "k", SecretAccessKey: "s"}, nil
		}),
	})
	_, err := kinesisstream.New(c).ListShards(context.Background(), "s")
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("ListShards = %v, want ErrNotFound", err)
	}
	if msg := err.Error(); strings.Contains(msg, "s3cr3t") || !strings.Contains(msg, "user:xxxxx@") {
		t.Fatalf("the error does not redact the endpoint's password: %s", msg)
	}
}
