package localaws

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FaultProxy is an in-process HTTP reverse proxy in front of a local
// server. It forwards every request unchanged except those that match a
// rule, which it answers itself (Reject, Respond) or forwards and then
// answers with an error (FailAfterForward). Requests are matched by
// operation name: the part of the X-Amz-Target header after the dot, e.g.
// "PutItem" or "GetRecords".
//
// It exists because neither dynalite nor kinesalite ever throttles, returns
// ChildShards, or loses a reply. Safe for concurrent use.
type FaultProxy struct {
	// URL is the proxy's base URL; point a client's BaseEndpoint at it.
	URL string

	mu     sync.Mutex
	rules  []*rule
	counts map[string]int
	proxy  *httputil.ReverseProxy
}

type ruleKind int

const (
	kindRespond ruleKind = iota
	kindFailAfterForward
)

type rule struct {
	op     string
	left   int // answers left; < 0 means every matching request
	kind   ruleKind
	status int
	body   string
}

// NewFaultProxy starts a proxy in front of upstream (a base URL such as
// Target.Endpoint) and closes it when t ends.
func NewFaultProxy(t testing.TB, upstream string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("localaws: upstream %q: %v", upstream, err)
	}
	p := &FaultProxy{counts: map[string]int{}, proxy: httputil.NewSingleHostReverseProxy(u)}
	p.proxy.ModifyResponse = p.modifyResponse
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// AWSError returns the JSON body of an AWS JSON-protocol error of type
// errType, as DynamoDB and Kinesis send it.
func AWSError(errType, message string) string {
	b, _ := json.Marshal(map[string]string{"__type": errType, "message": message})
	return string(b)
}

// Reject answers the next n requests for op (every one if n < 0) with an
// HTTP status and an AWS error of type errType, without forwarding them:
// the call did not apply. Reject("GetRecords", -1, 400,
// "ProvisionedThroughputExceededException") makes every GetRecords
// throttled.
func (p *FaultProxy) Reject(op string, n, status int, errType string) {
	p.Respond(op, n, status, AWSError(errType, "injected by localaws.FaultProxy"))
}

// Respond answers the next n requests for op (every one if n < 0) with
// status and body, without forwarding them.
func (p *FaultProxy) Respond(op string, n, status int, body string) {
	p.add(&rule{op: op, left: n, kind: kindRespond, status: status, body: body})
}

// FailAfterForward forwards the next n requests for op (every one if
// n < 0) and then replaces the server's reply by HTTP 500
// InternalServerError: the call applied, but the client sees a failure
// and the SDK retries it. This is the "reply lost" fault.
func (p *FaultProxy) FailAfterForward(op string, n int) {
	p.add(&rule{op: op, left: n, kind: kindFailAfterForward, status: http.StatusInternalServerError,
		body: AWSError("InternalServerError", "reply replaced by localaws.FaultProxy after the request applied")})
}

// Clear removes every rule.
func (p *FaultProxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Count returns how many requests for op the proxy has received.
func (p *FaultProxy) Count(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[op]
}

func (p *FaultProxy) add(r *rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, r)
}

// take returns the first live rule for op and uses up one of its answers.
func (p *FaultProxy) take(op string) *rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[op]++
	for _, r := range p.rules {
		if r.op == op && r.left != 0 {
			if r.left > 0 {
				r.left--
			}
			return r
		}
	}
	return nil
}

type ruleKey struct{}

func (p *FaultProxy) serve(w http.ResponseWriter, req *http.Request) {
	target := req.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	r := p.take(op)
	if r != nil && r.kind == kindRespond {
		_, _ = io.Copy(io.Discard, req.Body)
		writeAWS(w, req.Header.Get("Content-Type"), r.status, r.body)
		return
	}
	if r != nil {
		req = req.WithContext(contextWithRule(req, r))
	}
	p.proxy.ServeHTTP(w, req)
}

func (p *FaultProxy) modifyResponse(resp *http.Response) error {
	r, _ := resp.Request.Context().Value(ruleKey{}).(*rule)
	if r == nil || r.kind != kindFailAfterForward {
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	resp.StatusCode = r.status
	resp.Status = strconv.Itoa(r.status) + " " + http.StatusText(r.status)
	resp.Body = io.NopCloser(bytes.NewBufferString(r.body))
	resp.ContentLength = int64(len(r.body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(r.body)))
	// The DynamoDB client checks X-Amz-Crc32 against the body it reads.
	resp.Header.Del("X-Amz-Crc32")
	return nil
}

func writeAWS(w http.ResponseWriter, contentType string, status int, body string) {
	if contentType == "" {
		contentType = "application/x-amz-json-1.0"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Amzn-RequestId", "localaws-faultproxy")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func contextWithRule(req *http.Request, r *rule) context.Context {
	return context.WithValue(req.Context(), ruleKey{}, r)
}
