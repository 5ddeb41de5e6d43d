package kinesisstream

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/shardlease/shardlease/engine"
)

// API is the subset of *kinesis.Client that Stream uses. Tests may wrap a
// client in it to observe or alter calls.
type API interface {
	DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
	ListShards(ctx context.Context, in *kinesis.ListShardsInput, opts ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	DescribeStream(ctx context.Context, in *kinesis.DescribeStreamInput, opts ...func(*kinesis.Options)) (*kinesis.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, opts ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
	PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error)
}

var _ API = (*kinesis.Client)(nil)

// Stream is an engine.Stream and an engine.FanOutStream on Kinesis. It
// holds no state besides its configuration, whether ListShards is known to
// be unsupported, the stream ARNs it has looked up and the open
// subscriptions (Close closes them), and is safe for concurrent use.
type Stream struct {
	api      API
	pageSize int32
	where    string // region and endpoint, for error messages

	noListShards atomic.Bool // the server rejected ListShards as unknown

	fo  FanOutAPI // enhanced fan-out calls, if the API has them
	efo fanOut
}

var _ engine.Stream = (*Stream)(nil)

// Option configures a Stream.
type Option func(*Stream)

// WithShardPageSize sets MaxResults of ListShards (and Limit of the
// DescribeStream fall-back); 0, the default, lets the service choose.
// Small pages exercise pagination in tests.
func WithShardPageSize(n int32) Option { return func(s *Stream) { s.pageSize = n } }

// WithFanOutAPI sets the client of the enhanced fan-out calls, for an API
// that does not have them itself (a wrapped client).
func WithFanOutAPI(api FanOutAPI) Option { return func(s *Stream) { s.fo = api } }

// New returns a Stream reading through api (usually a *kinesis.Client,
// which also has the enhanced fan-out calls).
func New(api API, opts ...Option) *Stream {
	s := &Stream{api: api, where: describeClient(api)}
	s.efo.arns = map[string]string{}
	s.efo.subs = map[string]*subscription{}
	if fo, ok := api.(FanOutAPI); ok {
		s.fo = fo
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// describeClient names the region and endpoint of a client that exposes
// its options (a *kinesis.Client does), for error messages.
func describeClient(api any) string {
	c, ok := api.(interface{ Options() kinesis.Options })
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
