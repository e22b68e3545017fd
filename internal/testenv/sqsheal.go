package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	dlqsqs "github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// A test's own ReceiveMessage can lose its answer: under load the
// connection to the emulator breaks while the client reads a 200 answer
// ("use of closed network connection", aws-sdk-go-v2 #2737), the SDK
// retries the call (#2949), and the messages the server handed out in the
// lost answer stay in flight, held by nobody, for the receive's visibility
// timeout (docs/emulators.md). dlqctl handles that itself (it waits such
// receives out, or reports them); a test that sends a message, receives
// once and counts would fail. A client from Env.SQS straight to a stack
// server therefore heals its receives: when a ReceiveMessage was retried
// after an attempt the server may have carried out, it waits until that
// attempt's messages are visible again and receives once more, adding what
// it gets to the answer (up to MaxNumberOfMessages; what the call did get
// is held through the wait, so it is not received twice; on a FIFO queue
// it is handed back after the wait and the group read again from its
// head, so the answer keeps the group's order). A client through a
// proxy (faultproxy: an Env whose SQSEndpoint is not a stack server's)
// sees lost receives as they are, which is what fault tests inject.

// maxHealWait bounds the wait: a receive with a longer visibility (a
// drain holding what it read for minutes) is left as it is, logged. The
// tests' drains that hold what they read do so for 60 s.
const maxHealWait = 90 * time.Second

// healRounds bounds the extra receives of one call (each may lose its
// answer too).
const healRounds = 3

// healer heals the lost receives of the client whose APIOptions it is in,
// using plain, a client to the same server without it.
type healer struct {
	plain *sqs.Client
	logf  func(format string, args ...any)
}

func (h healer) add(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("dlqctlTestHealLostReceives",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			rin, ok := in.Parameters.(*sqs.ReceiveMessageInput)
			if err != nil || !ok {
				return out, md, err
			}
			res, ok := out.Result.(*sqs.ReceiveMessageOutput)
			if !ok || res == nil || dlqsqs.AttemptsThatMayHaveActed(md) == 0 {
				return out, md, err
			}
			res.Messages = h.heal(ctx, rin, time.Now(), res.Messages)
			return out, md, err
		}), middleware.After)
}

// heal waits out the visibility of a receive that may have lost its
// answer (retried, ended at end) and receives again.
func (h healer) heal(ctx context.Context, in *sqs.ReceiveMessageInput, end time.Time, got []types.Message) []types.Message {
	for round := 0; round < healRounds; round++ {
		vis, err := h.visibility(ctx, in)
		if err != nil {
			h.logf("testenv: a receive from %s was retried and may have lost its answer; its visibility is unknown (%v), not waited for", aws.ToString(in.QueueUrl), err)
			return got
		}
		if vis > maxHealWait {
			h.logf("testenv: a receive from %s was retried and may have lost its answer; its messages are back in %v, not waited for", aws.ToString(in.QueueUrl), vis)
			return got
		}
		h.logf("testenv: a receive from %s was retried and may have lost its answer; waiting %v for its messages to be visible again", aws.ToString(in.QueueUrl), vis)
		// What the call did get stays the caller's: hidden through the
		// wait, then for its own visibility again.
		if err := h.hold(ctx, in.QueueUrl, got, 2*vis+2*time.Second); err != nil {
			h.logf("testenv: holding the messages received from %s through the wait: %v; not waited for", aws.ToString(in.QueueUrl), err)
			return got
		}
		// One second more: the emulators make messages visible again on
		// their next timer tick or receive.
		select {
		case <-ctx.Done():
			return got
		case <-time.After(time.Until(end.Add(vis + time.Second))):
		}
		if strings.HasSuffix(aws.ToString(in.QueueUrl), ".fifo") && len(got) > 0 {
			// A FIFO queue's messages come in their group's order: what
			// the call did get may come after what the lost answer took
			// (an emulator that does not lock the group meanwhile). Hand
			// it back and read from the head again.
			if err := h.hold(ctx, in.QueueUrl, got, 0); err != nil {
				h.logf("testenv: handing back the messages received from %s: %v", aws.ToString(in.QueueUrl), err)
				return got
			}
			got = nil
		}
		max := int32(1)
		if in.MaxNumberOfMessages > 0 {
			max = in.MaxNumberOfMessages
		}
		if int32(len(got)) >= max {
			return got // the caller's next receive gets them
		}
		again := *in
		// A new receive: with the call's FIFO attempt id it would be
		// answered with the messages the call already got.
		again.ReceiveRequestAttemptId = nil
		again.MaxNumberOfMessages = max - int32(len(got))
		if again.WaitTimeSeconds < 1 {
			again.WaitTimeSeconds = 1
		}
		more, err := h.plain.ReceiveMessage(ctx, &again)
		end = time.Now()
		if err != nil {
			h.logf("testenv: receiving again from %s: %v", aws.ToString(in.QueueUrl), err)
			return got
		}
		got = append(got, more.Messages...)
		if dlqsqs.AttemptsThatMayHaveActed(more.ResultMetadata) == 0 {
			return got
		}
	}
	return got
}

// hold sets the visibility of msgs (a receive's answer: at most 10) to d.
func (h healer) hold(ctx context.Context, url *string, msgs []types.Message, d time.Duration) error {
	if len(msgs) == 0 {
		return nil
	}
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(d / time.Second),
		}
	}
	out, err := h.plain.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: entries})
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("%d of %d messages: %s", len(out.Failed), len(msgs), aws.ToString(out.Failed[0].Message))
	}
	return nil
}

// visibility is the receive's visibility timeout: its own, else the queue's.
func (h healer) visibility(ctx context.Context, in *sqs.ReceiveMessageInput) (time.Duration, error) {
	if in.VisibilityTimeout > 0 {
		return time.Duration(in.VisibilityTimeout) * time.Second, nil
	}
	a, err := h.plain.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: in.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		return 0, err
	}
	s, err := strconv.Atoi(a.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		return 0, fmt.Errorf("VisibilityTimeout %q: %w", a.Attributes[string(types.QueueAttributeNameVisibilityTimeout)], err)
	}
	return time.Duration(s) * time.Second, nil
}
