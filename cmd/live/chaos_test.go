package main

// The live chaos test: real worker processes built from cmd/live, against
// the local AWS-compatible servers (dynalite, kinesalite), with a producer,
// under injected faults; then `live check` over every worker's history.
//
//	SHARDLEASE_CHAOS=short  one chaos cycle per initial position (make test-chaos, ~1.5 min)
//	SHARDLEASE_CHAOS=long   four cycles per initial position (make chaos)
//
// Each sub-test is one configuration: LATEST, TRIM_HORIZON, LATEST with
// enhanced fan-out and TRIM_HORIZON with the table in etcd, all of the
// default renewal (auto: by session on these new tables), and TRIM_HORIZON
// renewing per lease (-renewal lease).
//
// Faults: SIGKILL and restart (same and new owner ids), SIGSTOP past the
// lease and SIGCONT, latency and a cut on one worker's link to the table
// (toxiproxy), throttling and lost replies through an HTTP proxy in front
// of the table and the stream (internal/localaws.FaultProxy), and shard
// splits and merges while records flow.
//
// kinesalite never returns ChildShards in GetRecords, so the engine learns
// children from ListShards here (the ChildShards path is covered by the
// kinesisstream contract tests through the FaultProxy). kinesalite also
// reports MillisBehindLatest as 0 on open shards, so that metric is flat.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/cmd/live/internal/history"
	"github.com/shardlease/shardlease/cmd/live/internal/livecheck"
	"github.com/shardlease/shardlease/cmd/live/internal/shield"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/engine/kinesisstream"
	"github.com/shardlease/shardlease/internal/efoserver"
	"github.com/shardlease/shardlease/internal/localaws"
	"github.com/shardlease/shardlease/sim/check"
	"github.com/shardlease/shardlease/sim/trace"
)

const chaosEnv = "SHARDLEASE_CHAOS"

// chaos timings: short leases so a cycle takes seconds.
const (
	chaosLease = 3 * time.Second
	chaosRenew = time.Second
	// quietPhase is how long the fleet runs undisturbed before the first
	// fault, with no alert pending or firing.
	quietPhase = 8 * time.Second
)

func TestLiveChaos(t *testing.T) {
	mode := os.Getenv(chaosEnv)
	switch mode {
	case "":
		t.Skip("live chaos test skipped: it runs worker processes against local AWS-compatible servers. " +
			"Run `make test-chaos` (short form) or `make chaos` (long form), or start the servers with " +
			"`scripts/localaws.sh start` and set SHARDLEASE_CHAOS=short|long and SHARDLEASE_LOCALAWS=1")
	case "short", "long":
	default:
		t.Fatalf("%s=%q: want short or long", chaosEnv, mode)
	}
	// Asked for explicitly: a missing server fails instead of skipping.
	t.Setenv(localaws.EnvRequire, "1")
	ddb := localaws.DynamoDB(t)
	kin := localaws.Kinesis(t)
	toxi := startToxiproxy(t)
	prom := startPrometheus(t)
	bin := buildLive(t)
	etcdBin := buildEtcdMember(t) // chaos_etcd_test.go
	for _, tc := range []struct {
		name, pos string
		fanOut    bool
		etcd      bool   // the lease table on a 3-member etcd cluster
		renewal   string // the workers' -renewal ("": the default, auto: by session on these new tables)
	}{
		{engine.Latest, engine.Latest, false, false, ""},
		{engine.TrimHorizon, engine.TrimHorizon, false, false, ""},
		{"FAN_OUT_" + engine.Latest, engine.Latest, true, false, ""},
		{"ETCD_" + engine.TrimHorizon, engine.TrimHorizon, false, true, ""},
		{"LEASE_" + engine.TrimHorizon, engine.TrimHorizon, false, false, engine.RenewalPerLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newChaosRun(t, mode, tc.pos, bin, ddb, kin, toxi, tc.fanOut)
			r.renewal = tc.renewal
			if tc.etcd {
				r.setupEtcd(etcdBin)
			}
			r.watch = &promWatch{prom: prom, job: "chaos-" + strings.ToLower(tc.name)}
			var addrs []string
			for range 4 {
				r.ports = append(r.ports, freePort(t))
				addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", r.ports[len(r.ports)-1]))
			}
			prom.setTargets(t, r.watch.job, addrs)
			r.run()
		})
	}
}

// ---- toxiproxy ----

type toxiproxy struct {
	api string // base URL of the REST API
}

func toxiproxyBinary(t *testing.T) string {
	if p := os.Getenv("TOXIPROXY_SERVER"); p != "" {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env GOPATH: %v", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(out)), "bin")
	for _, name := range []string{"toxiproxy-server", "server"} {
		p := filepath.Join(bin, name)
		if v, err := exec.Command(p, "-version").CombinedOutput(); err == nil && strings.Contains(string(v), "toxiproxy") {
			return p
		}
	}
	t.Fatalf("toxiproxy not found: install it with `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0` " +
		"(make test-chaos does), or set TOXIPROXY_SERVER to its path")
	return ""
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startToxiproxy(t *testing.T) *toxiproxy {
	bin := toxiproxyBinary(t)
	port := freePort(t)
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	var logBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting toxiproxy: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	tp := &toxiproxy{api: fmt.Sprintf("http://127.0.0.1:%d", port)}
	waitFor(t, "toxiproxy API", 15*time.Second, func() (bool, string) {
		resp, err := http.Get(tp.api + "/version")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return tp
}

func (tp *toxiproxy) call(method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, tp.api+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("toxiproxy %s %s: %s: %s", method, path, resp.Status, b)
	}
	out := map[string]any{}
	_ = json.Unmarshal(b, &out)
	return out, nil
}

// newShield puts a shield (see package shield) in front of a local
// server: killed workers and calls cut by their deadline would crash it.
func newShield(t *testing.T, upstream string) string {
	h, err := shield.New(upstream)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// ---- the live binary ----

func buildLive(t *testing.T) string {
	dir := t.TempDir()
	bin := filepath.Join(dir, "live")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/live: %v\n%s", err, out)
	}
	return bin
}

// ---- one run ----

type workerProc struct {
	slot  int
	owner string
	cmd   *exec.Cmd
	pid   int
	done  chan struct{}
	err   error
	log   string
	// exited is when cmd.Wait returned (set before done is closed)
	exited time.Time
}

type chaosRun struct {
	t        *testing.T
	mode     string
	pos      string
	bin      string
	dir      string
	table    string
	stream   string
	env      []string // for processes that talk to the servers directly
	ddbProxy *localaws.FaultProxy
	kinProxy *localaws.FaultProxy
	toxi     *toxiproxy
	toxiName string
	toxiAddr string
	harness  *history.Recorder
	kin      *kinesis.Client
	ks       *kinesisstream.Stream
	store    engine.LeaseStore // the harness's own view of the table
	etcd     *etcdChaos        // etcd runs: the cluster (chaos_etcd_test.go)
	efo      *efoserver.Server // fan-out runs: the workers' Kinesis endpoint
	renewal  string            // the workers' -renewal ("": per lease)
	kinURL   string            // the workers' Kinesis endpoint
	slots    []*workerProc
	producer *exec.Cmd
	prodDone chan struct{}
	prodErr  error
	start    time.Time
	initial  []string // the stream's shards at creation

	watch *promWatch // the Prometheus server's view of this run
	ports []int      // each worker slot's metrics port, kept across restarts

	pollMu      sync.Mutex
	polls       int
	regressions []string
}

func newChaosRun(t *testing.T, mode, pos, bin string, ddb, kin localaws.Target, toxi *toxiproxy, fanOut bool) *chaosRun {
	prefix := "shardlease-chaos-" + strings.ToLower(pos) + "-"
	if fanOut {
		prefix += "fan-out-"
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	r := &chaosRun{t: t, mode: mode, pos: pos, bin: bin, dir: dir, toxi: toxi, start: time.Now(),
		table: localaws.UniqueName(t, "chaos-leases"), stream: localaws.UniqueName(t, "chaos")}
	t.Logf("history and logs in %s", dir)
	t.Cleanup(func() {
		if !t.Failed() && os.Getenv("SHARDLEASE_CHAOS_KEEP") == "" {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("kept the histories and logs of the run in %s", dir)
		}
	})
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL") && !strings.HasPrefix(kv, "LIVE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION="+kin.Config.Region)
	ddb = ddb.WithEndpoint(newShield(t, ddb.Endpoint))
	kin = kin.WithEndpoint(newShield(t, kin.Endpoint))
	r.env = append(append([]string(nil), env...), "AWS_ENDPOINT_URL_DYNAMODB="+ddb.Endpoint, "AWS_ENDPOINT_URL_KINESIS="+kin.Endpoint)
	r.ddbProxy = localaws.NewFaultProxy(t, ddb.Endpoint)
	r.kinProxy = localaws.NewFaultProxy(t, kin.Endpoint)
	r.kin = kinesis.NewFromConfig(kin.Config)
	r.ks = kinesisstream.New(r.kin)
	r.store = dynamostore.New(dynamodb.NewFromConfig(ddb.Config), r.table)
	r.kinURL = r.kinProxy.URL
	if fanOut {
		r.startFanOutServer()
	}

	// one worker's link to the table goes through toxiproxy
	r.toxiName = "table-" + r.table // unique: the runs share the toxiproxy
	upstream := strings.TrimPrefix(r.ddbProxy.URL, "http://")
	p, err := toxi.call("POST", "/proxies", map[string]any{"name": r.toxiName, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true})
	if err != nil {
		t.Fatal(err)
	}
	r.toxiAddr, _ = p["listen"].(string)
	if r.toxiAddr == "" {
		t.Fatalf("toxiproxy did not say where proxy %s listens: %v", r.toxiName, p)
	}
	t.Cleanup(func() { _, _ = toxi.call("DELETE", "/proxies/"+r.toxiName, nil) })

	r.harness, err = history.Create(dir, history.Options{Role: "harness", Owner: "harness", Worker: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.harness.Close() })
	return r
}

func (r *chaosRun) logf(format string, a ...any) {
	r.t.Helper()
	r.t.Logf("%6.1fs %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, a...))
}

func (r *chaosRun) phase(name string) {
	r.t.Helper()
	r.harness.WriteAs(trace.Record{Kind: trace.KindPhase, Worker: -1, Proc: -1, Reason: name})
	r.logf("phase: %s", name)
}

// fault records a fault on p (nil: every process).
func (r *chaosRun) fault(p *workerProc, reason string) {
	rec := trace.Record{Kind: trace.KindFault, Worker: -1, Proc: -1, Reason: reason}
	if p != nil {
		rec.Owner, rec.Proc, rec.Worker = p.owner, int32(p.pid), int32(p.slot)
	}
	r.harness.WriteAs(rec)
}

func (r *chaosRun) exec(args ...string) (string, error) {
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (r *chaosRun) startWorker(slot int, owner string) *workerProc {
	r.t.Helper()
	endpoint := r.ddbProxy.URL
	if slot == 1 {
		endpoint = "http://" + r.toxiAddr
	}
	args := []string{"run", "-stream", r.stream, "-table", r.table, "-owner", owner, "-worker", strconv.Itoa(slot),
		"-store", r.storeKind()}
	args = append(args, r.tableArgs(slot, endpoint)...)
	args = append(args,
		"-record", r.dir, "-metrics-addr", fmt.Sprintf("127.0.0.1:%d", r.ports[slot]), "-initial-position", r.pos,
		"-lease-duration", chaosLease.String(), "-renew-interval", chaosRenew.String(),
		"-shard-sync-interval", "2s", "-idle-time-between-reads", "250ms",
		"-checkpoint-every", "40", "-checkpoint-interval", "1s", "-fail-every", "23", "-shutdown-timeout", "15s",
		"-kinesis-endpoint", r.kinURL)
	if r.efo != nil {
		args = append(args, "-consumer", "fan-out", "-consumer-name", "chaos-app")
	}
	if r.renewal != "" {
		args = append(args, "-renewal", r.renewal)
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.env
	logPath := filepath.Join(r.dir, fmt.Sprintf("log-worker-%s-%d.txt", owner, time.Now().UnixNano()))
	lf, err := os.Create(logPath)
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting worker %s: %v", owner, err)
	}
	p := &workerProc{slot: slot, owner: owner, cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		p.exited = time.Now()
		lf.Close()
		close(p.done)
	}()
	r.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(p.pid, syscall.SIGCONT)
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			<-p.done
		}
	})
	for len(r.slots) <= slot {
		r.slots = append(r.slots, nil)
	}
	r.slots[slot] = p
	r.logf("started worker %s (slot %d, pid %d)", owner, slot, p.pid)
	return p
}

func (r *chaosRun) kill(p *workerProc) {
	r.t.Helper()
	r.fault(p, livecheck.FaultKill)
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		r.t.Fatalf("worker %s (pid %d) did not die of SIGKILL within 10s", p.owner, p.pid)
	}
	r.harness.WriteAs(trace.Record{Kind: trace.KindProcStop, Owner: p.owner, Proc: int32(p.pid), Worker: int32(p.slot), Reason: "crash"})
	r.logf("killed %s (pid %d)", p.owner, p.pid)
}

// records reads every history written so far (raw: Proc is the OS pid),
// in time order: conditions that follow a shard from holder to holder read
// the processes' files interleaved as they happened.
func (r *chaosRun) records() []trace.Record {
	files, err := history.ReadDirs(r.dir)
	if err != nil {
		return nil
	}
	var out []trace.Record
	for _, f := range files {
		out = append(out, f.Records...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

// acting returns the keys p is acting on, from its history.
func (r *chaosRun) acting(p *workerProc) []string {
	on := map[string]bool{}
	for _, x := range r.records() {
		if x.Proc != int32(p.pid) || x.Owner != p.owner {
			continue
		}
		switch x.Kind {
		case trace.Acting:
			on[x.Key] = true
		case trace.LeaseLost, trace.LeaseReleased, trace.StoppedActing:
			delete(on, x.Key)
		}
	}
	keys := make([]string, 0, len(on))
	for k := range on {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// actingNow returns the keys p acts on (acting) whose rows it still holds
// unfinished in the table: a shard it has just read to its end (a parent
// of the split before) needs no takeover, though its history may not show
// the release yet.
func (r *chaosRun) actingNow(p *workerProc) []string {
	keys := r.acting(p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := r.store.ListLeases(ctx, true)
	if err != nil {
		return keys
	}
	held := map[string]bool{}
	for _, row := range l.Leases {
		if row.Owner == p.owner && !row.Checkpoint.IsShardEnd() {
			held[row.Key] = true
		}
	}
	var out []string
	for _, k := range keys {
		if held[k] {
			out = append(out, k)
		}
	}
	return out
}

// waitActedElsewhere waits until another process acts on each of keys
// after since.
func (r *chaosRun) waitActedElsewhere(what string, keys []string, notPid int, since time.Duration, bound time.Duration) {
	r.t.Helper()
	waitFor(r.t, what, bound, func() (bool, string) {
		got := map[string]bool{}
		for _, x := range r.records() {
			if x.Kind == trace.Acting && x.Proc != int32(notPid) && x.T > since {
				got[x.Key] = true
			}
		}
		var missing []string
		for _, k := range keys {
			if !got[k] {
				missing = append(missing, k)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not yet acted on elsewhere: %v", missing)
	})
}

// waitHolding waits until p acts on a shard (balancing gives it one), so
// that a fault on p hits a holder.
func (r *chaosRun) waitHolding(p *workerProc) {
	r.t.Helper()
	waitFor(r.t, p.owner+" acting on a shard", 30*time.Second, func() (bool, string) {
		return len(r.acting(p)) > 0, "not acting on any shard yet"
	})
}

// waitPast waits until d has passed since the record time at.
func (r *chaosRun) waitPast(at, d time.Duration) {
	if left := at + d - r.harness.Now(); left > 0 {
		time.Sleep(left) // the fault lasts at least this long
	}
}

// pollTable reads the table (strongly consistent) until ctx ends and
// notes every checkpoint that goes back on a row that was not re-created.
func (r *chaosRun) pollTable(ctx context.Context) {
	type seen struct {
		counter int64
		cp      engine.Checkpoint
	}
	last := map[string]seen{}
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		l, err := r.store.ListLeases(cctx, true)
		cancel()
		if err != nil {
			continue
		}
		r.pollMu.Lock()
		r.polls++
		for _, row := range l.Leases {
			if s, ok := last[row.Key]; ok && row.Counter >= s.counter && row.Checkpoint.Compare(s.cp) < 0 {
				r.regressions = append(r.regressions, fmt.Sprintf("%s: counter %d checkpoint %s after counter %d checkpoint %s",
					row.Key, row.Counter, row.Checkpoint, s.counter, s.cp))
			}
			last[row.Key] = seen{row.Counter, row.Checkpoint}
		}
		r.pollMu.Unlock()
	}
}

func (r *chaosRun) openShards() []engine.Shard {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := r.ks.ListShards(ctx, r.stream)
	if err != nil {
		r.t.Fatalf("listing shards: %v", err)
	}
	var open []engine.Shard
	for _, s := range list {
		if !s.Closed() {
			open = append(open, s)
		}
	}
	sort.Slice(open, func(i, j int) bool {
		return engine.CompareSequences(open[i].StartingHashKey, open[j].StartingHashKey) < 0
	})
	return open
}

// adjacentPair returns two open shards whose hash ranges touch.
func adjacentPair(open []engine.Shard) (a, b engine.Shard, ok bool) {
	for _, x := range open {
		for _, y := range open {
			if x.ID != y.ID && hashNext(x.EndingHashKey) == y.StartingHashKey {
				return x, y, true
			}
		}
	}
	return a, b, false
}

func hashNext(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < '9' {
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}

func (r *chaosRun) reshard(op string, shards ...string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kids, err := reshard(ctx, r.kin, r.ks, r.stream, op, shards, r.harness)
	if err != nil {
		r.t.Fatalf("%s %v: %v", op, shards, err)
	}
	var ids []string
	for _, k := range kids {
		ids = append(ids, k.ID)
	}
	r.fault(nil, fmt.Sprintf("%s %s -> %s", op, strings.Join(shards, "+"), strings.Join(ids, ",")))
	r.logf("%s %v -> %v", op, shards, ids)
}

func (r *chaosRun) startProducer() {
	r.t.Helper()
	args, what := []string{"produce", "-stream", r.stream, "-rate", "120", "-record", r.dir}, "120 records/s"
	if r.pos == engine.TrimHorizon {
		// KPL aggregates of up to 4 user records: live check follows
		// each user record at (sequence, sub-sequence)
		args, what = append(args, "-aggregate", "4"), "120 user records/s in KPL aggregates of up to 4"
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.env
	lf, err := os.Create(filepath.Join(r.dir, "log-producer.txt"))
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting the producer: %v", err)
	}
	r.producer = cmd
	r.prodDone = make(chan struct{})
	go func() { r.prodErr = cmd.Wait(); lf.Close(); close(r.prodDone) }()
	r.t.Cleanup(func() {
		select {
		case <-r.prodDone:
		default:
			_ = cmd.Process.Kill()
			<-r.prodDone
		}
	})
	r.logf("producer started (pid %d, %s)", cmd.Process.Pid, what)
}

func (r *chaosRun) stopProducer() {
	r.t.Helper()
	_ = r.producer.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.prodDone:
	case <-time.After(20 * time.Second):
		r.t.Fatal("the producer did not stop within 20s of SIGTERM")
	}
	if r.prodErr != nil {
		r.t.Fatalf("the producer failed: %v", r.prodErr)
	}
	r.logf("producer stopped")
}

// drained reports whether every record the producer put has reached a
// processor.
func (r *chaosRun) drained() (bool, string) {
	puts := map[string][]string{}
	ranges := map[string][][2]string{}
	for _, x := range r.records() {
		switch {
		case x.Kind == trace.KindPut:
			puts[x.Key] = append(puts[x.Key], x.First)
		case x.Kind == trace.KindReceived && x.Count > 0:
			ranges[x.Key] = append(ranges[x.Key], [2]string{x.First, x.Last})
		}
	}
	missing, total := 0, 0
	for key, ps := range puts {
		rs := ranges[key]
		sort.Slice(rs, func(i, j int) bool { return engine.CompareSequences(rs[i][0], rs[j][0]) < 0 })
		for _, s := range ps {
			total++
			i := sort.Search(len(rs), func(i int) bool { return engine.CompareSequences(rs[i][0], s) > 0 })
			covered := false
			for j := i - 1; j >= 0 && j >= i-64; j-- {
				if engine.CompareSequences(s, rs[j][1]) <= 0 {
					covered = true
					break
				}
			}
			if !covered {
				missing++
			}
		}
	}
	return total > 0 && missing == 0, fmt.Sprintf("%d of %d records put not yet received", missing, total)
}

// settled reports whether every unfinished lease is held by a live worker
// that acts on it and has received the last record put into its shard.
func (r *chaosRun) settled() (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := r.store.ListLeases(ctx, true)
	if err != nil {
		return false, err.Error()
	}
	pids := map[string]int32{}
	for _, p := range r.slots {
		pids[p.owner] = int32(p.pid)
	}
	recs := r.records()
	lastPut := map[string]string{}
	for _, x := range recs {
		if x.Kind == trace.KindPut && (lastPut[x.Key] == "" || engine.CompareSequences(x.First, lastPut[x.Key]) > 0) {
			lastPut[x.Key] = x.First
		}
	}
	for _, row := range l.Leases {
		if row.Checkpoint.IsShardEnd() {
			continue
		}
		pid, ok := pids[row.Owner]
		if !ok {
			return false, fmt.Sprintf("%s is held by %q, not a live worker", row.Key, row.Owner)
		}
		stored := lastPut[row.Key] == "" || (!row.Checkpoint.IsSentinel() && engine.CompareSequences(row.Checkpoint.Sequence, lastPut[row.Key]) >= 0)
		acting, caughtUp := false, stored
		for _, x := range recs {
			if x.Proc != pid || x.Key != row.Key {
				continue
			}
			switch x.Kind {
			case trace.LeaseAcquired:
				acting, caughtUp = false, stored
			case trace.Acting:
				acting = true
			case trace.KindReceived:
				if x.Count > 0 && acting && engine.CompareSequences(x.Last, lastPut[row.Key]) >= 0 {
					caughtUp = true
				}
			}
		}
		if !acting || !caughtUp {
			return false, fmt.Sprintf("%s: holder %s acting %v, caught up %v", row.Key, row.Owner, acting, caughtUp)
		}
	}
	return true, ""
}

var metricsURL = regexp.MustCompile(`url=(http://[0-9.:]+/metrics)`)

// scrapeMetrics reads p's metrics endpoint once.
func (r *chaosRun) scrapeMetrics(p *workerProc) {
	r.t.Helper()
	var url string
	waitFor(r.t, "metrics endpoint of "+p.owner, 15*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(p.log)
		if m := metricsURL.FindSubmatch(b); m != nil {
			url = string(m[1])
			return true, ""
		}
		return false, "no metrics line in the log yet"
	})
	resp, err := http.Get(url)
	if err != nil {
		r.t.Fatalf("scraping %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"shardlease_leases_held", "shardlease_renew_duration_seconds", "shardlease_records_processed_total", "shardlease_checkpoints_total"} {
		if !bytes.Contains(b, []byte(name)) {
			r.t.Errorf("metrics of %s lack %s", p.owner, name)
		}
	}
	r.logf("metrics endpoint of %s answers (%d bytes)", p.owner, len(b))
}

func (r *chaosRun) run() {
	t := r.t
	out, err := r.exec(append([]string{"create", "-table", r.table, "-stream", r.stream, "-shards", "4", "-store", r.storeKind()}, r.harnessTableArgs()...)...)
	if err != nil {
		t.Fatalf("live create: %v\n%s", err, out)
	}
	for _, s := range r.openShards() {
		r.initial = append(r.initial, s.ID)
	}
	pollCtx, stopPoll := context.WithCancel(context.Background())
	pollDone := make(chan struct{})
	go func() { r.pollTable(pollCtx); close(pollDone) }()
	defer func() { stopPoll(); <-pollDone }()

	r.phase("start")
	for slot, owner := range []string{"w0", "w1", "w2", "w3"} {
		r.startWorker(slot, owner)
	}
	lastStart := time.Now()
	r.scrapeMetrics(r.slots[0])
	// Balancing gives every worker a shard (4 and 4): from then on no
	// lease moves until the faults begin.
	waitFor(t, "every worker acting on a shard", 40*time.Second, func() (bool, string) {
		var idle []string
		for _, p := range r.slots {
			if len(r.acting(p)) == 0 {
				idle = append(idle, p.owner)
			}
		}
		return len(idle) == 0, fmt.Sprintf("not acting on any shard yet: %v", idle)
	})
	// a figure, not a bound: the fresh fleet's start, to every worker acting
	r.logf("%s: fleet balanced (every worker acting on a shard) %v after its last worker started", t.Name(), time.Since(lastStart).Round(10*time.Millisecond))
	// A lease at LATEST holds no position until its first checkpoint, and
	// records put before its first iterator are not promised: produce once
	// each initial shard's current holder reads it; fault once each has a
	// checkpoint. (A LATEST lease that changes hands before its first
	// checkpoint restarts at the new owner's LATEST: see the README.)
	waitFor(t, "an iterator on every initial shard by its holder", 30*time.Second, func() (bool, string) {
		holder := map[string]int32{}
		got := map[string]bool{}
		for _, x := range r.records() {
			switch {
			case x.Kind == trace.Acting:
				holder[x.Key] = x.Proc
				got[x.Key] = false
			case x.Kind == trace.KindReply && (x.Op == engine.OpGetIterator || x.Op == engine.OpSubscribe) && x.Outcome == trace.OutcomeOK && holder[x.Key] == x.Proc:
				got[x.Key] = true
			}
		}
		var missing []string
		for _, s := range r.initial {
			if !got[s] {
				missing = append(missing, s)
			}
		}
		return len(missing) == 0, fmt.Sprintf("no iterator yet on %v", missing)
	})
	r.startProducer()
	waitFor(t, "a checkpoint on every initial shard", 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l, err := r.store.ListLeases(ctx, true)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, row := range l.Leases {
			if !row.Checkpoint.IsSentinel() {
				n++
			}
		}
		return n >= len(r.initial), fmt.Sprintf("%d of %d initial shards checkpointed", n, len(r.initial))
	})

	// The quiet phase: a steady fleet, records flowing, every shard held;
	// Prometheus evaluates the rules every second and no alert may fire.
	r.watch.scraping(t, len(r.slots))
	r.phase("quiet")
	time.Sleep(quietPhase) // the quiet phase lasts this long
	pending, without := r.watch.quiet(t, quietPhase)
	r.logf("no alert fired in the %v quiet phase (Prometheus at %s, job %s; pending: [%s]; shards without an owner at most %s)",
		quietPhase, r.watch.prom.url, r.watch.job, pending, without)

	cycles := 1
	if r.mode == "long" {
		cycles = 4
	}
	for c := 0; c < cycles; c++ {
		r.phase(fmt.Sprintf("chaos %d", c+1))
		r.cycle(c)
	}

	r.phase("heal")
	r.ddbProxy.Clear()
	r.kinProxy.Clear()
	r.stopProducer()
	waitFor(t, "every record put received", 90*time.Second, r.drained)
	// A lease taken (or stolen for balance) just before the end is not
	// acted on for a lease duration; its previous holder could not
	// checkpoint its tail. Stop once every lease is held by a worker that
	// has caught up with its shard, so the shutdown checkpoints cover all.
	waitFor(t, "every lease held by a worker that has read its shard to the end", 60*time.Second, r.settled)
	r.phase("stop")
	termAt := time.Now()
	for _, p := range r.slots {
		_ = syscall.Kill(p.pid, syscall.SIGCONT)
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
	for _, p := range r.slots {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("worker %s (pid %d) did not stop within 30s of SIGTERM", p.owner, p.pid)
		}
		if p.err != nil {
			b, _ := os.ReadFile(p.log)
			t.Fatalf("worker %s (pid %d) did not exit 0 after SIGTERM: %v\n%s", p.owner, p.pid, p.err, tail(string(b), 20))
		}
	}
	// figures, not bounds: from SIGTERM to each worker's exit (every
	// lease released, the assigner row included)
	var exits []string
	for _, p := range r.slots {
		exits = append(exits, fmt.Sprintf("%s %v", p.owner, p.exited.Sub(termAt).Round(time.Millisecond)))
	}
	r.logf("%s: every worker stopped gracefully (exit 0); SIGTERM to exit: %s", t.Name(), strings.Join(exits, ", "))
	stopPoll()
	<-pollDone
	r.verify()
}

// cycle injects one round of every fault, in turn, while records flow.
func (r *chaosRun) cycle(c int) {
	t := r.t
	// 1. SIGKILL, restart under the same owner id: it resumes its leases.
	p := r.slots[0]
	r.waitHolding(p)
	keys, at := r.actingNow(p), r.harness.Now()
	r.kill(p)
	r.startWorker(0, p.owner)
	r.waitActedElsewhere("failover after killing "+p.owner, keys, p.pid, at, 30*time.Second)

	// 2. SIGKILL, restart under a new owner id: others wait out the lease.
	// Prometheus sees the ownership gap: its alert goes pending (or
	// firing) after the kill, and resolves after the failover.
	p = r.slots[2]
	r.waitHolding(p)
	keys, at = r.actingNow(p), r.harness.Now()
	killed := time.Now()
	r.kill(p)
	r.startWorker(2, fmt.Sprintf("w2-%d", c+1))
	r.waitActedElsewhere("failover after killing "+p.owner, keys, p.pid, at, 30*time.Second)
	states := r.watch.gapAlerted(t, killed)
	r.watch.gapResolved(t)
	r.logf("ShardleaseOwnershipGap went %s after killing %s, and resolved", states, p.owner)

	// 3. split an open shard while records flow
	open := r.openShards()
	r.reshard("split", open[c%len(open)].ID)

	// 4. SIGSTOP past the lease, then SIGCONT: the paused worker must not
	// act on what it lost.
	p = r.slots[3]
	r.waitHolding(p)
	keys, at = r.actingNow(p), r.harness.Now()
	r.fault(p, livecheck.FaultStop)
	_ = syscall.Kill(p.pid, syscall.SIGSTOP)
	r.logf("paused %s (pid %d), acting on %v", p.owner, p.pid, keys)
	r.waitActedElsewhere("takeover from paused "+p.owner, keys, p.pid, at, 30*time.Second)
	r.waitPast(at, chaosLease+time.Second) // past the lease in any case
	resumed := r.harness.Now()             // before SIGCONT: the worker acts at once
	r.harness.WriteAs(trace.Record{T: resumed, Kind: trace.KindFault, Reason: livecheck.FaultCont, Owner: p.owner, Proc: int32(p.pid), Worker: int32(p.slot)})
	_ = syscall.Kill(p.pid, syscall.SIGCONT)
	r.logf("resumed %s", p.owner)
	waitFor(t, p.owner+" notices the leases it lost while paused", 15*time.Second, func() (bool, string) {
		ended := map[string]bool{}
		for _, x := range r.records() {
			if x.Proc == int32(p.pid) && x.T >= resumed && (x.Kind == trace.LeaseLost || x.Kind == trace.StoppedActing) {
				ended[x.Key] = true
			}
		}
		var missing []string
		for _, k := range keys {
			if !ended[k] {
				missing = append(missing, k)
			}
		}
		return len(missing) == 0, fmt.Sprintf("still holding %v", missing)
	})

	if r.etcd != nil {
		r.etcdCycle() // 5 and 6 for the etcd cluster (chaos_etcd_test.go)
	} else {
		r.tableCycle()
	}

	// 7. merge two adjacent open shards while records flow
	if a, b, ok := adjacentPair(r.openShards()); ok {
		r.reshard("merge", a.ID, b.ID)
	} else {
		t.Fatalf("no two adjacent open shards to merge")
	}
	// let the children of this cycle be taken and read before the next
	time.Sleep(2 * time.Second) // records flow meanwhile
}

// tableCycle injects the faults of the DynamoDB table's links.
func (r *chaosRun) tableCycle() {
	t := r.t
	// 5. throttling and lost replies on every worker's link
	r.fault(nil, livecheck.FaultBegin+" throttling")
	// applied, reply lost: the SDK retry meets a failed condition
	r.ddbProxy.FailAfterForward("UpdateItem", 4) // take, renew, checkpoint, release
	r.ddbProxy.FailAfterForward("PutItem", 1)    // create
	r.ddbProxy.Reject("UpdateItem", 30, 400, "ProvisionedThroughputExceededException")
	r.ddbProxy.Reject("PutItem", 3, 400, "ProvisionedThroughputExceededException")
	r.ddbProxy.Reject("Scan", 6, 400, "ProvisionedThroughputExceededException")
	r.ddbProxy.Reject("GetItem", 6, 400, "ProvisionedThroughputExceededException")
	r.kinProxy.Reject("GetRecords", 40, 400, "ProvisionedThroughputExceededException")
	if r.efo != nil {
		// Fan-out: every subscription dropped mid-stream, and the
		// subscriptions that follow refused for a while.
		n := r.efo.Drop("", "InternalFailureException")
		r.efo.RejectSubscribes(8, "LimitExceededException")
		r.logf("dropped %d subscriptions; refusing the next 8 SubscribeToShard calls", n)
	}
	r.logf("throttling the table and the stream")
	time.Sleep(4 * time.Second) // the fault lasts this long
	r.ddbProxy.Clear()
	r.kinProxy.Clear()
	if r.efo != nil {
		r.efo.RejectSubscribes(0, "")
	}
	r.fault(nil, livecheck.FaultEnd+" throttling")

	// 6. slow, then cut, worker 1's link to the table (toxiproxy)
	p := r.slots[1]
	r.fault(p, livecheck.FaultBegin+" latency")
	if _, err := r.toxi.call("POST", "/proxies/"+r.toxiName+"/toxics", map[string]any{"name": "slow", "type": "latency", "stream": "downstream",
		"attributes": map[string]any{"latency": 600, "jitter": 500}}); err != nil {
		t.Fatal(err)
	}
	r.logf("slowed %s's link to the table (600±500 ms)", p.owner)
	time.Sleep(4 * time.Second) // the fault lasts this long
	if _, err := r.toxi.call("DELETE", "/proxies/"+r.toxiName+"/toxics/slow", nil); err != nil {
		t.Fatal(err)
	}
	r.fault(p, livecheck.FaultEnd+" latency")
	r.waitHolding(p)
	keys, at := r.actingNow(p), r.harness.Now()
	r.fault(p, livecheck.FaultBegin+" cut")
	if _, err := r.toxi.call("POST", "/proxies/"+r.toxiName+"/toxics", map[string]any{"name": "cut", "type": "timeout", "stream": "upstream",
		"attributes": map[string]any{"timeout": 0}}); err != nil {
		t.Fatal(err)
	}
	r.logf("cut %s's link to the table", p.owner)
	r.waitActedElsewhere("takeover from cut-off "+p.owner, keys, p.pid, at, 30*time.Second)
	r.waitPast(at, chaosLease+time.Second)
	if _, err := r.toxi.call("DELETE", "/proxies/"+r.toxiName+"/toxics/cut", nil); err != nil {
		t.Fatal(err)
	}
	r.fault(p, livecheck.FaultEnd+" cut")
	r.logf("healed %s's link", p.owner)
}

// startFanOutServer puts the local enhanced fan-out endpoint
// (internal/efoserver) in front of the stream for a fan-out run: the
// workers subscribe to it over HTTP/2 and TLS (its certificate trusted
// through AWS_CA_BUNDLE), every other Kinesis call they make goes on to
// the fault proxy, and the subscriptions read kinesalite. A subscription
// lasts 10 s here (5 minutes on Kinesis), so every lease renews its
// subscription several times in a run.
func (r *chaosRun) startFanOutServer() {
	r.efo = efoserver.New(r.t, efoserver.Options{
		Backend: r.ks, Upstream: r.kinProxy.URL,
		Activation: 500 * time.Millisecond, Lifetime: 10 * time.Second, InUseWindow: 5 * time.Second,
		Heartbeat: time.Second, Poll: 100 * time.Millisecond,
	})
	ca := filepath.Join(r.dir, "efo-ca.pem")
	if err := os.WriteFile(ca, r.efo.CertPEM, 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.env = append(r.env, "AWS_CA_BUNDLE="+ca)
	r.kinURL = r.efo.URL
}

// fanOutFigures reports and checks what a fan-out run did with its
// subscriptions: they were made, renewed and refused, all over HTTP/2.
func (r *chaosRun) fanOutFigures() {
	t := r.t
	by := map[string]int{}
	for _, x := range r.records() {
		if x.Kind == trace.KindReply && x.Op == engine.OpSubscribe {
			by[x.Outcome]++
		}
	}
	t.Logf("fan-out: SubscribeToShard by outcome %v (server: %d calls, by protocol %v)", by, r.efo.Count("SubscribeToShard"), r.efo.Protocols())
	if p := r.efo.Protocols(); len(p) != 1 || p["HTTP/2.0"] == 0 {
		t.Errorf("SubscribeToShard requests by protocol %v, want all over HTTP/2", p)
	}
	if by[trace.OutcomeOK] <= 2*len(r.initial) {
		t.Errorf("%d successful subscriptions for %d initial shards: the subscriptions were not renewed", by[trace.OutcomeOK], len(r.initial))
	}
}

// verify runs `live check` over every history and asserts the figures.
func (r *chaosRun) verify() {
	t := r.t
	jsonPath := filepath.Join(r.dir, "report.json")
	out, err := r.exec(append(append([]string{"check", "-table", r.table, "-stream", r.stream, "-json", jsonPath, "-store", r.storeKind()}, r.harnessTableArgs()...), r.dir)...)
	_ = os.WriteFile(filepath.Join(r.dir, "report.txt"), []byte(out), 0o644)
	t.Logf("live check (%s):\n%s", r.pos, out)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("live check: %v", err)
	}
	b, rerr := os.ReadFile(jsonPath)
	if rerr != nil {
		t.Fatalf("live check wrote no report: %v (%v)", rerr, err)
	}
	var rep livecheck.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	r.pollMu.Lock()
	t.Logf("table polls: %d, checkpoint regressions seen by polling: %d", r.polls, len(r.regressions))
	for _, s := range r.regressions {
		t.Errorf("checkpoint regression seen by polling: %s", s)
	}
	r.pollMu.Unlock()
	if err != nil {
		t.Errorf("live check failed (%v): see the report above", err)
	}
	must := func(ok bool, format string, a ...any) {
		t.Helper()
		if !ok {
			t.Errorf(format, a...)
		}
	}
	must(rep.Produced > 0, "no records produced")
	must(rep.Lost == 0, "%d records lost", rep.Lost)
	must(rep.Uncovered == 0, "%d records not covered by a final checkpoint", rep.Uncovered)
	must(rep.BeforeLatest == 0, "%d records put before the first LATEST iterator (the harness waits for iterators)", rep.BeforeLatest)
	must(rep.DupCauses["other"] == 0, "%d re-deliveries not explained by the last checkpoint or a failed batch", rep.DupCauses["other"])
	must(rep.CheckpointRegressions == 0, "%d checkpoint regressions in the write logs", rep.CheckpointRegressions)
	must(rep.LateWrites == 0, "%d writes landed after their writer lost the lease", rep.LateWrites)
	must(rep.EarlyTakes == 0, "%d takes before the holder's lease ran out: %v", rep.EarlyTakes, rep.EarlyTakeEx)
	must(rep.HealthyLostToOthers == 0, "%d leases of healthy workers lost to another worker's write: %v", rep.HealthyLostToOthers, rep.HealthyLostEx)
	for _, inv := range []string{check.S2, check.S3, check.S4, check.S5, check.S6, livecheck.Lin} {
		must(rep.Invariants[inv] == 0, "%s: %d violations", inv, rep.Invariants[inv])
	}
	t.Logf("Lin: %s", rep.Lin.Info)
	r.logFigures(&rep)
	must(rep.Lin.Ops > 0 && rep.Lin.Scans > 0, "Lin checked %d ops, %d consistent scans: the lease-table history was not recorded", rep.Lin.Ops, rep.Lin.Scans)
	cycles := 1
	if r.mode == "long" {
		cycles = 4
	}
	must(len(rep.Kills) >= 2*cycles, "%d kills recorded, want %d", len(rep.Kills), 2*cycles)
	must(len(rep.Pauses) >= 2*cycles, "%d pauses and cuts recorded, want %d", len(rep.Pauses), 2*cycles)
	for _, p := range rep.Pauses {
		must(p.Zombie == 0, "%s of %s: it acted %d times on leases its own view had expired: %v", p.Kind, p.Who, p.Zombie, p.ZombieEx)
	}
	must(rep.ChildrenSplit > 0, "no child of a split was read")
	must(rep.ChildrenMerge > 0, "no child of a merge was read")
	must(rep.ChildEarly > 0, "no record was put into a child shard before its lease was held: the case was not exercised")
	if r.efo != nil {
		r.fanOutFigures()
	}
	must(rep.ChildEarlyGot == rep.ChildEarly, "%d of %d records put into a child before anyone held its lease were delivered", rep.ChildEarlyGot, rep.ChildEarly)
}

// waitFor polls cond every 200 ms until it holds, or fails t after bound
// with cond's last word. Bounded waits for progress of real processes.
func waitFor(t *testing.T, what string, bound time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(bound)
	var last string
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v: %s", what, bound, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
