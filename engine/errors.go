package engine

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the start-up checks, which a Worker (and so Consumer.Run)
// stops with: conditions a person must fix, which retrying cannot. Stores
// and streams wrap them (errors.Is) in the errors of their calls.
var (
	// ErrTableMissing: the lease table does not exist.
	ErrTableMissing = errors.New("lease table does not exist")
	// ErrTableSchema: the table exists but is not a lease table (its key
	// is not one string hash key named leaseKey).
	ErrTableSchema = errors.New("table is not a lease table")
	// ErrStreamMissing: a consumed stream does not exist.
	ErrStreamMissing = errors.New("stream does not exist")
	// ErrAccessDenied: the service rejected the credentials, or they do
	// not allow the call (an unknown access key, a bad signature, an
	// expired token, a missing IAM permission).
	ErrAccessDenied = errors.New("credentials rejected or not authorized")
	// ErrStreamMismatch: the lease table serves another stream, or an
	// earlier stream of the same name (see StreamMismatchError).
	ErrStreamMismatch = errors.New("the lease table belongs to another stream")
)

// StreamMismatchError is the error of a worker whose lease table was
// written for another stream than the one it consumes: another
// application's stream that picked the same table name, a typo in a stream
// name, or a stream deleted and re-created under the same name (its shard
// ids start again at 0, so its rows' checkpoints mean nothing to it). The
// worker stops before it writes anything to the table. errors.Is matches
// it against ErrStreamMismatch.
type StreamMismatchError struct {
	// Stream is the stream the worker consumes, Want its identity
	// (StreamInfo.Identity).
	Stream, Want string
	// Found is the identity the table names (its stream marker row or a
	// row), Key that row's key. Found is empty when the table has no
	// marker but rows whose shards Stream does not have (Rows).
	Found, Key string
	// Rows are unfinished rows, of a table written without stream
	// identities (by KCL or an earlier shardlease), whose shards the stream
	// neither lists nor descends from.
	Rows []string
	// Recreated is true when the stream changed identity while the worker
	// ran (deleted and re-created).
	Recreated bool
}

func (e *StreamMismatchError) Error() string {
	switch {
	case e.Recreated:
		return fmt.Sprintf("stream %s was deleted and re-created while this worker ran (it was %s, it is now %s): the lease table's checkpoints belong to the old stream; stopped without writing to the table",
			e.Stream, e.Found, e.Want)
	case e.Found != "":
		return fmt.Sprintf("the lease table belongs to another stream: its row %s names %s, but this worker consumes %s (%s); stopped before writing anything (a typo in the stream or table name, two applications sharing a table, or a stream deleted and re-created under the same name?)",
			e.Key, e.Found, e.Stream, e.Want)
	}
	rows := e.Rows
	more := ""
	if len(rows) > 5 {
		rows, more = rows[:5], fmt.Sprintf(" and %d more", len(e.Rows)-5)
	}
	return fmt.Sprintf("the lease table has no stream marker and unfinished rows for shards that stream %s (%s) neither lists nor descends from: %s%s; stopped before writing anything. If they are this stream's (a KCL table, or one from before shardlease recorded stream identities, whose shards have expired), set Config.AdoptUnverifiedRows (live run -adopt-unverified-rows) to adopt the table anyway",
		e.Stream, e.Want, strings.Join(rows, ", "), more)
}

// Is makes errors.Is(err, ErrStreamMismatch) true.
func (e *StreamMismatchError) Is(target error) bool { return target == ErrStreamMismatch }

// fatal reports whether err is one of the start-up errors that retrying
// cannot cure.
func fatal(err error) bool {
	return errors.Is(err, ErrTableMissing) || errors.Is(err, ErrTableSchema) ||
		errors.Is(err, ErrStreamMissing) || errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrStreamMismatch)
}

// ShutdownError is the error of a graceful shutdown that did not release
// every lease: the leases in Left were left to expire (their release could
// not be written, or the shutdown timed out), so other workers take them
// only after the lease duration.
type ShutdownError struct {
	Released []string // released: other workers take them at once
	Left     []string // not released: they expire
	Reason   string   // why, in words
}

func (e *ShutdownError) Error() string {
	return fmt.Sprintf("graceful shutdown released %d leases and left %d to expire (%s): %s",
		len(e.Released), len(e.Left), e.Reason, strings.Join(e.Left, ", "))
}
