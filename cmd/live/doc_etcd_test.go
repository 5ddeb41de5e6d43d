package main

import (
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/doccmd"
	"github.com/shardlease/shardlease/internal/etcdtest"
)

// docEtcdEndpoints is the endpoint docs/etcd.md's commands name; the test
// runs them against the shared test cluster instead.
const docEtcdEndpoints = "-etcd-endpoints http://127.0.0.1:2379"

// TestDocEtcdCommands runs docs/etcd.md's commands as written, with the
// shared test cluster's endpoints for docEtcdEndpoints, against a private
// pair of local servers for the stream: live create -store etcd, then each
// live run -store etcd until it is ready and holds every shard, then
// SIGTERM, which must exit 0.
func TestDocEtcdCommands(t *testing.T) {
	needLocalServers(t)
	root := repoRoot(t)
	_, cmds, err := doccmd.Load()
	if err != nil {
		t.Fatal(err)
	}
	creates, err := doccmd.Find(cmds, "live create -store etcd")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := doccmd.Find(cmds, "live run -store etcd")
	if err != nil {
		t.Fatal(err)
	}
	eps := "-etcd-endpoints " + strings.Join(etcdtest.Shared(t).Endpoints(), ",")
	local := func(c doccmd.Command) doccmd.Command {
		if !strings.Contains(c.Text, docEtcdEndpoints) {
			t.Fatalf("%s: does not name %q, which the test replaces", c, docEtcdEndpoints)
		}
		c.Text = strings.Replace(c.Text, docEtcdEndpoints, eps, 1)
		return c
	}
	bin := buildLive(t)
	env := privateServers(t, root)
	for _, c := range uniqueCommands(creates) {
		if out, code := runDocLive(t, bin, local(c), env); code != 0 {
			t.Fatalf("%s: exit %d\n%s", c, code, out)
		}
	}
	for _, c := range uniqueCommands(runs) {
		t.Run(c.Text, func(t *testing.T) { runDocWorker(t, bin, local(c), env) })
	}
}
