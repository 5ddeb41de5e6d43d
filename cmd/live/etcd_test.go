package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/etcdtest"
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
