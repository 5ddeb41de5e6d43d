package dynamostore

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/shardlease/shardlease/engine"
)

// API is the subset of *dynamodb.Client that Store uses. Tests may wrap a
// client in it to observe or alter calls.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is an engine.LeaseStore on one DynamoDB table. It holds no state
// besides its configuration and is safe for concurrent use.
type Store struct {
	api      API
	table    string
	pageSize int32
	where    string // region and endpoint, for error messages
}

var _ engine.LeaseStore = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithScanPageSize sets the Limit of each Scan request of ListLeases (0,
// the default, lets DynamoDB fill 1 MB pages). Small pages exercise
// pagination in tests.
func WithScanPageSize(n int32) Option { return func(s *Store) { s.pageSize = n } }

// New returns a Store on the table named table, reached through api
// (usually a *dynamodb.Client). It makes no call; use CheckTable to verify
// the table.
func New(api API, table string, opts ...Option) *Store {
	s := &Store{api: api, table: table, where: describeClient(api)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.table }

// describeClient names the region and endpoint of a client that exposes
// its options (a *dynamodb.Client does), for error messages.
func describeClient(api any) string {
	c, ok := api.(interface{ Options() dynamodb.Options })
	if !ok {
		return "region/endpoint of a wrapped client"
	}
	o := c.Options()
	endpoint := "the default endpoint"
	if o.BaseEndpoint != nil {
		endpoint = "endpoint " + redactURL(aws.ToString(o.BaseEndpoint))
	}
	return fmt.Sprintf("region %q, %s", o.Region, endpoint)
}

// redactURL returns endpoint with any password in its user information
// replaced by "xxxxx" (url.URL.Redacted); a string that is not a URL is
// returned as it is only if it has no '@'.
func redactURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		if strings.Contains(endpoint, "@") {
			return "(an endpoint that is not a URL)"
		}
		return endpoint
	}
	return u.Redacted()
}
