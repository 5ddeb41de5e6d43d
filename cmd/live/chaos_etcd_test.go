package main

// The etcd sub-test of the live chaos test: the lease table on a 3-member
// etcd cluster whose members are processes of internal/etcdtest's member
// binary (so that the leader can be killed), every worker reaching each
// member through a toxiproxy proxy of its own (so that one worker can be
// cut from the cluster), every member reaching its peers through a proxy in
// front of it (so that one member can be partitioned from the others). The
// faults of the DynamoDB runs' table links become: the etcd leader killed
// (the cluster elects another; calls in flight have unknown outcomes) and
// started again, one member partitioned from its peers, one worker's links
// slowed, then cut. The same `live check` follows.

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/cmd/live/internal/livecheck"
	"github.com/shardlease/shardlease/engine/etcdstore"
	"github.com/shardlease/shardlease/internal/etcdtest"
	"github.com/shardlease/shardlease/sim/check"
)

// buildEtcdMember builds the etcd member binary for the etcd sub-test.
func buildEtcdMember(t interface {
	TempDir() string
	Fatalf(string, ...any)
}) string {
	bin, err := etcdtest.BuildMember(t.TempDir())
	if err != nil {
		t.Fatalf("%v", err)
	}
	return bin
}

// etcdChaos is the cluster of an etcd run and its proxies.
type etcdChaos struct {
	cluster *etcdtest.ProcCluster
	cli     *clientv3.Client // the harness's, straight to the members
	// peerProxy[i] is the proxy in front of member i's peer listener
	peerProxy []string
	// slotProxies[slot][i] is the proxy from worker slot to member i, and
	// slotAddrs its address
	slotProxies map[int][]string
	slotAddrs   map[int][]string
	name        string
}

// setupEtcd starts the run's cluster and makes it the run's lease table.
func (r *chaosRun) setupEtcd(bin string) {
	t := r.t
	e := &etcdChaos{name: "etcd-" + strings.ToLower(r.pos), slotProxies: map[int][]string{}, slotAddrs: map[int][]string{}}
	ports, err := etcdtest.FreePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	var l etcdtest.Layout
	var listen, ic []string
	for i := 0; i < 3; i++ {
		name := "m" + strconv.Itoa(i)
		proxy := fmt.Sprintf("%s-peer-%d", e.name, i)
		addr := r.proxy(proxy, "127.0.0.1:"+strconv.Itoa(ports[2*i+1]))
		e.peerProxy = append(e.peerProxy, proxy)
		l.Names = append(l.Names, name)
		l.ClientURLs = append(l.ClientURLs, "http://127.0.0.1:"+strconv.Itoa(ports[2*i]))
		l.PeerURLs = append(l.PeerURLs, "http://"+addr)
		listen = append(listen, "http://127.0.0.1:"+strconv.Itoa(ports[2*i+1]))
		ic = append(ic, name+"="+l.PeerURLs[i])
	}
	l.InitialCluster, l.Token = strings.Join(ic, ","), "chaos-"+strconv.Itoa(ports[0])
	e.cluster = etcdtest.NewProcCluster(bin, memberDir(r), l, listen)
	if err := e.cluster.StartAll(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cluster.Close)
	e.cli, err = etcdtest.NewClient(l.ClientURLs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cli.Close() })
	s, err := etcdstore.New(e.cli, "/shardlease/"+r.table+"/")
	if err != nil {
		t.Fatal(err)
	}
	r.etcd, r.store = e, s
	r.logf("etcd cluster up: members %v, peers through %v", l.ClientURLs, l.PeerURLs)
}

// memberDir returns the directory of the members' data and logs: on tmpfs
// where there is one (/dev/shm), a disk that syncs at once, as etcd's
// hardware guidance asks of a member's disk (this machine's disk, shared,
// takes tens of milliseconds to sync under load: the figures would be its,
// not the engine's); kept, like the histories, when the test fails.
func memberDir(r *chaosRun) string {
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "shardlease-chaos-etcd-")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		if r.t.Failed() || os.Getenv("SHARDLEASE_CHAOS_KEEP") != "" {
			r.t.Logf("kept the etcd members' data and logs in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	r.logf("etcd members' data and logs in %s", dir)
	return dir
}

// proxy makes a toxiproxy proxy to upstream and returns its address.
func (r *chaosRun) proxy(name, upstream string) string {
	p, err := r.toxi.call("POST", "/proxies", map[string]any{"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true})
	if err != nil {
		r.t.Fatal(err)
	}
	addr, _ := p["listen"].(string)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		r.t.Fatalf("toxiproxy did not say where proxy %s listens: %v", name, p)
	}
	r.t.Cleanup(func() { _, _ = r.toxi.call("DELETE", "/proxies/"+name, nil) })
	return addr
}

// storeKind is the run's -store.
func (r *chaosRun) storeKind() string {
	if r.etcd != nil {
		return storeEtcd
	}
	return storeDynamoDB
}

// tableArgs are the flags that point worker slot at the table: its
// DynamoDB endpoint, or its proxies to the etcd members.
func (r *chaosRun) tableArgs(slot int, dynamoEndpoint string) []string {
	e := r.etcd
	if e == nil {
		return []string{"-dynamodb-endpoint", dynamoEndpoint}
	}
	if e.slotAddrs[slot] == nil {
		for i, ep := range e.cluster.Endpoints() {
			name := fmt.Sprintf("%s-w%d-m%d", e.name, slot, i)
			addr := r.proxy(name, strings.TrimPrefix(ep, "http://"))
			e.slotProxies[slot] = append(e.slotProxies[slot], name)
			e.slotAddrs[slot] = append(e.slotAddrs[slot], "http://"+addr)
		}
	}
	return []string{"-etcd-endpoints", strings.Join(e.slotAddrs[slot], ",")}
}

// harnessTableArgs are the table flags of the harness's own commands
// (create, check): straight to the members.
func (r *chaosRun) harnessTableArgs() []string {
	if r.etcd == nil {
		return nil
	}
	return []string{"-etcd-endpoints", strings.Join(r.etcd.cluster.Endpoints(), ",")}
}

// toxics adds (or, with attrs nil, removes) toxic name on every proxy of
// worker slot.
func (r *chaosRun) slotToxic(slot int, name, kind, stream string, attrs map[string]any) {
	for _, p := range r.etcd.slotProxies[slot] {
		var err error
		if attrs == nil {
			_, err = r.toxi.call("DELETE", "/proxies/"+p+"/toxics/"+name, nil)
		} else {
			_, err = r.toxi.call("POST", "/proxies/"+p+"/toxics", map[string]any{"name": name, "type": kind, "stream": stream, "attributes": attrs})
		}
		if err != nil {
			r.t.Fatal(err)
		}
	}
}

// etcdCycle injects the faults of the etcd cluster and its links.
func (r *chaosRun) etcdCycle() {
	t := r.t
	e := r.etcd
	ctx := context.Background()

	// 5. kill the etcd leader while the stream is throttled; the cluster
	// elects another, and the member comes back on its data
	r.fault(nil, livecheck.FaultBegin+" throttling")
	r.kinProxy.Reject("GetRecords", 40, 400, "ProvisionedThroughputExceededException")
	leader, err := e.cluster.WaitLeader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r.fault(nil, livecheck.FaultBegin+" etcd leader kill")
	e.cluster.Kill(leader)
	killed := time.Now()
	next, err := e.cluster.WaitLeader(ctx, 15*time.Second)
	if err != nil {
		t.Fatalf("no new etcd leader after killing %s: %v", e.cluster.Names[leader], err)
	}
	r.logf("killed the etcd leader %s; %s leads after %v", e.cluster.Names[leader], e.cluster.Names[next], time.Since(killed).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // two members serve meanwhile
	if err := e.cluster.Start(leader, true); err != nil {
		t.Fatalf("restarting etcd member %s: %v", e.cluster.Names[leader], err)
	}
	r.fault(nil, livecheck.FaultEnd+" etcd leader kill")
	r.kinProxy.Clear()
	r.fault(nil, livecheck.FaultEnd+" throttling")
	r.logf("etcd member %s is back", e.cluster.Names[leader])

	// 6. partition a follower from its peers (its peer proxy refuses and
	// drops every connection); its clients' calls go to the others
	leader, err = e.cluster.WaitLeader(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := (leader + 1) % 3
	r.fault(nil, livecheck.FaultBegin+" etcd member partition")
	if _, err := r.toxi.call("POST", "/proxies/"+e.peerProxy[m], map[string]any{"enabled": false}); err != nil {
		t.Fatal(err)
	}
	r.logf("partitioned etcd member %s from its peers", e.cluster.Names[m])
	time.Sleep(chaosLease + time.Second) // the fault lasts this long
	if _, err := r.toxi.call("POST", "/proxies/"+e.peerProxy[m], map[string]any{"enabled": true}); err != nil {
		t.Fatal(err)
	}
	r.fault(nil, livecheck.FaultEnd+" etcd member partition")
	r.logf("healed etcd member %s's partition", e.cluster.Names[m])

	// 7. slow, then cut, worker 1's links to every member
	p := r.slots[1]
	r.fault(p, livecheck.FaultBegin+" latency")
	r.slotToxic(1, "slow", "latency", "downstream", map[string]any{"latency": 600, "jitter": 500})
	r.logf("slowed %s's links to etcd (600±500 ms)", p.owner)
	time.Sleep(4 * time.Second) // the fault lasts this long
	r.slotToxic(1, "slow", "", "", nil)
	r.fault(p, livecheck.FaultEnd+" latency")
	r.waitHolding(p)
	keys, at := r.actingNow(p), r.harness.Now()
	r.fault(p, livecheck.FaultBegin+" cut")
	r.slotToxic(1, "cut", "timeout", "upstream", map[string]any{"timeout": 0})
	r.logf("cut %s from etcd", p.owner)
	r.waitActedElsewhere("takeover from cut-off "+p.owner, keys, p.pid, at, 30*time.Second)
	r.waitPast(at, chaosLease+time.Second)
	r.slotToxic(1, "cut", "", "", nil)
	r.fault(p, livecheck.FaultEnd+" cut")
	r.logf("healed %s's links", p.owner)
}

// logFigures logs the figures of the targets table: planned-move
// gaps and failovers after SIGKILL.
func (r *chaosRun) logFigures(rep *livecheck.Report) {
	f := rep.Measure
	var killMax, killMean time.Duration
	n := 0
	for _, k := range rep.Kills {
		killMax = max(killMax, k.Max)
		killMean += k.Mean
		n++
	}
	if n > 0 {
		killMean /= time.Duration(n)
	}
	r.t.Logf("figures (%s, lease %v): planned moves %d, gap p50 %v p99 %v max %v; failovers %d, gap p50 %v p99 %v; after SIGKILL (%d kills): max %v (%.2f D), mean %v",
		r.storeKind(), chaosLease, len(f.HandoffGaps), check.Percentile(f.HandoffGaps, 50), check.Percentile(f.HandoffGaps, 99), check.Percentile(f.HandoffGaps, 100),
		len(f.Failovers), check.Percentile(f.Failovers, 50), check.Percentile(f.Failovers, 99), n, killMax, killMax.Seconds()/chaosLease.Seconds(), killMean)
}
