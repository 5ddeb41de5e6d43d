package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/internal/awserr"
)

// mapError wraps err from a DynamoDB call with the context what and, when
// it is one the engine knows, with its sentinel:
//
//	ConditionalCheckFailedException                 engine.ErrConditionFailed
//	ProvisionedThroughputExceededException,
//	RequestLimitExceeded, ThrottlingException       engine.ErrThrottled
//	ResourceNotFoundException                       engine.ErrTableMissing
//	AccessDeniedException, UnrecognizedClientException,
//	InvalidSignatureException, ExpiredTokenException,
//	... (credentials rejected or not authorized)    engine.ErrAccessDenied
//
// A missing table is not engine.ErrNotFound, which a store returns only
// for a missing row. Any other error is wrapped as it is: an unknown
// outcome.
func (s *Store) mapError(what string, err error) error {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return fmt.Errorf("dynamostore: %s: %w", what, err)
	}
	switch api.ErrorCode() {
	case "ConditionalCheckFailedException":
		return fmt.Errorf("dynamostore: %s: %w: %w", what, engine.ErrConditionFailed, err)
	case "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ThrottlingException":
		return fmt.Errorf("dynamostore: %s: %w: %w", what, engine.ErrThrottled, err)
	case "ResourceNotFoundException":
		return fmt.Errorf("dynamostore: %s: lease table %q not found in %s: %w: %w",
			what, s.table, s.where, engine.ErrTableMissing, err)
	}
	if awserr.Credentials(api.ErrorCode()) {
		// The error names the code and the message, never the keys.
		return fmt.Errorf("dynamostore: %s on table %q in %s: %w: %w", what, s.table, s.where, engine.ErrAccessDenied, err)
	}
	return fmt.Errorf("dynamostore: %s: %w", what, err)
}

// attempts watches the HTTP attempts of one call. The SDK retries a
// failed request, so a write whose last attempt was throttled may have
// applied on an earlier attempt that failed without an answer (a lost
// reply, a 5xx, a timeout).
type attempts struct {
	maybeApplied atomic.Bool // an attempt failed in a way that does not rule out that it applied
}

// option installs the watcher on one call, after the SDK's retry
// middleware so that it sees every attempt.
func (a *attempts) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("shardlease.watchAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				if err != nil && !notApplied(err) {
					a.maybeApplied.Store(true)
				}
				return out, md, err
			}), middleware.After)
	})
}

// notApplied reports whether an attempt's error proves that it did not
// apply: DynamoDB rejected it before writing (throttling, a failed
// condition, a missing table).
func notApplied(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ThrottlingException",
		"ConditionalCheckFailedException", "ResourceNotFoundException":
		return true
	}
	return false
}

// mapWriteError is mapError for a conditional write. engine.ErrThrottled
// promises that the write did not apply, which holds only if no earlier
// attempt of the SDK's retries may have applied: otherwise the outcome is
// unknown, and the error matches no sentinel (the engine resolves it by
// re-reading the row). A failed condition after such an attempt stays
// ErrConditionFailed: the engine re-reads the row on it in any case.
func (s *Store) mapWriteError(what string, err error, a *attempts) error {
	mapped := s.mapError(what, err)
	if a.maybeApplied.Load() && errors.Is(mapped, engine.ErrThrottled) {
		return fmt.Errorf("dynamostore: %s: throttled after a retried attempt that may have applied (outcome unknown): %w", what, err)
	}
	return mapped
}
