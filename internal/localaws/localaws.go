package localaws

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Environment variables this package reads.
const (
	// EnvEnable, set to 1, makes tests use the servers that
	// scripts/localaws.sh start left running (ports read from its state
	// directory) when the endpoint variables are not set.
	EnvEnable = "SHARDLEASE_LOCALAWS"
	// EnvRequire, set to 1, turns a missing or unreachable server from a
	// skip into a test failure.
	EnvRequire = "SHARDLEASE_REQUIRE_LOCALAWS"
	// EnvStateDir overrides the state directory of scripts/localaws.sh.
	EnvStateDir = "LOCALAWS_STATE_DIR"
	// EnvDynamoDB and EnvKinesis are the SDK's per-service endpoint
	// variables.
	EnvDynamoDB = "AWS_ENDPOINT_URL_DYNAMODB"
	EnvKinesis  = "AWS_ENDPOINT_URL_KINESIS"
)

// Target is one local server: its base URL and an aws.Config whose
// BaseEndpoint points at it, with static dummy credentials and a region, so
// that dynamodb.NewFromConfig(t.Config) or kinesis.NewFromConfig(t.Config)
// talks to it.
type Target struct {
	Endpoint string
	Config   aws.Config
}

// WithEndpoint returns a copy of t that talks to endpoint instead (for
// example a FaultProxy in front of the server).
func (t Target) WithEndpoint(endpoint string) Target {
	t.Endpoint = endpoint
	t.Config = t.Config.Copy()
	t.Config.BaseEndpoint = aws.String(endpoint)
	return t
}

// Required reports whether SHARDLEASE_REQUIRE_LOCALAWS=1: tests must fail,
// not skip, when a server is missing.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// DynamoDB returns the local DynamoDB server (dynalite), or skips t (fails
// it under SHARDLEASE_REQUIRE_LOCALAWS=1) when none is available.
func DynamoDB(t testing.TB) Target { return target(t, "dynamodb", EnvDynamoDB, "dynalite") }

// Kinesis returns the local Kinesis server (kinesalite), or skips t (fails
// it under SHARDLEASE_REQUIRE_LOCALAWS=1) when none is available.
func Kinesis(t testing.TB) Target { return target(t, "kinesis", EnvKinesis, "kinesalite") }

func target(t testing.TB, service, envVar, server string) Target {
	t.Helper()
	endpoint, err := find(envVar, server)
	if err == nil {
		err = probe(endpoint)
	}
	if err != nil {
		msg := fmt.Sprintf("local %s server (%s) not available: %v; start one with `scripts/localaws.sh start` "+
			"and run with %s=1 (or `eval $(scripts/localaws.sh env)`), or run `make test-contract`",
			service, server, err, EnvEnable)
		if Required() {
			t.Fatalf("%s=1: %s", EnvRequire, msg)
		}
		t.Skip(msg)
	}
	return Target{Endpoint: endpoint, Config: config(endpoint)}
}

// find returns the endpoint from envVar, or from the script's state
// directory when SHARDLEASE_LOCALAWS=1.
func find(envVar, server string) (string, error) {
	if ep := os.Getenv(envVar); ep != "" {
		if _, err := url.Parse(ep); err != nil {
			return "", fmt.Errorf("%s is not a URL: %w", envVar, err)
		}
		return ep, nil
	}
	if os.Getenv(EnvEnable) != "1" {
		return "", fmt.Errorf("neither %s nor %s=1 is set", envVar, EnvEnable)
	}
	dir, err := stateDir()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, server+".port"))
	if err != nil {
		return "", fmt.Errorf("%s=1 but no port file: %w", EnvEnable, err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return "", fmt.Errorf("bad port file for %s: %w", server, err)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port), nil
}

// stateDir returns $LOCALAWS_STATE_DIR or .tmp/localaws at the repository
// root (the directory holding go.mod, found from the working directory).
func stateDir() (string, error) {
	if d := os.Getenv(EnvStateDir); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".tmp", "localaws"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// probe checks that something accepts TCP connections at endpoint.
func probe(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	conn, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return fmt.Errorf("endpoint %s does not answer: %w", endpoint, err)
	}
	return conn.Close()
}

// config builds an aws.Config for a local server. The local servers accept
// any credentials (they are never printed); the region is $AWS_REGION or
// us-east-1.
func config(endpoint string) aws.Config {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	return aws.Config{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "localaws"}, nil
		}),
	}
}

var nameSeq atomic.Int64

// UniqueName returns a table or stream name that starts with prefix, is
// derived from the test's name, is unique within the process and across
// runs against the same server, and is valid for both DynamoDB and Kinesis
// ([a-zA-Z0-9_.-], at most 100 characters).
func UniqueName(t testing.TB, prefix string) string {
	var b strings.Builder
	for _, r := range prefix + "-" + t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 70 {
		name = name[:70]
	}
	return fmt.Sprintf("%s-%d-%d-%d", name, os.Getpid(), time.Now().UnixNano()%1_000_000, nameSeq.Add(1))
}
