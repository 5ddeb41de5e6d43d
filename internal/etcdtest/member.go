// Package etcdtest runs real etcd clusters on 127.0.0.1 for the tests: the
// etcd server of go.etcd.io/etcd/server/v3, either in the test process
// (Shared, NewCluster: three members started with package embed) or as
// separate processes of the small member binary in cmd/etcd-member
// (Processes), so that a test can kill, pause or cut one member.
//
// It is test support only: no production binary imports it, so none links
// the etcd server. A test that asks for a cluster and cannot get one fails;
// it never skips (there is nothing to install: the server is a Go module).
package etcdtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// MemberConfig is one member of a cluster.
type MemberConfig struct {
	Name string
	// Dir is the member's data directory (created if missing).
	Dir string
	// ClientURL and PeerURL are the member's client and peer URLs
	// (http://127.0.0.1:port). ListenPeerURL, if set, is where it listens
	// for its peers, PeerURL then being the address they reach it at (a
	// proxy in front of it, which a test can cut).
	ClientURL, PeerURL, ListenPeerURL string
	// InitialCluster is the "name=peerURL,..." list of every member.
	InitialCluster string
	// Token is the initial cluster token (the same for every member).
	Token string
	// Existing starts the member of a cluster that already formed (a
	// restart with its data directory), instead of a new cluster.
	Existing bool
	// LogPath receives the member's log at level warn (empty: discarded).
	LogPath string
	// TickMs and ElectionMs are raft's heartbeat and election timeouts (0:
	// 50 and 500, quicker than etcd's 100 and 1000 so that a test that
	// kills the leader waits less).
	TickMs, ElectionMs uint
	// TLS, if set, makes the member serve clients over TLS (its ClientURL
	// must then be https://) and require client certificates signed by the
	// CA.
	TLS *TLSFiles
}

// StartMember starts one member and waits until it is ready to serve (for
// a new cluster: until a quorum of members is up and a leader elected), or
// until timeout.
func StartMember(c MemberConfig, timeout time.Duration) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.Dir
	cu, err := url.Parse(c.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client URL %q: %w", c.ClientURL, err)
	}
	pu, err := url.Parse(c.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: peer URL %q: %w", c.PeerURL, err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	if c.ListenPeerURL != "" {
		lu, err := url.Parse(c.ListenPeerURL)
		if err != nil {
			return nil, fmt.Errorf("etcdtest: listen peer URL %q: %w", c.ListenPeerURL, err)
		}
		cfg.ListenPeerUrls = []url.URL{*lu}
	}
	cfg.InitialCluster = c.InitialCluster
	cfg.InitialClusterToken = c.Token
	if c.Token == "" {
		cfg.InitialClusterToken = "etcdtest"
	}
	if c.Existing {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	cfg.TickMs, cfg.ElectionMs = 50, 500
	if c.TickMs > 0 {
		cfg.TickMs = c.TickMs
	}
	if c.ElectionMs > 0 {
		cfg.ElectionMs = c.ElectionMs
	}
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"/dev/null"}
	if c.LogPath != "" {
		cfg.LogOutputs = []string{c.LogPath}
	}
	if c.TLS != nil {
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: c.TLS.ServerCert, KeyFile: c.TLS.ServerKey, TrustedCAFile: c.TLS.CA, ClientCertAuth: true}
	}
	// No metrics or gateway beside the gRPC API: nothing here reads them.
	cfg.EnableGRPCGateway = false
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: start member %s: %w", c.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdtest: member %s failed: %w", c.Name, err)
	case <-time.After(timeout):
		e.Close()
		return nil, fmt.Errorf("etcdtest: member %s not ready within %v (see its log %s)", c.Name, timeout, c.LogPath)
	}
}

// Layout is the names and URLs of an n-member cluster on 127.0.0.1.
type Layout struct {
	Names      []string
	ClientURLs []string
	PeerURLs   []string
	// InitialCluster is the "name=peerURL,..." list of every member.
	InitialCluster string
	Token          string
}

// NewLayout picks free ports for n members.
func NewLayout(n int) (Layout, error) {
	var l Layout
	ports, err := FreePorts(2 * n)
	if err != nil {
		return l, err
	}
	var ic []string
	for i := 0; i < n; i++ {
		name := "m" + strconv.Itoa(i)
		l.Names = append(l.Names, name)
		l.ClientURLs = append(l.ClientURLs, "http://127.0.0.1:"+strconv.Itoa(ports[2*i]))
		l.PeerURLs = append(l.PeerURLs, "http://127.0.0.1:"+strconv.Itoa(ports[2*i+1]))
		ic = append(ic, name+"="+l.PeerURLs[i])
	}
	l.InitialCluster = strings.Join(ic, ",")
	l.Token = "etcdtest-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(ports[0])
	return l, nil
}

// Member returns the configuration of member i, with its data directory
// and log under dir.
func (l Layout) Member(i int, dir string) MemberConfig {
	return MemberConfig{Name: l.Names[i], Dir: filepath.Join(dir, l.Names[i]), ClientURL: l.ClientURLs[i], PeerURL: l.PeerURLs[i],
		InitialCluster: l.InitialCluster, Token: l.Token, LogPath: filepath.Join(dir, l.Names[i]+".log")}
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that nothing listened
// on a moment ago (they are held open together, then released).
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: a free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// errStart joins the errors of members that failed to start.
func errStart(errs []error) error {
	return fmt.Errorf("etcdtest: the cluster did not start: %w", errors.Join(errs...))
}
