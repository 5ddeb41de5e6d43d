// Package shield is a reverse proxy that protects the local AWS-compatible
// servers from clients that go away mid-request. dynalite and kinesalite
// crash (an uncaught 'aborted' error: `req.on('error', function(err) {
// throw err })`) when a connection closes before a request is complete,
// which a worker killed with SIGKILL or a call cut by its deadline does.
// The shield reads each request whole and forwards it on a context that the
// client's going away does not cancel. Only for local servers: AWS needs
// no such thing.
package shield

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// New returns the shield's handler in front of upstream (a base URL).
func New(upstream string) (http.Handler, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return // the client went away before sending it all: forward nothing
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()), time.Minute)
		defer cancel()
		out := req.Clone(ctx)
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		rp.ServeHTTP(w, out)
	}), nil
}
