// Package linearizability checks that a history of lease-table calls is
// linearizable (invariant Lin): that some order of the calls, each placed
// between the moment it was sent and the moment its outcome came back,
// explains every outcome by the table's sequential specification. The
// history may come from the simulator's fake table, from dynalite, or from
// DynamoDB; it is checked with porcupine
// (github.com/anishathalye/porcupine).
//
// # The history
//
// A history is a []Op: one Op per call, with its client, its call and
// return times (nanoseconds on one clock), its Input (kind, key, the
// condition of a write, the row written, the read mode of a scan) and its
// Output (ok, condition failed, not found, throttled or unknown, and the
// row or rows a read returned). FromCall builds an Op from an engine.Call
// and its engine.Result; FromTrace builds a history from a sim/trace
// history (simulator or cmd/live).
//
// # The model
//
// The table is checked one lease key at a time (checking is NP-complete;
// partitioning keeps it fast, and the keys of a DynamoDB table are
// independent). A key's state is absent or one row version (Row: owner,
// counter, checkpoint and the other lease attributes, comparable with ==).
//
//   - GetLease is a strongly consistent read: it returns the current row or
//     not found.
//   - CreateLease applies if the row is absent, else fails its condition.
//   - UpdateLease and DeleteLease apply if the row exists with the expected
//     owner and counter, else fail their condition.
//   - A consistent ListLeases becomes one read per key: of each row it
//     returned, and "absent" for every other key the history names. This
//     is exactly what a consistent DynamoDB Scan promises: each item is
//     read consistently somewhere within the scan, but the scan is not a
//     snapshot across keys.
//
// # What is left out, and why
//
//   - Eventually consistent scans (ListLeases with consistent false): they
//     may return a row older than the last acknowledged write, so they are
//     not linearizable by design. The engine treats what they return as
//     hints only; Check skips them (Result.Skipped). That they return only
//     versions that existed recently is not checked here.
//   - Throttled calls: they were rejected before they applied.
//   - Reads whose outcome never came back: they observed nothing.
//
// # Unknown outcomes
//
// A write whose outcome the caller never learnt (timeout, lost reply, 5xx,
// a crash while it was in flight, an SDK retry of an attempt that may have
// applied) stays in the history with OutcomeUnknown. Check gives it a
// return time after every other operation of its key and accepts either
// outcome: it may have applied at any point after it was sent, or never.
// Such writes make a check weaker (they can explain a version that no
// acknowledged write produced) and slower (they are concurrent with
// everything after them).
//
// # What it cannot check
//
//   - Anything the caller could not see: a write that broke its condition
//     but whose reply was lost is indistinguishable from one that applied
//     legitimately (the simulator's S2 checker, which reads the table's
//     apply records, sees those).
//   - Histories whose times are wrong: clients' clocks must agree (true time
//     in the simulator; for live runs, widen windows by the clock skew
//     bound with Widen).
//   - Histories recorded above a client that retries by itself (the AWS
//     SDK): a retry of an applied write reports a condition failure. Use
//     AssumeHiddenRetries unless the recorder tells retried calls apart.
//
// # Checking as the history is recorded
//
// Online checks a simulator trace record by record, key by key, without
// keeping the history: a key's calls are cut into windows where none is in
// flight, and each window is searched exhaustively for the states the key
// may be in after it, starting from those the windows before left. A
// write whose outcome its caller never learnt ends with the simulator's
// trace.KindCallEnd record (no attempt of it can reach the table after
// that), so it is bounded where FromTrace, which serves recorders above the
// network, must let it apply at any later time. A window too large for its
// search budget makes its key unknown, never a pass. cmd/live's histories
// are checked with FromTrace and Check.
//
// # Results
//
// Check returns Result: Ok only if every key's history is linearizable and
// no check timed out (Unknown, which is not a pass), the keys found not
// linearizable (Illegal), and a summary. Visualize writes porcupine's
// self-contained HTML page for one key's history, showing the longest
// linearizable prefixes and the row's state after each step.
package linearizability
