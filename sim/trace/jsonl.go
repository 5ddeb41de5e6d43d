package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// AppendJSON appends r as one JSON object (no newline) to b. Times are
// integer nanoseconds; zero fields are left out.
func AppendJSON(b []byte, r *Record) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, int64(r.T), 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, r.Kind.String())
	if r.Worker >= 0 {
		b = append(b, `,"worker":`...)
		b = strconv.AppendInt(b, int64(r.Worker), 10)
	}
	if r.Proc >= 0 {
		b = append(b, `,"proc":`...)
		b = strconv.AppendInt(b, int64(r.Proc), 10)
	}
	str := func(name, v string) {
		if v != "" {
			b = append(b, ',', '"')
			b = append(b, name...)
			b = append(b, '"', ':')
			b = strconv.AppendQuote(b, v)
		}
	}
	num := func(name string, v int64) {
		if v != 0 {
			b = append(b, ',', '"')
			b = append(b, name...)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, v, 10)
		}
	}
	str("owner", r.Owner)
	num("mono", int64(r.Mono))
	num("wall", r.Wall)
	str("key", r.Key)
	num("counter", r.Counter)
	str("checkpoint", r.Checkpoint.Sequence)
	num("subseq", r.Checkpoint.SubSequence)
	str("first", r.First)
	str("last", r.Last)
	num("first_sub", int64(r.FirstSub))
	num("last_sub", int64(r.LastSub))
	num("count", int64(r.Count))
	str("reason", r.Reason)
	str("previous", r.Previous)
	num("call", int64(r.Call))
	if r.Op != 0 {
		str("op", r.Op.String())
	}
	num("sent", int64(r.Sent))
	num("applied", int64(r.Applied))
	str("outcome", r.Outcome)
	str("fault", r.Fault)
	str("exp_owner", r.ExpOwner)
	num("exp_counter", r.ExpCounter)
	if r.Unconditional {
		b = append(b, `,"unconditional":true`...)
	}
	str("row_owner", r.RowOwner)
	str("parent", r.Parent)
	str("parent2", r.Parent2)
	return append(b, '}')
}

type jsonRecord struct {
	Seq           uint64 `json:"seq"`
	T             int64  `json:"t"`
	Kind          string `json:"kind"`
	Worker        *int32 `json:"worker"`
	Proc          *int32 `json:"proc"`
	Owner         string `json:"owner"`
	Mono          int64  `json:"mono"`
	Wall          int64  `json:"wall"`
	Key           string `json:"key"`
	Counter       int64  `json:"counter"`
	Checkpoint    string `json:"checkpoint"`
	SubSeq        int64  `json:"subseq"`
	First         string `json:"first"`
	Last          string `json:"last"`
	FirstSub      int32  `json:"first_sub"`
	LastSub       int32  `json:"last_sub"`
	Count         int    `json:"count"`
	Reason        string `json:"reason"`
	Previous      string `json:"previous"`
	Call          uint64 `json:"call"`
	Op            string `json:"op"`
	Sent          int64  `json:"sent"`
	Applied       int64  `json:"applied"`
	Outcome       string `json:"outcome"`
	Fault         string `json:"fault"`
	ExpOwner      string `json:"exp_owner"`
	ExpCounter    int64  `json:"exp_counter"`
	Unconditional bool   `json:"unconditional"`
	RowOwner      string `json:"row_owner"`
	Parent        string `json:"parent"`
	Parent2       string `json:"parent2"`
}

// ParseJSON decodes one line written by AppendJSON.
func ParseJSON(line []byte) (Record, error) {
	var j jsonRecord
	if err := json.Unmarshal(line, &j); err != nil {
		return Record{}, err
	}
	k, ok := ParseKind(j.Kind)
	if !ok {
		return Record{}, fmt.Errorf("trace: unknown kind %q", j.Kind)
	}
	r := Record{Seq: j.Seq, T: time.Duration(j.T), Kind: k, Worker: -1, Proc: -1,
		Owner: j.Owner, Mono: time.Duration(j.Mono), Wall: j.Wall, Key: j.Key, Counter: j.Counter,
		Checkpoint: engine.Checkpoint{Sequence: j.Checkpoint, SubSequence: j.SubSeq},
		First:      j.First, Last: j.Last, FirstSub: j.FirstSub, LastSub: j.LastSub, Count: j.Count, Reason: j.Reason, Previous: j.Previous,
		Call: j.Call, Sent: time.Duration(j.Sent), Applied: time.Duration(j.Applied),
		Outcome: j.Outcome, Fault: j.Fault, ExpOwner: j.ExpOwner, ExpCounter: j.ExpCounter,
		Unconditional: j.Unconditional, RowOwner: j.RowOwner, Parent: j.Parent, Parent2: j.Parent2}
	if j.Worker != nil {
		r.Worker = *j.Worker
	}
	if j.Proc != nil {
		r.Proc = *j.Proc
	}
	if j.Op != "" {
		for o := engine.Op(1); o < 64; o++ {
			if o.String() == j.Op {
				r.Op = o
			}
		}
		if r.Op == 0 {
			return Record{}, fmt.Errorf("trace: unknown op %q", j.Op)
		}
	}
	return r, nil
}

// Writer writes records as JSON Lines.
type Writer struct {
	w   *bufio.Writer
	buf []byte
	err error
}

// NewWriter returns a Writer on w. Call Flush at the end.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 1<<16)} }

// Write writes one record.
func (w *Writer) Write(r *Record) error {
	if w.err != nil {
		return w.err
	}
	w.buf = AppendJSON(w.buf[:0], r)
	w.buf = append(w.buf, '\n')
	_, w.err = w.w.Write(w.buf)
	return w.err
}

// Flush flushes buffered lines.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.w.Flush()
	return w.err
}

// ReadAll reads a JSON Lines history.
func ReadAll(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		rec, err := ParseJSON(line)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// String returns a one-line human form of r, for excerpts.
func (r *Record) String() string {
	b := make([]byte, 0, 128)
	b = append(b, fmtDur(r.T)...)
	b = append(b, ' ')
	if r.Owner != "" {
		b = append(b, r.Owner...)
		if r.Proc >= 0 {
			b = append(b, '#')
			b = strconv.AppendInt(b, int64(r.Proc), 10)
		}
		b = append(b, ' ')
	}
	b = append(b, r.Kind.String()...)
	if r.Key != "" {
		b = append(b, ' ')
		b = append(b, r.Key...)
	}
	if r.Op != 0 {
		b = append(b, ' ')
		b = append(b, r.Op.String()...)
	}
	if r.Reason != "" {
		b = append(b, " ("...)
		b = append(b, r.Reason...)
		b = append(b, ')')
	}
	if r.Checkpoint.Sequence != "" {
		b = append(b, " cp="...)
		b = append(b, r.Checkpoint.String()...)
	}
	if r.First != "" || r.Last != "" {
		b = append(b, ' ')
		b = append(b, r.First...)
		if r.FirstSub != 0 || r.LastSub != 0 {
			b = append(b, '/')
			b = strconv.AppendInt(b, int64(r.FirstSub), 10)
		}
		b = append(b, ".."...)
		b = append(b, r.Last...)
		if r.FirstSub != 0 || r.LastSub != 0 {
			b = append(b, '/')
			b = strconv.AppendInt(b, int64(r.LastSub), 10)
		}
	}
	if r.Count != 0 {
		b = append(b, " n="...)
		b = strconv.AppendInt(b, int64(r.Count), 10)
	}
	if r.Counter != 0 {
		b = append(b, " counter="...)
		b = strconv.AppendInt(b, r.Counter, 10)
	}
	if r.ExpOwner != "" || r.ExpCounter != 0 {
		b = append(b, " expect="...)
		b = append(b, r.ExpOwner...)
		b = append(b, '/')
		b = strconv.AppendInt(b, r.ExpCounter, 10)
	}
	if r.Unconditional {
		b = append(b, " unconditional"...)
	}
	if r.RowOwner != "" {
		b = append(b, " row-owner="...)
		b = append(b, r.RowOwner...)
	}
	if r.Outcome != "" {
		b = append(b, " -> "...)
		b = append(b, r.Outcome...)
	}
	if r.Fault != "" {
		b = append(b, " ["...)
		b = append(b, r.Fault...)
		b = append(b, ']')
	}
	if r.Previous != "" {
		b = append(b, " prev="...)
		b = append(b, r.Previous...)
	}
	if r.Parent != "" || r.Parent2 != "" {
		b = append(b, " parents="...)
		b = append(b, r.Parent...)
		b = append(b, ',')
		b = append(b, r.Parent2...)
	}
	return string(b)
}

func fmtDur(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) + "s"
}
