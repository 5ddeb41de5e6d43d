// Package fakes holds deterministic in-memory fakes of the two services the
// lease engine talks to: a DynamoDB lease table (LeaseTable, an
// engine.LeaseStore) and Kinesis Data Streams (Kinesis, an engine.Stream).
//
// The fakes are built for the discrete-event simulator and for tests:
//
//   - Time is passed in. Both fakes read a Clock (ManualClock by default)
//     and never call time.Now, sleep or start timers.
//   - No goroutines and no locks: a fake must be used from one goroutine at
//     a time.
//   - Every result is a function of the seed given to the fake and of the
//     sequence of calls and clock readings: randomness comes from a
//     math/rand/v2 PCG source seeded by the caller, and no result depends on
//     map iteration order.
//   - Faults are injected on demand through the embedded Faults (throttling
//     windows, one-shot failures, a hook), and eventually consistent reads of
//     the table return stale rows within a configured lag.
//
// Errors match engine.ErrConditionFailed, engine.ErrThrottled,
// engine.ErrNotFound and engine.ErrExpiredIterator through errors.Is, as the
// engine expects of a store or stream. Any other error (an invalid argument,
// a malformed row, an injected custom error) is what the engine treats as an
// unknown outcome.
//
// A stream is stored (CreateStream: every record put is kept, compactly)
// or generated (CreateGeneratedStream: records are derived from the seed,
// the shard and the position whenever they are read, arrivals from
// counter-based Poisson processes, so that a day of retention costs no
// memory per record; see GeneratedRecords and arrivals.go).
//
// Hot paths (UpdateLease, PutRecord, GetRecords) avoid fmt and allocate
// little; the documentation of each method states who owns the slices it
// returns.
package fakes
