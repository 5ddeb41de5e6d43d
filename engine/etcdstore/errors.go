package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shardlease/shardlease/engine"
)

// isErr reports whether err is the etcd error target (the client returns
// them as rpctypes values, or as gRPC statuses with their message).
func isErr(err, target error) bool {
	return errors.Is(err, target) || errors.Is(rpctypes.Error(err), target)
}

// credentialErrors are the errors of a request the cluster refused for its
// credentials or permissions.
var credentialErrors = []error{rpctypes.ErrPermissionDenied, rpctypes.ErrAuthFailed, rpctypes.ErrInvalidAuthToken,
	rpctypes.ErrUserEmpty, rpctypes.ErrUserNotFound, rpctypes.ErrAuthNotEnabled, rpctypes.ErrAuthOldRevision}

// mapError wraps err from an etcd call with the context what and, when it
// is one the engine knows, with its sentinel:
//
//	etcdserver: too many requests            engine.ErrThrottled (refused before it applied)
//	permission denied, authentication failed,
//	invalid auth token, user name empty ...  engine.ErrAccessDenied
//
// An unreachable cluster (no member answered within the deadline) is named
// with its endpoints. Anything else is wrapped as it is: for a write, an
// unknown outcome (a leader change or a timeout may come after the write
// applied), which the engine resolves by re-reading the row.
func (s *Store) mapError(what string, err error) error {
	switch {
	case isErr(err, rpctypes.ErrTooManyRequests):
		return fmt.Errorf("etcdstore: %s: %w: %w", what, engine.ErrThrottled, err)
	case isCredentials(err):
		// The error names the refusal, never the credentials.
		return fmt.Errorf("etcdstore: %s under %s in %s: %w: %w", what, s.prefix, s.where, engine.ErrAccessDenied, err)
	case unreachable(err):
		return fmt.Errorf("etcdstore: %s: %s did not answer (is the cluster up and reachable from here?): %w", what, s.where, err)
	}
	return fmt.Errorf("etcdstore: %s: %w", what, err)
}

// mapWriteError is mapError for a conditional write's Txn. Throttling is
// refused before the write is proposed, so it stays engine.ErrThrottled;
// every other failure is an unknown outcome.
func (s *Store) mapWriteError(what string, err error) error {
	if isErr(err, rpctypes.ErrTooManyRequests) {
		return s.mapError(what, err)
	}
	return fmt.Errorf("%w (outcome unknown: the write may have applied)", s.mapError(what, err))
}

func isCredentials(err error) bool {
	for _, e := range credentialErrors {
		if isErr(err, e) {
			return true
		}
	}
	return status.Code(err) == codes.Unauthenticated || status.Code(err) == codes.PermissionDenied
}

// unreachable reports whether err says no member answered.
func unreachable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
