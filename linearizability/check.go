package linearizability

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Config is a check's settings. The zero value checks without a time
// limit, from an empty table.
type Config struct {
	// Timeout bounds the whole check (0: none). Keys still unchecked or
	// being checked when it passes are reported as timed out.
	Timeout time.Duration
	// Initial is the table's content when the history began (nil: empty).
	// Rows must be in the form the history's rows take (TraceRowOf for a
	// history read from a trace, RowOf otherwise).
	Initial []Row
	// Parallelism is how many keys are checked at once (0: GOMAXPROCS).
	Parallelism int
}

// Result is the verdict of a check.
type Result struct {
	// Ok: every key's history is linearizable. A check that timed out is
	// not Ok.
	Ok bool
	// Unknown: some key's check timed out before it found either a
	// linearization or proof that there is none. It is not a pass.
	Unknown bool
	// Illegal are the keys whose histories are not linearizable, sorted.
	// Visualize shows why.
	Illegal []string
	// TimedOut are the keys whose checks timed out, sorted.
	TimedOut []string
	// Info is a one-line human summary.
	Info string

	// Ops is the number of operations checked (a scan counts once per key
	// it observed), Keys the number of keys, UnknownWrites the writes of
	// unknown outcome among them. Skipped is the number of operations of
	// the history left out: throttled calls, reads of unknown outcome,
	// eventually consistent scans.
	Ops, Keys, UnknownWrites, Skipped int
	// Elapsed is how long the check took.
	Elapsed time.Duration
}

// Check checks that history h is linearizable, with a time limit (0:
// none). It is Config{Timeout: timeout}.Check(h).
func Check(h []Op, timeout time.Duration) (Result, error) {
	return Config{Timeout: timeout}.Check(h)
}

// Check checks that history h is linearizable, key by key. It returns an
// error only for a history it cannot interpret (see Op).
func (c Config) Check(h []Op) (Result, error) {
	start := time.Now()
	ops, skipped, err := operations(h, c.Initial)
	if err != nil {
		return Result{}, err
	}
	parts := partition(ops)
	res := Result{Keys: len(parts), Skipped: skipped}
	for i := range parts {
		res.Ops += len(parts[i].ops)
		for _, op := range parts[i].ops {
			if op.Output.(*keyOutput).outcome == OutcomeUnknown {
				res.UnknownWrites++
			}
		}
	}
	var deadline time.Time
	if c.Timeout > 0 {
		deadline = start.Add(c.Timeout)
	}
	verdicts := make([]porcupine.CheckResult, len(parts))
	n := c.Parallelism
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	n = min(n, len(parts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var limit time.Duration
				if !deadline.IsZero() {
					limit = time.Until(deadline)
					if limit <= 0 {
						verdicts[i] = porcupine.Unknown
						continue
					}
				}
				verdicts[i] = porcupine.CheckOperationsTimeout(keyModel, parts[i].ops, limit)
			}
		}()
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, v := range verdicts {
		switch v {
		case porcupine.Illegal:
			res.Illegal = append(res.Illegal, parts[i].key)
		case porcupine.Unknown:
			res.TimedOut = append(res.TimedOut, parts[i].key)
		}
	}
	res.Unknown = len(res.TimedOut) > 0
	res.Ok = len(res.Illegal) == 0 && !res.Unknown
	res.Elapsed = time.Since(start)
	res.Info = res.summary()
	return res, nil
}

func (r *Result) summary() string {
	var b strings.Builder
	switch {
	case len(r.Illegal) > 0:
		fmt.Fprintf(&b, "NOT linearizable: %d of %d keys (%s)", len(r.Illegal), r.Keys, list(r.Illegal))
		if r.Unknown {
			fmt.Fprintf(&b, "; %d keys timed out", len(r.TimedOut))
		}
	case r.Unknown:
		fmt.Fprintf(&b, "UNKNOWN: the check of %d of %d keys timed out (%s)", len(r.TimedOut), r.Keys, list(r.TimedOut))
	default:
		fmt.Fprintf(&b, "linearizable: %d keys", r.Keys)
	}
	fmt.Fprintf(&b, "; %d operations checked (%d writes of unknown outcome), %d left out, in %v",
		r.Ops, r.UnknownWrites, r.Skipped, r.Elapsed.Round(time.Microsecond))
	return b.String()
}

func list(keys []string) string {
	if len(keys) > 5 {
		return strings.Join(keys[:5], ", ") + ", ..."
	}
	return strings.Join(keys, ", ")
}

// Visualize writes porcupine's self-contained HTML page for the history of
// key (typically one of Result.Illegal): the operations on a timeline,
// the longest linearizable prefixes found, and the row's state after each
// step. An empty key shows every key (large for long histories).
func Visualize(w io.Writer, h []Op, key string) error {
	return Config{}.Visualize(w, h, key)
}

// Visualize is the package's Visualize with c's initial rows and time
// limit.
func (c Config) Visualize(w io.Writer, h []Op, key string) error {
	ops, _, err := operations(h, c.Initial)
	if err != nil {
		return err
	}
	if key == "" {
		_, info := porcupine.CheckOperationsVerbose(Model(), ops, c.Timeout)
		return porcupine.Visualize(Model(), info, w)
	}
	parts := partition(ops)
	i := sort.Search(len(parts), func(i int) bool { return parts[i].key >= key })
	if i == len(parts) || parts[i].key != key {
		return fmt.Errorf("linearizability: no operation on key %q", key)
	}
	_, info := porcupine.CheckOperationsVerbose(keyModel, parts[i].ops, c.Timeout)
	first := parts[i].ops[0].Call
	for _, op := range parts[i].ops {
		first = min(first, op.Call)
	}
	info.AddAnnotations([]porcupine.Annotation{{Tag: "lease key", Start: first, Description: key}})
	return porcupine.Visualize(keyModel, info, w)
}
