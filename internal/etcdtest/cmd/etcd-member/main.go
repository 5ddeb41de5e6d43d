// Command etcd-member runs one member of a test etcd cluster, from the etcd
// server module (package embed) that the tests use in process: the live
// chaos test runs three of them as processes so that it can kill the
// leader. It is test support: nothing in a production build runs it.
//
//	etcd-member -name m0 -data-dir DIR -client-url http://127.0.0.1:P \
//	    -peer-url http://127.0.0.1:Q [-listen-peer-url http://127.0.0.1:R] \
//	    -initial-cluster m0=http://...,m1=...,m2=... -token T [-existing] [-log FILE]
//
// It prints "ready" on stdout once the member serves, and stops on SIGTERM
// or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/etcdtest"
)

func main() {
	var c etcdtest.MemberConfig
	flag.StringVar(&c.Name, "name", "", "member name")
	flag.StringVar(&c.Dir, "data-dir", "", "data directory")
	flag.StringVar(&c.ClientURL, "client-url", "", "client URL to listen on and advertise")
	flag.StringVar(&c.PeerURL, "peer-url", "", "peer URL to advertise (and listen on, without -listen-peer-url)")
	flag.StringVar(&c.ListenPeerURL, "listen-peer-url", "", "peer URL to listen on, when peers reach the member through a proxy at -peer-url")
	flag.StringVar(&c.InitialCluster, "initial-cluster", "", "name=peerURL,... of every member")
	flag.StringVar(&c.Token, "token", "", "initial cluster token")
	flag.BoolVar(&c.Existing, "existing", false, "join the cluster that formed already (a restart)")
	flag.StringVar(&c.LogPath, "log", "", "log file (warnings and errors)")
	wait := flag.Duration("start-timeout", time.Minute, "bound on becoming ready")
	flag.Parse()
	if c.Name == "" || c.Dir == "" || c.ClientURL == "" || c.PeerURL == "" || c.InitialCluster == "" {
		fmt.Fprintln(os.Stderr, "etcd-member: -name, -data-dir, -client-url, -peer-url and -initial-cluster are required")
		os.Exit(2)
	}
	e, err := etcdtest.StartMember(c, *wait)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-member:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sigs:
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcd-member:", err)
	}
	e.Close()
}
