package localaws

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// Context returns a context with a 30 s test deadline, cancelled when the
// test ends.
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// FastRetries returns cfg with the SDK's standard retryer at millisecond
// backoff, so tests that provoke retries stay fast.
func FastRetries(cfg aws.Config) aws.Config {
	cfg = cfg.Copy()
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = 5 * time.Millisecond })
	}
	return cfg
}

// NoRetries returns cfg with the SDK trying each call once.
func NoRetries(cfg aws.Config) aws.Config {
	cfg = cfg.Copy()
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	return cfg
}
