package efoserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/shardlease/shardlease/engine"
)

// subscription is one SubscribeToShard event stream being pushed.
type subscription struct {
	consumer *consumer
	stream   string
	shard    string
	started  time.Time

	once    sync.Once
	stop    chan struct{}
	excType string // the exception to end with ("" = a normal end)
}

// end makes the subscription stop with exception excType ("" = close the
// stream normally). It reports whether it was running.
func (sub *subscription) end(excType string) bool {
	ended := false
	sub.once.Do(func() {
		sub.excType = excType
		close(sub.stop)
		ended = true
	})
	return ended
}

type subscribeInput struct {
	ConsumerARN      string `json:"ConsumerARN"`
	ShardID          string `json:"ShardId"`
	StartingPosition struct {
		Type           string `json:"Type"`
		SequenceNumber string `json:"SequenceNumber"`
		Timestamp      *epoch `json:"Timestamp"`
	} `json:"StartingPosition"`
}

// subscribe answers SubscribeToShard: its checks are those of Kinesis
// (consumer ACTIVE, one subscription per consumer and shard within the
// in-use window, one call per second), then it pushes events until the
// lifetime ends, a newer subscription takes over, the shard ends or the
// client goes away.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, body []byte) {
	var in subscribeInput
	if err := json.Unmarshal(body, &in); err != nil || in.ConsumerARN == "" || in.ShardID == "" || in.StartingPosition.Type == "" {
		writeError(w, http.StatusBadRequest, "InvalidArgumentException", "SubscribeToShard needs ConsumerARN, ShardId and StartingPosition")
		return
	}
	pos := engine.Position{Type: engine.IteratorType(in.StartingPosition.Type), Sequence: in.StartingPosition.SequenceNumber}
	if in.StartingPosition.Timestamp != nil {
		pos.Timestamp = time.Time(*in.StartingPosition.Timestamp)
	}
	now := s.now()
	s.mu.Lock()
	if s.rejects > 0 {
		s.rejects--
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, s.rejectAs, "injected by efoserver.RejectSubscribes")
		return
	}
	c := s.consumers[in.ConsumerARN]
	if c != nil {
		c = s.live(c.stream, c.name, now)
	}
	if c == nil {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "ResourceNotFoundException", "no consumer "+in.ConsumerARN)
		return
	}
	if st := s.status(c, now); st != string(engine.ConsumerActive) {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "ResourceInUseException", "consumer "+c.name+" is "+st)
		return
	}
	key := c.arn + " " + in.ShardID
	p := s.pairs[key]
	if p == nil {
		p = &pair{}
		s.pairs[key] = p
	}
	last := p.lastAttempt
	p.lastAttempt = now
	if s.opts.MinSubscribeInterval > 0 && !last.IsZero() && now.Sub(last) < s.opts.MinSubscribeInterval {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "LimitExceededException", "one SubscribeToShard per second per consumer and shard")
		return
	}
	if !p.lastSuccess.IsZero() && now.Sub(p.lastSuccess) < s.opts.InUseWindow {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "ResourceInUseException", "another subscription of "+c.name+" to "+in.ShardID+" began "+now.Sub(p.lastSuccess).String()+" ago")
		return
	}
	s.mu.Unlock()

	var it string
	var err error
	s.backend(func(b engine.Stream) { it, err = b.GetShardIterator(r.Context(), c.stream, in.ShardID, pos) })
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrThrottled) {
			notFoundOr(w, err, "shard "+in.ShardID+" of "+c.stream)
		} else {
			writeError(w, http.StatusBadRequest, "InvalidArgumentException", err.Error())
		}
		return
	}

	sub := &subscription{consumer: c, stream: c.stream, shard: in.ShardID, started: now, stop: make(chan struct{})}
	s.mu.Lock()
	if old := p.current; old != nil {
		old.end("ResourceInUseException")
	}
	p.current, p.lastSuccess = sub, now
	s.subs[sub] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		if p.current == sub {
			p.current = nil
		}
		s.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-RequestId", "efoserver")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), enc: eventstream.NewEncoder()}
	if sw.event("initial-response", []byte("{}")) != nil {
		return
	}
	s.push(r.Context(), sw, sub, it, pos)
}

// push reads the backend from iterator it and writes events until the
// subscription ends.
func (s *Server) push(ctx context.Context, sw *streamWriter, sub *subscription, it string, pos engine.Position) {
	cont := ""
	lastEvent := s.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.stop:
			if sub.excType != "" {
				_ = sw.exception(sub.excType, "subscription ended: "+sub.excType)
			}
			return
		default:
		}
		if now := s.now(); !now.Before(sub.started.Add(s.opts.Lifetime)) {
			return // the lifetime is over: close the stream
		}
		var page engine.RecordsPage
		var err error
		s.backend(func(b engine.Stream) { page, err = b.GetRecords(ctx, it, 10000) })
		switch {
		case errors.Is(err, engine.ErrExpiredIterator):
			next := pos
			if cont != "" {
				next = engine.Position{Type: engine.IterAfterSequenceNumber, Sequence: cont}
			}
			s.backend(func(b engine.Stream) { it, err = b.GetShardIterator(ctx, sub.stream, sub.shard, next) })
			if err != nil {
				s.wait(ctx, sub)
			}
			continue
		case errors.Is(err, engine.ErrNotFound):
			_ = sw.exception("ResourceNotFoundException", err.Error())
			return
		case err != nil:
			s.wait(ctx, sub)
			continue
		}
		end := page.NextIterator == ""
		recs := page.Records
		for len(recs) > 0 || end {
			n, size := 0, 0
			for n < len(recs) && (n == 0 || size+len(recs[n].Data) <= s.opts.MaxEventBytes) {
				size += len(recs[n].Data)
				n++
			}
			ev := eventJSON{Records: make([]recordJSON, 0, n), MillisBehindLatest: page.MillisBehind}
			for _, r := range recs[:n] {
				ev.Records = append(ev.Records, recordJSON{SequenceNumber: r.Sequence, PartitionKey: r.PartitionKey, Data: r.Data, ApproximateArrivalTimestamp: epoch(r.Arrival)})
			}
			recs = recs[n:]
			if n > 0 {
				cont = ev.Records[n-1].SequenceNumber
			}
			if end && len(recs) == 0 {
				ev.ChildShards = s.childShards(ctx, sub, page.ChildShards)
				ev.ContinuationSequenceNumber = nil
				_ = sw.json(ev)
				return
			}
			c := cont
			ev.ContinuationSequenceNumber = &c
			if sw.json(ev) != nil {
				return
			}
			lastEvent = s.now()
		}
		it = page.NextIterator
		if len(page.Records) > 0 {
			continue
		}
		if cont != "" && !s.now().Before(lastEvent.Add(s.opts.Heartbeat)) {
			c := cont
			if sw.json(eventJSON{Records: []recordJSON{}, ContinuationSequenceNumber: &c}) != nil {
				return
			}
			lastEvent = s.now()
		}
		s.wait(ctx, sub)
	}
}

// wait pauses a subscription for one poll interval of real time.
func (s *Server) wait(ctx context.Context, sub *subscription) {
	t := time.NewTimer(s.opts.Poll)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-sub.stop:
	}
}

// childShards returns the children at the end of a shard: those GetRecords
// returned, or (kinesalite returns none) those ListShards shows.
func (s *Server) childShards(ctx context.Context, sub *subscription, got []engine.Shard) []childJSON {
	kids := got
	if len(kids) == 0 {
		var shards []engine.Shard
		s.backend(func(b engine.Stream) { shards, _ = b.ListShards(ctx, sub.stream) })
		for _, sh := range shards {
			if slices.Contains(sh.ParentIDs(), sub.shard) {
				kids = append(kids, sh)
			}
		}
	}
	out := []childJSON{}
	for _, k := range kids {
		c := childJSON{ShardID: k.ID, ParentShards: k.ParentIDs()}
		c.HashKeyRange.StartingHashKey, c.HashKeyRange.EndingHashKey = k.StartingHashKey, k.EndingHashKey
		out = append(out, c)
	}
	return out
}

type recordJSON struct {
	SequenceNumber              string `json:"SequenceNumber"`
	ApproximateArrivalTimestamp epoch  `json:"ApproximateArrivalTimestamp"`
	Data                        []byte `json:"Data"`
	PartitionKey                string `json:"PartitionKey"`
}

type childJSON struct {
	ShardID      string   `json:"ShardId"`
	ParentShards []string `json:"ParentShards"`
	HashKeyRange struct {
		StartingHashKey string `json:"StartingHashKey"`
		EndingHashKey   string `json:"EndingHashKey"`
	} `json:"HashKeyRange"`
}

type eventJSON struct {
	Records                    []recordJSON `json:"Records"`
	ContinuationSequenceNumber *string      `json:"ContinuationSequenceNumber,omitempty"`
	MillisBehindLatest         int64        `json:"MillisBehindLatest"`
	ChildShards                []childJSON  `json:"ChildShards,omitempty"`
}

// streamWriter writes event-stream messages to a response, flushing each.
type streamWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	enc *eventstream.Encoder
}

func (sw *streamWriter) write(m eventstream.Message) error {
	if err := sw.enc.Encode(sw.w, m); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// event writes an event message of type eventType with a JSON payload.
func (sw *streamWriter) event(eventType string, payload []byte) error {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("event"))
	m.Headers.Set(":event-type", eventstream.StringValue(eventType))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Payload = payload
	return sw.write(m)
}

func (sw *streamWriter) json(ev eventJSON) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return sw.event("SubscribeToShardEvent", b)
}

// exception writes an exception message of type excType.
func (sw *streamWriter) exception(excType, msg string) error {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue("exception"))
	m.Headers.Set(":exception-type", eventstream.StringValue(excType))
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	b, _ := json.Marshal(map[string]string{"message": strings.TrimSpace(msg)})
	m.Payload = b
	return sw.write(m)
}
