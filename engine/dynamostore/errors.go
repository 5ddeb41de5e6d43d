package dynamostore

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"
	"github.com/shardlease/shardlease/engine"
)

// mapError wraps err from a DynamoDB call with the context what and, when
// it is one the engine knows, with its sentinel:
//
//	ConditionalCheckFailedException                 engine.ErrConditionFailed
//	ProvisionedThroughputExceededException,
//	RequestLimitExceeded, ThrottlingException       engine.ErrThrottled
//	ResourceNotFoundException                       engine.ErrNotFound (the table is missing)
//
// Any other error is wrapped as it is: an unknown outcome.
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
			what, s.table, s.where, engine.ErrNotFound, err)
	}
	return fmt.Errorf("dynamostore: %s: %w", what, err)
}
