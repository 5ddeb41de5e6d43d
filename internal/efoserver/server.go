// Package efoserver is a local Kinesis enhanced fan-out endpoint for tests:
// it answers RegisterStreamConsumer, DescribeStreamConsumer,
// DeregisterStreamConsumer and SubscribeToShard as Kinesis does, speaking
// SubscribeToShard's event-stream protocol (application/vnd.amazon.eventstream
// over HTTP/2 and TLS, messages framed with aws-sdk-go-v2's own encoder,
// aws/protocol/eventstream), so that the kinesisstream adapter's real code
// path (the SDK client, event-stream decoding, take-overs and reconnects)
// runs in tests. kinesalite has no enhanced fan-out.
//
// Records come from a backend engine.Stream, read with GetShardIterator and
// GetRecords: the simulation's fake (fakes.Kinesis) or kinesalite through
// kinesisstream. Every other Kinesis call is forwarded to Options.Upstream
// (kinesalite) when set; without it the server answers DescribeStreamSummary
// itself from the backend and rejects the rest.
//
// Consumers, the subscription lifetime, the in-use window and the rate
// limit follow an injected clock (Options.Now), so tests move them without
// sleeping; only the backend is polled on real time (Options.Poll).
//
// Like internal/localaws it is test support: it imports the AWS SDK (the
// event-stream encoder), and no production code imports it.
package efoserver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// Options configure a Server.
type Options struct {
	// Backend holds the streams' records (required).
	Backend engine.Stream
	// Lock, if set, is held around every Backend call (a fake is not safe
	// for concurrent use); the server never holds it while reading Now.
	Lock sync.Locker
	// Upstream is the base URL of a Kinesis-compatible server that answers
	// every call the server does not (kinesalite).
	Upstream string
	// Now is the server's clock; default time.Now.
	Now func() time.Time
	// Activation is how long a consumer stays CREATING (DELETING).
	Activation time.Duration
	// Lifetime of a subscription; default 5 minutes.
	Lifetime time.Duration
	// InUseWindow: a subscription of a consumer and shard within it of a
	// successful one fails with ResourceInUseException; default 5 s.
	InUseWindow time.Duration
	// MinSubscribeInterval between two SubscribeToShard calls of a consumer
	// and shard (sooner: LimitExceededException); default 1 s, negative
	// none.
	MinSubscribeInterval time.Duration
	// Heartbeat: with nothing new, an empty event (with the continuation)
	// is pushed this often, once a continuation is known; default 5 s, on
	// the server's clock.
	Heartbeat time.Duration
	// Poll is how often a subscription reads the backend when it has
	// nothing to push, on real time; default 20 ms.
	Poll time.Duration
	// MaxEventBytes caps the record data of one event; default 1 MiB.
	MaxEventBytes int
	// Region and Account make the ARNs the server hands out when it
	// answers DescribeStreamSummary; default us-east-1, 000000000000.
	Region, Account string
}

// Server is a running enhanced fan-out endpoint.
type Server struct {
	// URL is the server's https base URL; point a Kinesis client's
	// BaseEndpoint at it, with Client as its HTTP client.
	URL string
	// Client is an HTTP/2 client that trusts the server's certificate.
	Client *http.Client
	// CertPEM is the server's certificate, for AWS_CA_BUNDLE.
	CertPEM []byte

	opts  Options
	srv   *httptest.Server
	proxy *httputil.ReverseProxy

	mu        sync.Mutex
	consumers map[string]*consumer // by ARN
	byName    map[string]*consumer // by stream + "/" + name
	pairs     map[string]*pair     // by consumer ARN + " " + shard
	subs      map[*subscription]bool
	protos    map[string]int // protocol of each SubscribeToShard request
	counts    map[string]int // requests by operation
	rejects   int            // SubscribeToShard calls still to refuse
	rejectAs  string
}

// New starts a server with opts and closes it when t ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("efoserver: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a server with opts on 127.0.0.1 (TLS, HTTP/2).
func Start(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errorf("Options.Backend is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Lifetime <= 0 {
		opts.Lifetime = 5 * time.Minute
	}
	if opts.InUseWindow <= 0 {
		opts.InUseWindow = 5 * time.Second
	}
	if opts.MinSubscribeInterval == 0 {
		opts.MinSubscribeInterval = time.Second
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 5 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = 20 * time.Millisecond
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = 1 << 20
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.Account == "" {
		opts.Account = "000000000000"
	}
	s := &Server{opts: opts, consumers: map[string]*consumer{}, byName: map[string]*consumer{},
		pairs: map[string]*pair{}, subs: map[*subscription]bool{}, protos: map[string]int{}, counts: map[string]int{}}
	if opts.Upstream != "" {
		u, err := url.Parse(opts.Upstream)
		if err != nil {
			return nil, errorf("Options.Upstream %q: %v", opts.Upstream, err)
		}
		s.proxy = httputil.NewSingleHostReverseProxy(u)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.EnableHTTP2 = true
	s.srv.StartTLS()
	s.URL = s.srv.URL
	s.Client = s.srv.Client()
	s.CertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return s, nil
}

// Close ends every subscription and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	for sub := range s.subs {
		sub.end("")
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// TLSConfig returns a client TLS configuration that trusts the server.
func (s *Server) TLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return &tls.Config{RootCAs: pool}
}

// Protocols returns how many SubscribeToShard requests came over each
// protocol ("HTTP/2.0", ...).
func (s *Server) Protocols() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.protos {
		out[k] = v
	}
	return out
}

// Count returns how many requests for op the server has received
// (forwarded ones included).
func (s *Server) Count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// Subscriptions returns how many subscriptions are pushing events.
func (s *Server) Subscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// RejectSubscribes makes the next n SubscribeToShard calls fail with the
// error excType (e.g. LimitExceededException) before any check.
func (s *Server) RejectSubscribes(n int, excType string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejects, s.rejectAs = n, excType
}

// Drop ends every subscription of shard (of every shard if shard is "")
// with the event-stream exception excType (e.g. InternalFailureException),
// or, with excType "", by closing the stream as at the end of a lifetime.
// It returns how many it ended.
func (s *Server) Drop(shard, excType string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for sub := range s.subs {
		if (shard == "" || sub.shard == shard) && sub.end(excType) {
			n++
		}
	}
	return n
}

func (s *Server) now() time.Time { return s.opts.Now() }

// backend runs f holding Options.Lock.
func (s *Server) backend(f func(b engine.Stream)) {
	if s.opts.Lock != nil {
		s.opts.Lock.Lock()
		defer s.opts.Lock.Unlock()
	}
	f(s.opts.Backend)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	s.mu.Lock()
	s.counts[op]++
	s.mu.Unlock()
	var body []byte
	if op != "" {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "SerializationException", err.Error())
			return
		}
		body = b
	}
	switch op {
	case "RegisterStreamConsumer":
		s.register(w, body)
	case "DescribeStreamConsumer":
		s.describeConsumer(w, body)
	case "DeregisterStreamConsumer":
		s.deregister(w, body)
	case "SubscribeToShard":
		s.mu.Lock()
		s.protos[r.Proto]++
		s.mu.Unlock()
		s.subscribe(w, r, body)
	case "DescribeStreamSummary":
		if s.proxy == nil {
			s.describeStream(w, body)
			return
		}
		fallthrough
	default:
		if s.proxy == nil {
			writeError(w, http.StatusBadRequest, "UnknownOperationException", "efoserver answers only enhanced fan-out calls and DescribeStreamSummary; "+op+" needs Options.Upstream")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		s.proxy.ServeHTTP(w, r)
	}
}

// writeError answers an AWS JSON-protocol error.
func writeError(w http.ResponseWriter, status int, errType, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": errType, "message": msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", "efoserver")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", "efoserver")
	_, _ = w.Write(b)
}

// epoch is a JSON timestamp in epoch seconds, as the JSON protocol has it.
type epoch time.Time

func (t epoch) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(time.Time(t).UnixMilli())/1000, 'f', 3, 64)), nil
}

func (t *epoch) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*t = epoch(time.UnixMilli(int64(math.Round(f * 1000))))
	return nil
}

func errorf(format string, a ...any) error { return fmt.Errorf("efoserver: "+format, a...) }
