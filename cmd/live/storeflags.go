package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/cmd/live/internal/awsenv"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/engine/dynamostore"
	"github.com/shardlease/shardlease/engine/etcdstore"
)

// The lease stores `live` can use (-store).
const (
	storeDynamoDB = "dynamodb"
	storeEtcd     = "etcd"
)

// envEtcdPassword names the environment variable the etcd password is read
// from (or -etcd-password-file): never a flag, which `ps` would show.
const envEtcdPassword = "LIVE_ETCD_PASSWORD"

// storeFlags choose the lease store: the DynamoDB table -table, or the etcd
// prefix /shardlease/<table>/ (or -etcd-prefix) of a cluster.
type storeFlags struct {
	kind      string
	endpoints string
	prefix    string
	ca        string
	cert      string
	key       string
	username  string
	pwFile    string
	dialWait  time.Duration
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kind, "store", storeDynamoDB, "lease store: dynamodb (the table -table) or etcd (the key prefix /shardlease/<table>/ of the cluster -etcd-endpoints)")
	fs.StringVar(&f.endpoints, "etcd-endpoints", "", "etcd: the members' client URLs, comma-separated (http://host:2379,...; https:// with -etcd-ca)")
	fs.StringVar(&f.prefix, "etcd-prefix", "", "etcd: the key prefix of the lease table (default /shardlease/<table>/); no other application may share it")
	fs.StringVar(&f.ca, "etcd-ca", "", "etcd: PEM file of the CA that signs the members' certificates (speak TLS)")
	fs.StringVar(&f.cert, "etcd-cert", "", "etcd: client certificate PEM file (clusters that authenticate clients by certificate)")
	fs.StringVar(&f.key, "etcd-key", "", "etcd: the client certificate's key PEM file")
	fs.StringVar(&f.username, "etcd-username", "", "etcd: user name (etcd authentication); the password comes from "+envEtcdPassword+" or -etcd-password-file")
	fs.StringVar(&f.pwFile, "etcd-password-file", "", "etcd: file holding the password of -etcd-username (its first line; default: "+envEtcdPassword+")")
	fs.DurationVar(&f.dialWait, "etcd-dial-timeout", 5*time.Second, "etcd: bound on connecting to the first member")
}

// etcdPrefix returns the key prefix of table.
func (f *storeFlags) etcdPrefix(table string) string {
	if f.prefix != "" {
		return f.prefix
	}
	return "/shardlease/" + table + "/"
}

// validate checks the flags' combinations (without reading files).
func (f *storeFlags) validate() error {
	switch f.kind {
	case storeDynamoDB:
		if f.endpoints != "" || f.prefix != "" || f.username != "" || f.ca != "" {
			return errors.New("-etcd-* flags need -store etcd")
		}
	case storeEtcd:
		if strings.TrimSpace(f.endpoints) == "" {
			return errors.New("-store etcd needs -etcd-endpoints (or LIVE_ETCD_ENDPOINTS)")
		}
		if f.dialWait <= 0 {
			return fmt.Errorf("-etcd-dial-timeout %v: must be positive", f.dialWait)
		}
	default:
		return fmt.Errorf("-store %q: want %s or %s", f.kind, storeDynamoDB, storeEtcd)
	}
	return nil
}

// password returns the etcd password: the first line of -etcd-password-file,
// else $LIVE_ETCD_PASSWORD. It is never printed.
func (f *storeFlags) password() (string, error) {
	if f.pwFile != "" {
		b, err := os.ReadFile(f.pwFile)
		if err != nil {
			return "", fmt.Errorf("-etcd-password-file: %w", err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		pw = strings.TrimRight(pw, "\r")
		if pw == "" {
			return "", fmt.Errorf("-etcd-password-file %s: its first line is empty", f.pwFile)
		}
		return pw, nil
	}
	return os.Getenv(envEtcdPassword), nil
}

// openedStore is the lease store a command uses.
type openedStore struct {
	store engine.LeaseStore
	// where names the store for messages: the table and its region and
	// endpoint, or the prefix and the cluster's endpoints
	where string
	etcd  *etcdstore.Store // -store etcd
	cli   *clientv3.Client
}

// Close releases the store's connection.
func (o *openedStore) Close() {
	if o.cli != nil {
		_ = o.cli.Close()
	}
}

// open returns the lease store of table: the DynamoDB table (clients
// must hold a DynamoDB client) or the etcd prefix.
func (f *storeFlags) open(table string, clients *awsenv.Clients) (*openedStore, error) {
	if f.kind != storeEtcd {
		region, dynEP, _ := clients.Where()
		return &openedStore{store: dynamostore.New(clients.DynamoDB, table), where: fmt.Sprintf("DynamoDB table %q (region %s, endpoint %s)", table, region, dynEP)}, nil
	}
	pw, err := f.password()
	if err != nil {
		return nil, err
	}
	if f.username == "" && pw != "" {
		return nil, fmt.Errorf("a password is set (%s or -etcd-password-file) but no -etcd-username", envEtcdPassword)
	}
	if f.username != "" && pw == "" {
		return nil, fmt.Errorf("-etcd-username %s needs a password: %s or -etcd-password-file", f.username, envEtcdPassword)
	}
	eps := strings.Split(f.endpoints, ",")
	cli, err := etcdstore.Dial(etcdstore.DialOptions{Endpoints: eps, CAFile: f.ca, CertFile: f.cert, KeyFile: f.key,
		Username: f.username, Password: pw, DialTimeout: f.dialWait})
	if err != nil {
		return nil, err
	}
	s, err := etcdstore.New(cli, f.etcdPrefix(table))
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return &openedStore{store: s, etcd: s, cli: cli, where: fmt.Sprintf("etcd prefix %q (endpoints %s)", s.Prefix(), strings.Join(cli.Endpoints(), ","))}, nil
}
