package efoserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/engine"
)

// consumer is one registered stream consumer.
type consumer struct {
	name, stream, streamARN, arn string
	created, deleted             time.Time
}

// pair is what the server remembers of one consumer and shard.
type pair struct {
	lastAttempt, lastSuccess time.Time
	current                  *subscription
}

// status returns c's status at now, "" once it is gone.
func (s *Server) status(c *consumer, now time.Time) string {
	switch {
	case !c.deleted.IsZero() && !now.Before(c.deleted.Add(s.opts.Activation)):
		return ""
	case !c.deleted.IsZero():
		return string(engine.ConsumerDeleting)
	case now.Before(c.created.Add(s.opts.Activation)):
		return string(engine.ConsumerCreating)
	}
	return string(engine.ConsumerActive)
}

// live returns the consumer called name on stream that is not gone at now
// (s.mu held), forgetting one that is.
func (s *Server) live(stream, name string, now time.Time) *consumer {
	c := s.byName[stream+"/"+name]
	if c != nil && s.status(c, now) == "" {
		delete(s.byName, stream+"/"+name)
		delete(s.consumers, c.arn)
		return nil
	}
	return c
}

// streamOf returns the stream name in a stream or consumer ARN
// (arn:aws:kinesis:region:account:stream/NAME[/consumer/...]).
func streamOf(arn string) string {
	_, rest, ok := strings.Cut(arn, ":stream/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// streamExists asks the backend whether stream exists.
func (s *Server) streamExists(stream string) (open int, err error) {
	s.backend(func(b engine.Stream) {
		var shards []engine.Shard
		shards, err = b.ListShards(context.Background(), stream)
		for _, sh := range shards {
			if !sh.Closed() {
				open++
			}
		}
	})
	return open, err
}

type consumerJSON struct {
	ConsumerName              string `json:"ConsumerName"`
	ConsumerARN               string `json:"ConsumerARN"`
	ConsumerStatus            string `json:"ConsumerStatus"`
	ConsumerCreationTimestamp epoch  `json:"ConsumerCreationTimestamp"`
	StreamARN                 string `json:"StreamARN,omitempty"`
}

type consumerInput struct {
	StreamARN    string `json:"StreamARN"`
	ConsumerName string `json:"ConsumerName"`
	ConsumerARN  string `json:"ConsumerARN"`
}

// find returns the consumer an input names (s.mu held).
func (s *Server) find(in consumerInput, now time.Time) *consumer {
	if in.ConsumerARN != "" {
		c := s.consumers[in.ConsumerARN]
		if c == nil {
			return nil
		}
		return s.live(c.stream, c.name, now)
	}
	return s.live(streamOf(in.StreamARN), in.ConsumerName, now)
}

func (s *Server) register(w http.ResponseWriter, body []byte) {
	var in consumerInput
	if err := json.Unmarshal(body, &in); err != nil || in.StreamARN == "" || in.ConsumerName == "" {
		writeError(w, http.StatusBadRequest, "InvalidArgumentException", "RegisterStreamConsumer needs StreamARN and ConsumerName")
		return
	}
	stream := streamOf(in.StreamARN)
	if _, err := s.streamExists(stream); err != nil {
		notFoundOr(w, err, "stream "+stream)
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live(stream, in.ConsumerName, now) != nil {
		writeError(w, http.StatusBadRequest, "ResourceInUseException", "consumer "+in.ConsumerName+" of "+in.StreamARN+" exists")
		return
	}
	n := 0
	for _, c := range s.byName {
		if c.stream == stream {
			n++
		}
	}
	if n >= 20 {
		writeError(w, http.StatusBadRequest, "LimitExceededException", "a stream has at most 20 consumers")
		return
	}
	c := &consumer{name: in.ConsumerName, stream: stream, streamARN: in.StreamARN, created: now,
		arn: in.StreamARN + "/consumer/" + in.ConsumerName + ":" + strconv.FormatInt(now.Unix(), 10)}
	if s.consumers[c.arn] != nil {
		c.arn += "-" + strconv.Itoa(len(s.consumers)) // registered again within the same second
	}
	s.consumers[c.arn] = c
	s.byName[stream+"/"+c.name] = c
	writeJSON(w, map[string]any{"Consumer": s.consumerJSON(c, now, false)})
}

func (s *Server) consumerJSON(c *consumer, now time.Time, withStream bool) consumerJSON {
	out := consumerJSON{ConsumerName: c.name, ConsumerARN: c.arn, ConsumerStatus: s.status(c, now), ConsumerCreationTimestamp: epoch(c.created)}
	if withStream {
		out.StreamARN = c.streamARN
	}
	return out
}

func (s *Server) describeConsumer(w http.ResponseWriter, body []byte) {
	var in consumerInput
	if err := json.Unmarshal(body, &in); err != nil || (in.ConsumerARN == "" && (in.StreamARN == "" || in.ConsumerName == "")) {
		writeError(w, http.StatusBadRequest, "InvalidArgumentException", "DescribeStreamConsumer needs ConsumerARN, or StreamARN and ConsumerName")
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.find(in, now)
	if c == nil {
		writeError(w, http.StatusBadRequest, "ResourceNotFoundException", "no consumer "+in.ConsumerName+in.ConsumerARN)
		return
	}
	writeJSON(w, map[string]any{"ConsumerDescription": s.consumerJSON(c, now, true)})
}

func (s *Server) deregister(w http.ResponseWriter, body []byte) {
	var in consumerInput
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidArgumentException", err.Error())
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.find(in, now)
	switch {
	case c == nil:
		writeError(w, http.StatusBadRequest, "ResourceNotFoundException", "no consumer "+in.ConsumerName+in.ConsumerARN)
		return
	case !c.deleted.IsZero():
		writeError(w, http.StatusBadRequest, "ResourceInUseException", "consumer "+c.name+" is being deleted")
		return
	}
	c.deleted = now
	s.live(c.stream, c.name, now)
	for sub := range s.subs {
		if sub.consumer == c {
			sub.end("ResourceNotFoundException")
		}
	}
	writeJSON(w, map[string]any{})
}

// describeStream answers DescribeStreamSummary from the backend (without
// an upstream): enough for a client to learn the stream's ARN.
func (s *Server) describeStream(w http.ResponseWriter, body []byte) {
	var in struct{ StreamName, StreamARN string }
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidArgumentException", err.Error())
		return
	}
	name := in.StreamName
	if name == "" {
		name = streamOf(in.StreamARN)
	}
	open, err := s.streamExists(name)
	if err != nil {
		notFoundOr(w, err, "stream "+name)
		return
	}
	now := s.now()
	s.mu.Lock()
	n := 0
	for _, c := range s.byName {
		if c.stream == name && s.status(c, now) != "" {
			n++
		}
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"StreamDescriptionSummary": map[string]any{
		"StreamName": name, "StreamARN": "arn:aws:kinesis:" + s.opts.Region + ":" + s.opts.Account + ":stream/" + name,
		"StreamStatus": "ACTIVE", "RetentionPeriodHours": 24, "StreamCreationTimestamp": epoch(time.Unix(1_700_000_000, 0)),
		"EnhancedMonitoring": []any{}, "OpenShardCount": open, "ConsumerCount": n,
	}})
}

// notFoundOr answers a backend error: not found as ResourceNotFoundException,
// anything else as an internal failure.
func notFoundOr(w http.ResponseWriter, err error, what string) {
	if errors.Is(err, engine.ErrNotFound) {
		writeError(w, http.StatusBadRequest, "ResourceNotFoundException", what+" not found: "+err.Error())
		return
	}
	if errors.Is(err, engine.ErrThrottled) {
		writeError(w, http.StatusBadRequest, "LimitExceededException", err.Error())
		return
	}
	writeError(w, http.StatusInternalServerError, "InternalFailure", err.Error())
}
