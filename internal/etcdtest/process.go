package etcdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemberPackage is the import path of the member binary (cmd/etcd-member).
const MemberPackage = "github.com/shardlease/shardlease/internal/etcdtest/cmd/etcd-member"

// BuildMember builds the member binary into dir and returns its path.
func BuildMember(dir string) (string, error) {
	bin := filepath.Join(dir, "etcd-member")
	out, err := exec.Command("go", "build", "-o", bin, MemberPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("etcdtest: go build %s: %v\n%s", MemberPackage, err, out)
	}
	return bin, nil
}

// ProcCluster is an etcd cluster whose members are processes of the member
// binary, so that a test can kill one (the leader, say) and start it again
// on its data.
type ProcCluster struct {
	Layout
	// ListenPeerURLs are where the members listen for their peers, when
	// PeerURLs (the addresses the peers use) are proxies in front of them.
	ListenPeerURLs []string
	Bin, Dir       string

	mu    sync.Mutex
	procs []*memberProc
}

type memberProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// NewProcCluster describes a cluster of l's members run from bin, with
// their data and logs under dir; listenPeer (nil: l.PeerURLs) are where
// they listen for peers. Nothing runs until Start or StartAll.
func NewProcCluster(bin, dir string, l Layout, listenPeer []string) *ProcCluster {
	if listenPeer == nil {
		listenPeer = l.PeerURLs
	}
	return &ProcCluster{Layout: l, ListenPeerURLs: listenPeer, Bin: bin, Dir: dir, procs: make([]*memberProc, len(l.Names))}
}

// Endpoints returns the members' client URLs.
func (c *ProcCluster) Endpoints() []string { return c.ClientURLs }

// StartAll starts every member of a new cluster (together: a member is
// ready only once a quorum is up) and waits until all serve.
func (c *ProcCluster) StartAll() error {
	errs := make([]error, len(c.Names))
	var wg sync.WaitGroup
	for i := range c.Names {
		wg.Add(1)
		go func(i int) { defer wg.Done(); errs[i] = c.Start(i, false) }(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return err
	}
	return nil
}

// Start starts member i (existing: again, on its data, in the cluster that
// formed) and waits until it serves.
func (c *ProcCluster) Start(i int, existing bool) error {
	m := c.Member(i, c.Dir)
	args := []string{"-name", m.Name, "-data-dir", m.Dir, "-client-url", m.ClientURL, "-peer-url", m.PeerURL,
		"-listen-peer-url", c.ListenPeerURLs[i], "-initial-cluster", c.InitialCluster, "-token", c.Token, "-log", m.LogPath}
	if existing {
		args = append(args, "-existing")
	}
	cmd := exec.Command(c.Bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	errLog, err := os.OpenFile(filepath.Join(c.Dir, m.Name+".stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stderr = errLog
	if err := cmd.Start(); err != nil {
		errLog.Close()
		return fmt.Errorf("etcdtest: start member %s: %w", m.Name, err)
	}
	p := &memberProc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready" && !ok {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	go func() { _ = cmd.Wait(); errLog.Close(); close(p.done) }()
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
	select {
	case ok := <-ready:
		if ok {
			return nil
		}
		return fmt.Errorf("etcdtest: member %s exited before it was ready (see %s)", m.Name, filepath.Join(c.Dir, m.Name+".stderr"))
	case <-time.After(startTimeout):
		c.Kill(i)
		return fmt.Errorf("etcdtest: member %s not ready within %v (see %s)", m.Name, startTimeout, m.LogPath)
	}
}

// Pid returns the process id of member i (0 if it is not running).
func (c *ProcCluster) Pid(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[i]; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Kill kills member i with SIGKILL and waits until it is gone.
func (c *ProcCluster) Kill(i int) {
	c.mu.Lock()
	p := c.procs[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Close kills every member (a test's cluster: its data is thrown away, and
// a graceful stop waits seconds for leadership to move).
func (c *ProcCluster) Close() {
	for i := range c.Names {
		c.Kill(i)
	}
}

// Leader returns the index of the running member that leads, asking each
// running member in turn.
func (c *ProcCluster) Leader(ctx context.Context) (int, error) {
	var last error
	for i, ep := range c.ClientURLs {
		if c.Pid(i) == 0 {
			continue
		}
		cli, err := NewClient([]string{ep})
		if err != nil {
			last = err
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		cli.Close()
		if err != nil {
			last = err
			continue
		}
		if st.Leader == 0 {
			last = fmt.Errorf("member %s knows no leader", c.Names[i])
			continue
		}
		for j, id := range c.memberIDs(ctx, ep) {
			if id == st.Leader && c.Pid(j) != 0 {
				return j, nil
			}
			if id == st.Leader {
				last = fmt.Errorf("member %s still follows %s, which is down", c.Names[i], c.Names[j])
			}
		}
		if last != nil && strings.Contains(last.Error(), "which is down") {
			continue
		}
		last = fmt.Errorf("leader %x is not a member of %v", st.Leader, c.Names)
	}
	return -1, fmt.Errorf("etcdtest: no leader found: %w", last)
}

// memberIDs returns the members' ids in the order of c.Names.
func (c *ProcCluster) memberIDs(ctx context.Context, ep string) []uint64 {
	cli, err := NewClient([]string{ep})
	if err != nil {
		return nil
	}
	defer cli.Close()
	mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := cli.MemberList(mctx)
	if err != nil {
		return nil
	}
	ids := make([]uint64, len(c.Names))
	for _, m := range resp.Members {
		for i, n := range c.Names {
			if m.Name == n {
				ids[i] = m.ID
			}
		}
	}
	return ids
}

// WaitLeader waits until a member leads, within bound.
func (c *ProcCluster) WaitLeader(ctx context.Context, bound time.Duration) (int, error) {
	deadline := time.Now().Add(bound)
	for {
		i, err := c.Leader(ctx)
		if err == nil || time.Now().After(deadline) {
			return i, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
