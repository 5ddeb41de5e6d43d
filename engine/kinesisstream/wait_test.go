package kinesisstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/shardlease/shardlease/engine/kinesisstream"
)

// describeSeq is an AdminAPI whose DescribeStream answers from a script,
// then repeats its last answer; the other calls succeed.
type describeSeq struct {
	kinesisstream.AdminAPI // nil: only DescribeStream and CreateStream are called
	answers                []func() (*kinesis.DescribeStreamOutput, error)
	calls                  int
}

func (d *describeSeq) CreateStream(context.Context, *kinesis.CreateStreamInput, ...func(*kinesis.Options)) (*kinesis.CreateStreamOutput, error) {
	return &kinesis.CreateStreamOutput{}, nil
}

func (d *describeSeq) DescribeStream(context.Context, *kinesis.DescribeStreamInput, ...func(*kinesis.Options)) (*kinesis.DescribeStreamOutput, error) {
	i := min(d.calls, len(d.answers)-1)
	d.calls++
	return d.answers[i]()
}

func streamIn(status types.StreamStatus) func() (*kinesis.DescribeStreamOutput, error) {
	return func() (*kinesis.DescribeStreamOutput, error) {
		return &kinesis.DescribeStreamOutput{StreamDescription: &types.StreamDescription{StreamStatus: status}}, nil
	}
}

// TestCreateStreamWaitsOutNotFoundAndCreating: the SDK's StreamExistsWaiter
// fails at once on ResourceNotFoundException; WaitActive waits it out (a
// stream is not visible at once after CreateStream), then CREATING, until
// ACTIVE.
func TestCreateStreamWaitsOutNotFoundAndCreating(t *testing.T) {
	api := &describeSeq{answers: []func() (*kinesis.DescribeStreamOutput, error){
		func() (*kinesis.DescribeStreamOutput, error) {
			return nil, &types.ResourceNotFoundException{Message: aws.String("no stream")}
		},
		streamIn(types.StreamStatusCreating), streamIn(types.StreamStatusActive),
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kinesisstream.CreateStream(ctx, api, "s", 1); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	if api.calls != 3 {
		t.Errorf("DescribeStream called %d times, want 3 (not found, CREATING, ACTIVE)", api.calls)
	}
}

// TestWaitActiveFailsOnOtherErrors: an error other than "not found" ends
// the wait at once, wrapped.
func TestWaitActiveFailsOnOtherErrors(t *testing.T) {
	denied := errors.New("AccessDeniedException: not allowed")
	api := &describeSeq{answers: []func() (*kinesis.DescribeStreamOutput, error){
		func() (*kinesis.DescribeStreamOutput, error) { return nil, denied },
	}}
	err := kinesisstream.WaitActive(context.Background(), api, "s")
	if !errors.Is(err, denied) || api.calls != 1 {
		t.Fatalf("WaitActive = %v after %d calls, want the error after 1", err, api.calls)
	}
}

// TestWaitActiveEndsWithContext: a stream that stays UPDATING ends the
// wait when ctx does.
func TestWaitActiveEndsWithContext(t *testing.T) {
	api := &describeSeq{answers: []func() (*kinesis.DescribeStreamOutput, error){streamIn(types.StreamStatusUpdating)}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := kinesisstream.WaitActive(ctx, api, "s")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "ACTIVE") {
		t.Fatalf("WaitActive = %v, want a wait error wrapping context.DeadlineExceeded", err)
	}
}
