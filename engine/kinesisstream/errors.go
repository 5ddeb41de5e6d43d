package kinesisstream

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"
	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/internal/awserr"
)

// mapError wraps err from a Kinesis call with the context what and, when
// it is one the engine knows, with its sentinel:
//
//	ProvisionedThroughputExceededException,
//	LimitExceededException, KMSThrottlingException   engine.ErrThrottled
//	ExpiredIteratorException                         engine.ErrExpiredIterator
//	ResourceNotFoundException                        engine.ErrNotFound (notFound says what)
//	ResourceInUseException                           engine.ErrResourceInUse
//	AccessDeniedException, UnrecognizedClientException,
//	InvalidSignatureException, ExpiredTokenException,
//	... (credentials rejected or not authorized)     engine.ErrAccessDenied
//
// Any other error is wrapped as it is.
func (s *Stream) mapError(what, notFound string, err error) error {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return fmt.Errorf("kinesisstream: %s: %w", what, err)
	}
	switch api.ErrorCode() {
	case "ProvisionedThroughputExceededException", "LimitExceededException", "KMSThrottlingException":
		return fmt.Errorf("kinesisstream: %s: %w: %w", what, engine.ErrThrottled, err)
	case "ExpiredIteratorException":
		return fmt.Errorf("kinesisstream: %s: %w: %w", what, engine.ErrExpiredIterator, err)
	case "ResourceInUseException":
		return fmt.Errorf("kinesisstream: %s: %w: %w", what, engine.ErrResourceInUse, err)
	case "ResourceNotFoundException":
		return fmt.Errorf("kinesisstream: %s: %s not found in %s: %w: %w", what, notFound, s.where, engine.ErrNotFound, err)
	}
	if awserr.Credentials(api.ErrorCode()) {
		// The error names the code and the message, never the keys.
		return fmt.Errorf("kinesisstream: %s in %s: %w: %w", what, s.where, engine.ErrAccessDenied, err)
	}
	return fmt.Errorf("kinesisstream: %s: %w", what, err)
}

func isNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }

// unsupported reports whether err says the server does not know the
// operation (a Kinesis-compatible server without ListShards).
func unsupported(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "UnknownOperationException", "InvalidAction", "UnsupportedOperation", "NotImplemented":
		return true
	}
	return false
}
