// Package awsenv builds the AWS clients of cmd/live from the standard AWS
// configuration chain (environment, shared config and credentials files,
// SSO, web identity, container and instance roles), with an optional
// region and per-service endpoints. Credentials are never read or logged
// here: the SDK resolves them when a call is signed.
package awsenv

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine/awslog"
)

// Settings choose the region and endpoints. Empty fields fall back to the
// standard chain: AWS_REGION / the shared config for the region,
// AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_KINESIS or AWS_ENDPOINT_URL
// for the endpoints.
type Settings struct {
	Region           string
	DynamoDBEndpoint string
	KinesisEndpoint  string
	// Logger receives the SDK's own log lines (its warnings, and with
	// ClientLogMode its debug lines) through awslog.New. Nil: slog.Default().
	Logger *slog.Logger
}

// Clients are the AWS clients a command uses.
type Clients struct {
	Config   aws.Config
	DynamoDB *dynamodb.Client
	Kinesis  *kinesis.Client
}

// Load resolves the configuration and makes the clients. It fails if no
// region is configured; it makes no call.
func Load(ctx context.Context, s Settings) (*Clients, error) {
	var opts []func(*config.LoadOptions) error
	if s.Region != "" {
		opts = append(opts, config.WithRegion(s.Region))
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	opts = append(opts, config.WithHTTPClient(httpClient()), config.WithLogger(awslog.New(log)))
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: pass -region or set AWS_REGION (or a region in the shared config profile)")
	}
	c := &Clients{Config: cfg}
	c.DynamoDB = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if s.DynamoDBEndpoint != "" {
			o.BaseEndpoint = aws.String(s.DynamoDBEndpoint)
		}
	})
	c.Kinesis = kinesis.NewFromConfig(cfg, func(o *kinesis.Options) {
		if s.KinesisEndpoint != "" {
			o.BaseEndpoint = aws.String(s.KinesisEndpoint)
		}
	})
	return c, nil
}

// httpClient is the SDK's buildable client (it honours AWS_CA_BUNDLE) with
// connection timeouts; every call also carries a context deadline.
func httpClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = 5 * time.Second }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = 64
			tr.ResponseHeaderTimeout = 30 * time.Second
		})
}

// Where describes the region and endpoints for logs and messages (never
// credentials: a password in an endpoint URL is redacted).
func (c *Clients) Where() (region, dynamoEndpoint, kinesisEndpoint string) {
	ep := func(o *string, env string) string {
		if o != nil {
			return Redact(*o)
		}
		if v := os.Getenv(env); v != "" {
			return Redact(v)
		}
		if v := os.Getenv("AWS_ENDPOINT_URL"); v != "" {
			return Redact(v)
		}
		return "default"
	}
	return c.Config.Region, ep(c.DynamoDB.Options().BaseEndpoint, "AWS_ENDPOINT_URL_DYNAMODB"), ep(c.Kinesis.Options().BaseEndpoint, "AWS_ENDPOINT_URL_KINESIS")
}

// Redact returns endpoint with the password of its user information
// replaced by "xxxxx" (url.URL.Redacted). A string that does not parse as
// a URL but holds an '@' is not shown at all.
func Redact(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		if strings.Contains(endpoint, "@") {
			return "(an endpoint that is not a URL)"
		}
		return endpoint
	}
	return u.Redacted()
}
