package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/internal/etcdtest"
	"github.com/shardlease/shardlease/internal/localaws"
)

func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m)) }

// etcdArgs are the store flags of a table on the shared cluster.
func etcdArgs(t *testing.T) []string {
	return []string{"-store", "etcd", "-etcd-endpoints", strings.Join(etcdtest.Shared(t).Endpoints(), ",")}
}

// TestCreateEtcd: `live create -store etcd` lays the prefix out once, says
// so, and refuses a prefix that holds another application's keys, naming
// one.
func TestCreateEtcd(t *testing.T) {
	table := "create-" + strconv.Itoa(os.Getpid())
	args := append([]string{"create", "-table", table}, etcdArgs(t)...)
	if code, out := runMain(t, args...); code != exitOK || !strings.Contains(out, `lease table etcd prefix "/shardlease/`+table+`/"`) || !strings.Contains(out, "laid out") {
		t.Fatalf("first create: %d %s", code, out)
	}
	if code, out := runMain(t, args...); code != exitOK || !strings.Contains(out, "ready (already laid out)") {
		t.Fatalf("second create: %d %s", code, out)
	}
	cli := etcdtest.Shared(t).Client(t)
	other := "other-" + strconv.Itoa(os.Getpid())
	if _, err := cli.Put(etcdtest.Context(t), "/shardlease/"+other+"/config/flags", "x"); err != nil {
		t.Fatal(err)
	}
	code, out := runMain(t, append([]string{"create", "-table", other}, etcdArgs(t)...)...)
	if code != exitUsage || !strings.Contains(out, `"/shardlease/`+other+`/config/flags"`) || !strings.Contains(out, "another application's") {
		t.Fatalf("create over another application's keys: %d %s", code, out)
	}
}

// TestRunEtcdRefusesAnotherApplicationsPrefix: a worker whose prefix holds
// keys that are not shardlease's stops at start (exit 2) and says why,
// before it reads the stream.
func TestRunEtcdRefusesAnotherApplicationsPrefix(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	cli := etcdtest.Shared(t).Client(t)
	table := "foreign-" + strconv.Itoa(os.Getpid())
	if _, err := cli.Put(etcdtest.Context(t), "/shardlease/"+table+"/locks/leader", "x"); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "-stream", "s", "-table", table, "-metrics-addr", "", "-kinesis-endpoint", "http://127.0.0.1:1", "-start-timeout", "10s"}, etcdArgs(t)...)
	code, out := runMain(t, args...)
	if code != exitUsage || !strings.Contains(out, "is not this application's lease table") || !strings.Contains(out, "/locks/leader") {
		t.Fatalf("%d %s", code, out)
	}
}

// TestRunEtcdUnreachable: a cluster that does not answer is named with its
// endpoints.
func TestRunEtcdUnreachable(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	ports, err := etcdtest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	code, out := runMain(t, "run", "-stream", "s", "-table", "t", "-metrics-addr", "", "-store", "etcd", "-etcd-endpoints", ep,
		"-kinesis-endpoint", "http://127.0.0.1:1", "-start-timeout", "2s")
	if code == exitOK || !strings.Contains(out, "etcd "+ep+" did not answer") {
		t.Fatalf("%d %s", code, out)
	}
}

// TestCreateEtcdUnreachable: `live create` names a cluster that does not
// answer with its endpoints, and gives up by itself (at twice
// -etcd-dial-timeout) instead of waiting out -timeout.
func TestCreateEtcdUnreachable(t *testing.T) {
	ports, err := etcdtest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	// The guard only turns a hang into a failure: create gives up after 1 s.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	code := realMain(ctx, []string{"create", "-table", "t", "-store", "etcd", "-etcd-endpoints", ep, "-etcd-dial-timeout", "500ms", "-timeout", "1h"}, &out, &out)
	if ctx.Err() != nil {
		t.Fatalf("live create waited for the unreachable cluster until the test's guard: %s", out.String())
	}
	if code != exitFailed || !strings.Contains(out.String(), "etcd "+ep+" did not answer") {
		t.Fatalf("%d %s", code, out.String())
	}
}

// TestEtcdCredentials: on a cluster with etcd's authentication on, `live
// create` and `live run` refuse a wrong password and a user without a
// grant on the prefix (exit 2), saying so and naming the user, and print
// no password; the granted user lays the prefix out and gets past the
// table check.
func TestEtcdCredentials(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	c, err := etcdtest.NewCluster(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const rootPW, appPW, otherPW, wrongPW = "root-Pa55-1", "app-Pa55-2", "other-Pa55-3", "wrong-Pa55-9"
	c.EnableAuth(t, rootPW, etcdtest.User{Name: "app", Password: appPW, Prefix: "/shardlease/orders/"}, etcdtest.User{Name: "other", Password: otherPW})
	storeArgs := func(user string) []string {
		return []string{"-table", "orders", "-store", "etcd", "-etcd-endpoints", strings.Join(c.Endpoints(), ","), "-etcd-username", user}
	}
	create := func(user string) []string { return append([]string{"create"}, storeArgs(user)...) }
	run := func(user string) []string {
		return append([]string{"run", "-stream", "s", "-metrics-addr", "", "-kinesis-endpoint", "http://127.0.0.1:1", "-start-timeout", "3s"}, storeArgs(user)...)
	}
	check := func(what string, args []string, wantCode int, want ...string) string {
		t.Helper()
		code, out := runMain(t, args...)
		for _, pw := range []string{rootPW, appPW, otherPW, wrongPW} {
			if strings.Contains(out, pw) {
				t.Errorf("%s: the output shows a password: %s", what, out)
			}
		}
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d: %s", what, code, wantCode, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the output does not say %q: %s", what, w, out)
			}
		}
		return out
	}

	t.Setenv(envEtcdPassword, wrongPW)
	check("create, wrong password", create("app"), exitUsage, `refused the credentials of user "app"`)
	check("run, wrong password", run("app"), exitUsage, `refused the credentials of user "app"`)

	t.Setenv(envEtcdPassword, otherPW)
	check("create, no grant on the prefix", create("other"), exitUsage, "the etcd cluster refused the credentials or their permissions", `"/shardlease/orders/"`)
	check("run, no grant on the prefix", run("other"), exitUsage, "the etcd cluster refused the credentials or their permissions", `"/shardlease/orders/"`)

	t.Setenv(envEtcdPassword, "")
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte(appPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("create, the granted user", append(create("app"), "-etcd-password-file", pw), exitOK, "laid out")
	// past the table check (the first of the start-up checks), the worker
	// goes on to the stream, which does not answer
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	if out := check("run, the granted user", append(run("app"), "-etcd-password-file", pw), exitFailed, "dependency=stream", "did not pass within 3s"); strings.Contains(out, "refused the credentials") {
		t.Errorf("run, the granted user: refused: %s", out)
	}
}

// TestEtcdFlags: bad combinations are refused with the rule, and a
// password (from a file or the environment) never shows in the output.
func TestEtcdFlags(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	base := []string{"run", "-stream", "s", "-table", "t", "-metrics-addr", ""}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-etcd-endpoints", "http://x:2379"}, "-etcd-* flags need -store etcd"},
		{[]string{"-store", "etcd"}, "-store etcd needs -etcd-endpoints"},
		{[]string{"-store", "zookeeper"}, `-store "zookeeper": want dynamodb or etcd`},
		{[]string{"-store", "etcd", "-etcd-endpoints", "http://127.0.0.1:1", "-etcd-username", "app"}, "-etcd-username app needs a password"},
		{[]string{"-store", "etcd", "-etcd-endpoints", "http://127.0.0.1:1", "-etcd-password-file", "/nonexistent/pw"}, "-etcd-password-file"},
		{[]string{"-store", "etcd", "-etcd-endpoints", "http://127.0.0.1:1", "-etcd-dial-timeout", "0s"}, "-etcd-dial-timeout 0s: must be positive"},
	} {
		code, out := runMain(t, append(base, c.args...)...)
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: %d %s; want exit %d saying %q", c.args, code, out, exitUsage, c.want)
		}
	}
	// the shared cluster has no authentication (etcd then ignores a user
	// and password): the worker goes on to the stream, which is not there,
	// and the password is never printed
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret-Pa55\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(append(base, etcdArgs(t)...), "-etcd-username", "app", "-etcd-password-file", pw, "-kinesis-endpoint", "http://127.0.0.1:1", "-start-timeout", "1s")
	code, out := runMain(t, args...)
	if code == exitOK || strings.Contains(out, "s3cret-Pa55") {
		t.Fatalf("%d %s", code, out)
	}
	t.Setenv(envEtcdPassword, "env-s3cret-9")
	args = append(append(base, etcdArgs(t)...), "-etcd-username", "app", "-kinesis-endpoint", "http://127.0.0.1:1", "-start-timeout", "1s")
	if code, out := runMain(t, args...); code == exitOK || strings.Contains(out, "env-s3cret-9") {
		t.Fatalf("%d %s", code, out)
	}
}

// TestLiveRunEtcdRefusesAnotherStreamsTable: the stream identity rules of
// the DynamoDB table (TestLiveRunRefusesAnotherStreamsTable) hold for an
// etcd prefix: a worker started with the wrong stream name on another
// stream's prefix exits 2 naming the prefix, both streams, and leaves the
// rows untouched.
func TestLiveRunEtcdRefusesAnotherStreamsTable(t *testing.T) {
	kt := localaws.Kinesis(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	table := localaws.UniqueName(t, "leases")
	w := &identityWorld{t: t, kin: kinesis.NewFromConfig(localaws.FastRetries(kt.Config)), table: table,
		env: append([]string{"-kinesis-endpoint", kt.Endpoint, "-region", "us-east-1"}, etcdArgs(t)...)}
	barA, barB := w.stream("bar-a", 4), w.stream("bar-b", 2)
	s, err := etcdstore.New(etcdtest.Shared(t).Client(t), "/shardlease/"+table+"/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := etcdtest.Context(t)
	id := w.identity(barA)
	rows := []engine.Lease{{Key: engine.MarkerPrefix, Counter: 1, Checkpoint: engine.SentinelCheckpoint(engine.ShardEnd), StreamID: id}}
	for i := 0; i < 4; i++ {
		rows = append(rows, engine.Lease{Key: fmt.Sprintf("shardId-%012d", i), Counter: 7, Checkpoint: engine.SequenceCheckpoint("49590000000000000000000000000000000000000000000000000042"), StreamID: id})
	}
	for _, l := range rows {
		if err := s.CreateLease(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.ListLeases(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	code, out := w.run(barB)
	if code != exitUsage {
		t.Fatalf("live run exited %d, want %d:\n%s", code, exitUsage, out)
	}
	for _, want := range []string{"belongs to another stream", barA, barB, `etcd prefix "/shardlease/` + table + `/"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not name %q:\n%s", want, out)
		}
	}
	after, err := s.ListLeases(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the prefix changed:\nbefore %v\nafter  %v", before, after)
	}
}
