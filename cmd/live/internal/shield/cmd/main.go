// Command cmd runs a shield (see package shield) in front of a local
// server: `go run ./cmd/live/internal/shield/cmd -listen 127.0.0.1:0
// -upstream http://127.0.0.1:PORT` prints the URL it listens on, then
// serves until SIGTERM or SIGINT. cmd/live/live-local.sh uses it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/cmd/live/internal/shield"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "base URL of the server to protect")
	flag.Parse()
	h, err := shield.New(*upstream)
	if err != nil || *upstream == "" {
		fmt.Fprintln(os.Stderr, "shield: -upstream URL required", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shield:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "shield:", err)
		os.Exit(1)
	}
}
