package linearizability

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"
	"github.com/shardlease/shardlease/engine"
)

// keyInput is one operation's part in one key's history: a single-key
// call, or a consistent scan's observation of one key.
type keyInput struct {
	op            engine.Op // OpGetLease, OpListLeases (a scan's observation), OpCreateLease, OpUpdateLease, OpDeleteLease
	expect        engine.Expect
	unconditional bool
	row           Row
	next          *state // the state after the write applies
}

// keyOutput is what the operation saw of the key.
type keyOutput struct {
	// outcome is OK, ConditionFailed, NotFound (a read found no row) or
	// Unknown (writes only).
	outcome Outcome
	row     Row
	// anyRow: a scan found a row it could not decode; only its existence
	// is known.
	anyRow bool
}

// state is one key's row: absent, or one version.
type state struct {
	present bool
	row     Row
}

// opMeta labels an operation in the visualization.
type opMeta struct {
	index  int // position in the history; -1 for an initial row
	id     uint64
	client int
}

func (m opMeta) String() string {
	if m.index < 0 {
		return "initial row"
	}
	s := fmt.Sprintf("history[%d] client %d", m.index, m.client)
	if m.id != 0 {
		s += fmt.Sprintf(" call #%d", m.id)
	}
	return s
}

// step is the sequential specification of one row of a DynamoDB-like
// table whose writes are conditional on (owner, counter). Writes of
// unknown outcome apply if their condition holds where they are placed in
// the order; they can always be placed last (their Return is after every
// other operation's), where applying them changes nothing anyone saw, so
// this also covers the case that they never applied.
//
// States are immutable and shared: step returns s itself or the write's
// precomputed next state, so it allocates nothing.
func step(s *state, in *keyInput, out *keyOutput) (bool, *state) {
	var cond bool
	switch in.op {
	case engine.OpGetLease, engine.OpListLeases:
		switch out.outcome {
		case OutcomeOK:
			if out.anyRow {
				return s.present, s
			}
			return s.present && s.row == out.row, s
		case OutcomeNotFound:
			return !s.present, s
		}
		return false, s
	case engine.OpCreateLease:
		cond = !s.present
	case engine.OpUpdateLease, engine.OpDeleteLease:
		cond = s.present && (in.unconditional || (s.row.Owner == in.expect.Owner && s.row.Counter == in.expect.Counter))
	default:
		return false, s
	}
	switch out.outcome {
	case OutcomeOK:
		if cond {
			return true, in.next
		}
		return false, s
	case OutcomeConditionFailed:
		return !cond, s
	case OutcomeUnknown:
		if cond {
			return true, in.next
		}
		return true, s
	}
	return false, s
}

// absent is the state of a key without a row.
var absent = &state{}

var hashSeed = maphash.MakeSeed()

func hashState(s *state) uint64 {
	if !s.present {
		return 0
	}
	return maphash.String(hashSeed, s.row.Owner) ^ uint64(s.row.Counter)*0x9e3779b97f4a7c15 ^ 1
}

func describeState(s *state) string {
	if !s.present {
		return "absent"
	}
	return s.row.String()
}

func describeOp(in *keyInput, out *keyOutput) string {
	var call string
	cond := fmt.Sprintf("if owner=%q counter=%d", in.expect.Owner, in.expect.Counter)
	if in.unconditional {
		cond = "unconditionally"
	}
	switch in.op {
	case engine.OpGetLease, engine.OpListLeases:
		call = "get"
		if in.op == engine.OpListLeases {
			call = "scan"
		}
		switch {
		case out.outcome == OutcomeNotFound:
			return call + " → absent"
		case out.anyRow:
			return call + " → a malformed row"
		}
		return call + " → " + out.row.String()
	case engine.OpCreateLease:
		call = "create(" + in.row.String() + ")"
	case engine.OpUpdateLease:
		call = "update(" + cond + ": " + in.row.String() + ")"
	case engine.OpDeleteLease:
		call = "delete(" + cond + ")"
	default:
		call = in.op.String()
	}
	return call + " → " + out.outcome.String()
}

// keyModel is the model of one key's history (no partitioning).
var keyModel = porcupine.Model{
	Init: func() any { return absent },
	Step: func(s, in, out any) (bool, any) {
		return step(s.(*state), in.(*keyInput), out.(*keyOutput))
	},
	Equal:                     func(a, b any) bool { return *a.(*state) == *b.(*state) },
	Hash:                      func(s any) uint64 { return hashState(s.(*state)) },
	DescribeOperation:         func(in, out any) string { return describeOp(in.(*keyInput), out.(*keyOutput)) },
	DescribeState:             func(s any) string { return describeState(s.(*state)) },
	DescribeOperationMetadata: func(m any) string { return m.(opMeta).String() },
}

// Model returns the porcupine model of the lease table, partitioned by
// lease key. It checks the operations Operations returns:
//
//	ops, err := linearizability.Operations(history, nil)
//	res := porcupine.CheckOperations(linearizability.Model(), ops)
//
// Check does the same, key by key, with a report of which keys failed.
func Model() porcupine.Model {
	m := keyModel
	m.Partition = func(h []porcupine.Operation) [][]porcupine.Operation {
		parts := partition(h)
		out := make([][]porcupine.Operation, len(parts))
		for i := range parts {
			out[i] = parts[i].ops
		}
		return out
	}
	return m
}

// Operations converts a history to porcupine operations for Model: it
// validates every operation, leaves out those that carry no information
// (throttled calls, reads of unknown outcome, eventually consistent
// scans) and adds one initial CreateLease before everything else for each
// row of initial (the table's content when the history began; nil: the
// table was empty). Client ids are renumbered densely from 0 (porcupine's
// visualization needs it).
func Operations(h []Op, initial []Row) ([]porcupine.Operation, error) {
	ops, _, err := operations(h, initial)
	return ops, err
}

// operations is Operations, also counting what it left out.
func operations(h []Op, initial []Row) (ops []porcupine.Operation, skipped int, err error) {
	clients := map[int]int{}
	var ids []int
	minT := int64(0)
	for i := range h {
		if err := h[i].validate(); err != nil {
			return nil, 0, fmt.Errorf("history[%d]: %w", i, err)
		}
		if _, ok := clients[h[i].Client]; !ok {
			clients[h[i].Client] = 0
			ids = append(ids, h[i].Client)
		}
		if i == 0 || h[i].Call < minT {
			minT = h[i].Call
		}
	}
	sort.Ints(ids)
	for i, c := range ids {
		clients[c] = i
	}
	ops = make([]porcupine.Operation, 0, len(h)+len(initial))
	seen := map[string]bool{}
	for _, r := range initial {
		if r.Key == "" || seen[r.Key] {
			return nil, 0, fmt.Errorf("initial rows: empty or repeated key %q", r.Key)
		}
		seen[r.Key] = true
		ops = append(ops, porcupine.Operation{ClientId: len(ids), Call: minT - 1, Return: minT - 1,
			Input: Input{Op: engine.OpCreateLease, Row: r}, Output: Output{Outcome: OutcomeOK}, Metadata: opMeta{index: -1}})
	}
	for i := range h {
		op := &h[i]
		if !checked(op) {
			skipped++
			continue
		}
		ops = append(ops, porcupine.Operation{ClientId: clients[op.Client], Call: op.Call, Return: op.Return,
			Input: op.Input, Output: op.Output, Metadata: opMeta{index: i, id: op.ID, client: op.Client}})
	}
	return ops, skipped, nil
}

// checked reports whether op takes part in the check.
func checked(op *Op) bool {
	switch {
	case op.Output.Outcome == OutcomeThrottled:
		return false // rejected before it applied: no effect, nothing seen
	case !op.Input.Op.IsWrite() && op.Output.Outcome == OutcomeUnknown:
		return false // a read that returned nothing
	case op.Input.Op == engine.OpListLeases && !op.Input.Consistent:
		// An eventually consistent scan may return a row version older
		// than the last acknowledged write: not linearizable by design.
		return false
	}
	return true
}

// Shared (immutable) inputs and outputs of scan observations.
var (
	scanIn        = &keyInput{op: engine.OpListLeases}
	scanAbsent    = &keyOutput{outcome: OutcomeNotFound}
	scanMalformed = &keyOutput{outcome: OutcomeOK, anyRow: true}
)

// keyPart is the history of one key.
type keyPart struct {
	key string
	ops []porcupine.Operation
}

// partition splits a history (from Operations) into one history per key.
// A consistent scan becomes one read per key it returned and one "absent"
// read per other key that the history names: a scan is not atomic across
// keys (a DynamoDB Scan is not a snapshot even when it is consistent), but
// each item it returns or omits was read consistently within the scan's
// window. Writes of unknown outcome get a Return time after every other
// operation of their key.
func partition(h []porcupine.Operation) []keyPart {
	keys := map[string]bool{}
	for i := range h {
		in, out := h[i].Input.(Input), h[i].Output.(Output)
		if in.Op == engine.OpListLeases {
			for _, r := range out.Rows {
				keys[r.Key] = true
			}
			for _, k := range out.Malformed {
				keys[k] = true
			}
		} else {
			keys[in.key()] = true
		}
	}
	keyList := make([]string, 0, len(keys))
	for k := range keys {
		keyList = append(keyList, k)
	}
	sort.Strings(keyList)
	found := map[string]bool{}
	byKey := make(map[string][]porcupine.Operation, len(keys))
	add := func(key string, op *porcupine.Operation, in *keyInput, out *keyOutput) {
		byKey[key] = append(byKey[key], porcupine.Operation{ClientId: op.ClientId, Call: op.Call, Return: op.Return,
			Input: in, Output: out, Metadata: op.Metadata})
	}
	for i := range h {
		op := &h[i]
		in, out := op.Input.(Input), op.Output.(Output)
		switch in.Op {
		case engine.OpListLeases:
			if !in.Consistent || out.Outcome != OutcomeOK {
				continue
			}
			clear(found)
			for _, r := range out.Rows {
				found[r.Key] = true
				add(r.Key, op, scanIn, &keyOutput{outcome: OutcomeOK, row: r})
			}
			for _, k := range out.Malformed {
				found[k] = true
				add(k, op, scanIn, scanMalformed)
			}
			for _, k := range keyList {
				if !found[k] {
					add(k, op, scanIn, scanAbsent)
				}
			}
		case engine.OpGetLease:
			if out.Outcome != OutcomeOK && out.Outcome != OutcomeNotFound {
				continue
			}
			add(in.Key, op, &keyInput{op: in.Op}, &keyOutput{outcome: out.Outcome, row: out.Row})
		default:
			if out.Outcome == OutcomeThrottled {
				continue
			}
			ki := &keyInput{op: in.Op, expect: in.Expect, unconditional: in.Unconditional, next: absent}
			if in.Op != engine.OpDeleteLease {
				ki.row = in.Row
				if ki.row.Key == "" {
					ki.row.Key = in.key()
				}
				ki.next = &state{present: true, row: ki.row}
			}
			add(in.key(), op, ki, &keyOutput{outcome: out.Outcome})
		}
	}
	parts := make([]keyPart, 0, len(byKey))
	for k, ops := range byKey {
		end := ops[0].Call
		for i := range ops {
			end = max(end, ops[i].Call)
			if ops[i].Output.(*keyOutput).outcome != OutcomeUnknown {
				end = max(end, ops[i].Return)
			}
		}
		for i := range ops {
			if ops[i].Output.(*keyOutput).outcome == OutcomeUnknown {
				ops[i].Return = end + 1
			}
		}
		parts = append(parts, keyPart{key: k, ops: ops})
	}
	slices.SortFunc(parts, func(a, b keyPart) int { return cmp.Compare(a.key, b.key) })
	return parts
}
