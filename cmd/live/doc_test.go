package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/internal/doccmd"
	"github.com/shardlease/shardlease/internal/efoserver"
	"github.com/shardlease/shardlease/internal/localaws"
)

// The tests of this file run the commands of docs/live.md and of the AWS
// walk-through (README.md, docs/aws.md) as they are written, against a
// private pair of local servers (scripts/localaws.sh in a state directory
// of their own): the documentation's table and stream names are fixed, so
// they must not meet another test's.

// needLocalServers skips unless local servers were asked for (fails
// nothing: the servers are the test's own).
func needLocalServers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts local servers")
	}
	if !localaws.Required() && os.Getenv(localaws.EnvEnable) != "1" && os.Getenv(localaws.EnvDynamoDB) == "" {
		t.Skipf("runs the documentation's commands against local servers of its own: set %s=1 or run make test", localaws.EnvEnable)
	}
}

// cleanEnv is the environment without endpoints, LIVE_* settings or a
// localaws state directory.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "LIVE_") || strings.HasPrefix(kv, localaws.EnvStateDir+"=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// privateServers starts dynalite and kinesalite with scripts/localaws.sh
// in a state directory of their own, stops them when t ends, and returns
// the environment (`scripts/localaws.sh env`) that points at them.
func privateServers(t *testing.T, root string) []string {
	t.Helper()
	state := t.TempDir()
	script := filepath.Join(root, "scripts", "localaws.sh")
	env := append(cleanEnv(), localaws.EnvStateDir+"="+state)
	sh := func(args ...string) (string, error) {
		cmd := exec.Command(script, args...)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := sh("start"); err != nil {
		_, _ = sh("stop")
		t.Fatalf("scripts/localaws.sh start: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = sh("stop") })
	cmd := exec.Command(script, "env")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/localaws.sh env: %v", err)
	}
	vars := strings.Fields(strings.TrimPrefix(strings.TrimSpace(string(out)), "export "))
	return append(cleanEnv(), vars...)
}

// envValue returns the value of key in env.
func envValue(env []string, key string) string {
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := doccmd.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestDocLocalByHand runs docs/live.md's "by hand" block with bash, from a
// directory that holds the repository's top-level entries as symbolic
// links (so bin/live, hist and the servers' state land there, not in the
// checkout), and checks that it ends with live check's PASS.
func TestDocLocalByHand(t *testing.T) {
	needLocalServers(t)
	root := repoRoot(t)
	blocks, err := doccmd.Blocks(root)
	if err != nil {
		t.Fatal(err)
	}
	var script string
	for _, b := range blocks {
		if b.File == "docs/live.md" && strings.HasPrefix(b.Text, "scripts/localaws.sh start") {
			script = b.Text
		}
	}
	if script == "" {
		t.Fatal(`docs/live.md has no shell block that starts with "scripts/localaws.sh start"`)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "dynalite")); err != nil {
		t.Fatalf("the local servers are not installed in %s (npm ci; scripts/localaws.sh start does it): %v", root, err)
	}
	work := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != ".git" && n != ".tmp" && n != "bin" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(work, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, port := range []string{"9464", "9465"} {
		if l, err := net.Listen("tcp", "127.0.0.1:"+port); err != nil {
			t.Fatalf("the block serves metrics on 127.0.0.1:%s, which is taken: %v", port, err)
		} else {
			l.Close()
		}
	}
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(work, "scripts", "localaws.sh"), "stop")
		cmd.Env = cleanEnv()
		_ = cmd.Run()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = work
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the block of docs/live.md failed: %v\n%s", err, blockReport(out.String()))
	}
	if !strings.Contains(out.String(), "verdict: PASS") {
		t.Fatalf("live check did not say PASS:\n%s", blockReport(out.String()))
	}
}

// blockReport puts first what a reader of a failed block needs (every line
// that is not a worker's log line: live check's report, the shell's and the
// commands' errors) and then the workers' last 80 log lines, so that a CI
// log that keeps only the head of a failure still shows why it failed.
func blockReport(out string) string {
	var own, logs []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.HasPrefix(l, "time=") {
			logs = append(logs, l)
		} else {
			own = append(own, l)
		}
	}
	if len(logs) > 80 {
		logs = logs[len(logs)-80:]
	}
	return "--- the block's own output:\n" + strings.Join(own, "\n") +
		"\n--- the workers' last log lines:\n" + strings.Join(logs, "\n")
}

// TestDocAWSCommands runs the AWS walk-through's commands (README.md,
// docs/aws.md) against local servers: live create; the AWS CLI's
// create-table and create-stream, translated flag by flag into the same
// SDK calls (unknown flags fail), on a fresh pair; and each documented
// live run, until it is ready and holds every shard, then SIGTERM, which
// must exit 0. The fan-out form reads through internal/efoserver.
func TestDocAWSCommands(t *testing.T) {
	needLocalServers(t)
	root := repoRoot(t)
	_, cmds, err := doccmd.Load()
	if err != nil {
		t.Fatal(err)
	}
	creates, err := doccmd.Find(cmds, "live create -region")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := doccmd.Find(cmds, "live run -region")
	if err != nil {
		t.Fatal(err)
	}
	clis, err := doccmd.Find(cmds, "aws ")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildLive(t)

	// live create, on a pair of its own
	for _, c := range uniqueCommands(creates) {
		env := privateServers(t, root)
		out, code := runDocLive(t, bin, c, env)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", c, code, out)
		}
	}

	// the AWS CLI, then every live run against what it made
	env := privateServers(t, root)
	for _, c := range clis {
		if err := runAWSCLI(env, c); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	for _, c := range uniqueCommands(runs) {
		renv := env
		if strings.Contains(c.Text, "-consumer fan-out") {
			renv = fanOutEnv(t, env)
		}
		t.Run(c.Text, func(t *testing.T) { runDocWorker(t, bin, c, renv) })
	}
}

// uniqueCommands drops commands whose text an earlier one has (the README
// repeats some of docs/aws.md).
func uniqueCommands(cmds []doccmd.Command) []doccmd.Command {
	var out []doccmd.Command
	for _, c := range cmds {
		if !slices.ContainsFunc(out, func(o doccmd.Command) bool { return o.Text == c.Text }) {
			out = append(out, c)
		}
	}
	return out
}

func docLiveCmd(t *testing.T, bin string, c doccmd.Command, env []string) *exec.Cmd {
	t.Helper()
	words, redirect, err := doccmd.Fields(c.Text)
	if err != nil || redirect != "" || words[0] != "live" {
		t.Fatalf("%s: not a plain live command (%v)", c, err)
	}
	cmd := exec.Command(bin, words[1:]...)
	cmd.Env = env
	return cmd
}

func runDocLive(t *testing.T, bin string, c doccmd.Command, env []string) (string, int) {
	t.Helper()
	b, err := docLiveCmd(t, bin, c, env).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(b), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b), 0
}

// runDocWorker starts a documented live run, waits until its /readyz says
// ready and it holds the stream's 4 shards, stops it with SIGTERM and
// expects exit 0.
func runDocWorker(t *testing.T, bin string, c doccmd.Command, env []string) {
	if l, err := net.Listen("tcp", ":9464"); err != nil {
		t.Fatalf("the command serves on :9464, which is taken: %v", err)
	} else {
		l.Close()
	}
	cmd := docLiveCmd(t, bin, c, env)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	waitFor(t, "the worker ready and holding 4 leases", time.Minute, func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("%s exited early: %v\n%s", c, err, out.String())
		default:
		}
		resp, err := http.Get("http://127.0.0.1:9464/readyz?verbose")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		held := heldLeases(b.String())
		return resp.StatusCode == http.StatusOK && held == 4, fmt.Sprintf("%d %q", resp.StatusCode, b.String())
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("%s: after SIGTERM: %v\n%s", c, err, out.String())
	}
}

// heldLeases reads "ok: N leases held" from a probe body (-1: not there).
func heldLeases(body string) int {
	rest, ok := strings.CutPrefix(body, "ok: ")
	if !ok {
		return -1
	}
	f := strings.Fields(rest)
	if len(f) < 2 || !strings.HasPrefix(f[1], "lease") {
		return -1
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return -1
	}
	return n
}

// syncBuffer is a bytes.Buffer safe for a child's stdout and stderr and
// a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fanOutEnv puts a local enhanced fan-out endpoint in front of env's
// kinesalite and returns env pointing the workers' Kinesis at it.
func fanOutEnv(t *testing.T, env []string) []string {
	kinURL := envValue(env, localaws.EnvKinesis)
	kin := kinesis.NewFromConfig(localaws.Target{}.WithEndpoint(kinURL).Config, func(o *kinesis.Options) {
		o.Region = "eu-west-1"
		o.Credentials = aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, nil
		}))
	})
	efo := efoserver.New(t, efoserver.Options{Backend: kinesisstream.New(kin), Upstream: kinURL, Activation: 500 * time.Millisecond})
	ca := filepath.Join(t.TempDir(), "efo-ca.pem")
	if err := os.WriteFile(ca, efo.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return append(slices.Clone(env), localaws.EnvKinesis+"="+efo.URL, "AWS_CA_BUNDLE="+ca)
}

// runAWSCLI runs the two AWS CLI commands of docs/aws.md, translated flag
// by flag into the SDK call the CLI makes; a flag it does not know fails.
func runAWSCLI(env []string, c doccmd.Command) error {
	words, redirect, err := doccmd.Fields(c.Text)
	if err != nil {
		return err
	}
	if redirect != "" || len(words) < 3 || words[0] != "aws" {
		return fmt.Errorf("not an aws command")
	}
	flags := map[string]string{}
	for i := 3; i < len(words); i += 2 {
		if !strings.HasPrefix(words[i], "--") || i+1 >= len(words) {
			return fmt.Errorf("want --flag value pairs, got %q", words[i:])
		}
		flags[words[i]] = words[i+1]
	}
	ctx := context.Background()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, nil
	})
	take := func(name string) string { v := flags[name]; delete(flags, name); return v }
	switch words[1] + " " + words[2] {
	case "dynamodb create-table":
		in := &dynamodb.CreateTableInput{TableName: aws.String(take("--table-name")), BillingMode: ddbtypes.BillingMode(take("--billing-mode"))}
		for _, kv := range strings.Fields(take("--attribute-definitions")) {
			m := cliShorthand(kv)
			in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String(m["AttributeName"]), AttributeType: ddbtypes.ScalarAttributeType(m["AttributeType"])})
		}
		for _, kv := range strings.Fields(take("--key-schema")) {
			m := cliShorthand(kv)
			in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String(m["AttributeName"]), KeyType: ddbtypes.KeyType(m["KeyType"])})
		}
		if len(flags) > 0 {
			return fmt.Errorf("flags not translated: %v", flags)
		}
		db := dynamodb.New(dynamodb.Options{Region: "eu-west-1", Credentials: creds, BaseEndpoint: aws.String(envValue(env, localaws.EnvDynamoDB))})
		_, err := db.CreateTable(ctx, in)
		return err
	case "kinesis create-stream":
		n, err := strconv.Atoi(take("--shard-count"))
		if err != nil {
			return fmt.Errorf("--shard-count: %w", err)
		}
		in := &kinesis.CreateStreamInput{StreamName: aws.String(take("--stream-name")), ShardCount: aws.Int32(int32(n))}
		if len(flags) > 0 {
			return fmt.Errorf("flags not translated: %v", flags)
		}
		kin := kinesis.New(kinesis.Options{Region: "eu-west-1", Credentials: creds, BaseEndpoint: aws.String(envValue(env, localaws.EnvKinesis))})
		if _, err := kin.CreateStream(ctx, in); err != nil {
			return err
		}
		return kinesis.NewStreamExistsWaiter(kin).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: in.StreamName}, time.Minute)
	}
	return fmt.Errorf("aws %s %s is not translated", words[1], words[2])
}

// cliShorthand parses the AWS CLI's shorthand "A=x,B=y".
func cliShorthand(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
