package etcdtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Cluster is an etcd cluster whose members run in this process.
type Cluster struct {
	Layout
	Dir     string
	members []*embed.Etcd
}

// Endpoints returns the members' client URLs.
func (c *Cluster) Endpoints() []string { return c.ClientURLs }

// startTimeout bounds the start of a cluster: a few seconds on an idle
// machine, more under a loaded test run.
const startTimeout = 60 * time.Second

// NewCluster starts an n-member cluster with its data under dir and waits
// until it serves.
func NewCluster(dir string, n int) (*Cluster, error) {
	l, err := NewLayout(n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Layout: l, Dir: dir, members: make([]*embed.Etcd, n)}
	// A new cluster is ready only once a quorum is up: start the members
	// together.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c.members[i], errs[i] = StartMember(l.Member(i, dir), startTimeout)
		}(i)
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		c.Close()
		return nil, errStart(failed)
	}
	return c, nil
}

// Close stops every member: the leader first (it hands leadership to a
// live follower at once; stopped last it would wait for followers already
// gone), then the others together.
func (c *Cluster) Close() {
	for i, m := range c.members {
		if m != nil && m.Server.Leader() == m.Server.MemberID() {
			m.Close()
			c.members[i] = nil
		}
	}
	var wg sync.WaitGroup
	for _, m := range c.members {
		if m != nil {
			wg.Add(1)
			go func(m *embed.Etcd) { defer wg.Done(); m.Close() }(m)
		}
	}
	wg.Wait()
}

// Client returns a client of every member, closed when t ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := NewClient(c.Endpoints())
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// NewClient returns a client of endpoints with a short dial timeout and no
// logs.
func NewClient(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd client of %v: %w", endpoints, err)
	}
	return cli, nil
}

// The process's shared cluster (Shared), started on first use.
var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
	sharedDir  string
	prefixSeq  atomic.Int64
)

// Shared returns the test process's 3-member cluster, starting it on first
// use; a cluster that cannot start fails t (never skips it). Tests share
// it: each keeps to a prefix of its own (Prefix). Packages that use it
// call Main from their TestMain, which stops it.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "shardlease-etcdtest-")
		if sharedErr == nil {
			shared, sharedErr = NewCluster(sharedDir, 3)
		}
	})
	if sharedErr != nil {
		t.Fatalf("etcdtest: no etcd cluster for this test: %v", sharedErr)
	}
	return shared
}

// Main runs the tests of m and then stops the shared cluster, if one was
// started, and removes its data. Use it as TestMain(m) { os.Exit(etcdtest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	return code
}

// Prefix returns a key prefix of t's own ("/t/<test name>/<n>/"), unique in
// the process.
func Prefix(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/t/%s/%d/", name, prefixSeq.Add(1))
}

// Context returns a context that ends with t or after a minute.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// StopMember stops member i (the others go on: with three members, a
// quorum remains).
func (c *Cluster) StopMember(i int) {
	if m := c.members[i]; m != nil {
		m.Close()
		c.members[i] = nil
	}
}
