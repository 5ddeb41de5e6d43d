package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/engine"
)

// DialOptions say how to reach a cluster (Dial).
type DialOptions struct {
	// Endpoints are the members' client URLs (http:// or https://).
	Endpoints []string
	// CAFile is a PEM file of the certificate authorities that sign the
	// members' certificates: set, the client speaks TLS. CertFile and
	// KeyFile are a client certificate and its key, for clusters that
	// authenticate clients by certificate (both or neither).
	CAFile, CertFile, KeyFile string
	// InsecureSkipVerify speaks TLS without verifying the members'
	// certificates (tests only).
	InsecureSkipVerify bool
	// Username and Password authenticate with etcd's own users (both or
	// neither). The password is never logged nor put in an error.
	Username, Password string
	// DialTimeout bounds the connection to the first member (default 5 s).
	DialTimeout time.Duration
}

// Dial returns a client of the cluster described by o. It fails, naming
// the file or the setting, on a missing endpoint, an unreadable
// certificate, and credentials the cluster refuses (engine.ErrAccessDenied);
// an unreachable cluster shows at the first call (CheckTable).
func Dial(o DialOptions) (*clientv3.Client, error) {
	var eps []string
	for _, ep := range o.Endpoints {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return nil, errors.New("etcdstore: no etcd endpoints")
	}
	if (o.Username == "") != (o.Password == "") {
		return nil, errors.New("etcdstore: a username needs a password and a password a username")
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("etcdstore: a client certificate needs its key file and a key file its certificate")
	}
	cfg := clientv3.Config{Endpoints: eps, DialTimeout: o.DialTimeout, Username: o.Username, Password: o.Password,
		Logger: zap.NewNop()}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if o.CAFile != "" || o.CertFile != "" || o.InsecureSkipVerify {
		tc, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		if isCredentials(err) {
			return nil, fmt.Errorf("etcdstore: %s refused the credentials of user %q: %w: %w", describeEndpoints(eps), o.Username, engine.ErrAccessDenied, err)
		}
		return nil, fmt.Errorf("etcdstore: connecting to %s: %w", describeEndpoints(eps), err)
	}
	return cli, nil
}

func tlsConfig(o DialOptions) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.InsecureSkipVerify}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: the CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcdstore: the CA file %s holds no PEM certificate", o.CAFile)
		}
		tc.RootCAs = pool
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: the client certificate %s and key %s: %w", o.CertFile, o.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
