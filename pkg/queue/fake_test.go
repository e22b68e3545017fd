package queue

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fakeSQS is the one in-memory SQS the unit tests of this package share. It
// behaves like AWS where dlqctl's safety depends on it:
//
//   - every receive gives a message a new receipt handle (long, base64,
//     "AQEB…" like AWS's); older handles go stale;
//   - DeleteMessageBatch with a stale handle SUCCEEDS WITHOUT DELETING (AWS
//     documents that it may); with an unknown handle it fails with
//     ReceiptHandleIsInvalid, echoing the handle in the message as AWS does;
//   - ChangeMessageVisibilityBatch with a stale handle fails with
//     InvalidParameterValue "Value <handle> for parameter ReceiptHandle is
//     invalid", on a deleted message with ReceiptHandleIsInvalid, on a
//     visible one with MessageNotInflight.
//
// Tests inject latency (delay), hold calls (before), fail whole calls
// (callErr) or entries (entryFail), and read what was applied.
type fakeSQS struct {
	API // unused methods panic

	delay time.Duration
	// before, when set, runs at the start of every batch call (op is
	// "ChangeMessageVisibilityBatch" or "DeleteMessageBatch").
	before func(op string, handles []string)
	// callErr, when set, may fail a whole call.
	callErr func(op string, handles []string) error
	// entryFail, when set, may fail one entry before the fake looks at it.
	entryFail func(op, handle string) *types.BatchResultErrorEntry

	mu          sync.Mutex
	msgs        map[string]*fakeMsg // by id
	order       []string
	byHandle    map[string]string // every handle ever issued -> id
	seq         int
	calls       map[string]int
	inFlight    int
	maxInFlight int
	// visChanges lists applied visibility changes in order: "<id>=<secs>".
	visChanges []string
	// visCalls lists the ids of each ChangeMessageVisibilityBatch call.
	visCalls [][]string
}

type fakeMsg struct {
	id, body  string
	handle    string
	visibleAt time.Time
	deleted   bool
	receives  int
}

func newFakeSQS() *fakeSQS {
	return &fakeSQS{msgs: map[string]*fakeMsg{}, byHandle: map[string]string{}, calls: map[string]int{}}
}

// put adds visible messages with the given ids.
func (f *fakeSQS) put(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		f.msgs[id] = &fakeMsg{id: id, body: "body of " + id}
		f.order = append(f.order, id)
	}
}

// handleFor returns a new AWS-like receipt handle for id (caller holds mu).
func (f *fakeSQS) handleFor(id string) string {
	f.seq++
	raw := fmt.Sprintf("%s|%d|%s", id, f.seq, strings.Repeat("x", 200))
	h := "AQEB" + base64.StdEncoding.EncodeToString([]byte(raw))
	f.byHandle[h] = id
	return h
}

// receive receives up to max visible messages, hiding them for vis.
func (f *fakeSQS) receive(max int, vis time.Duration) []*Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	var out []*Message
	for _, id := range f.order {
		m := f.msgs[id]
		if m.deleted || now.Before(m.visibleAt) {
			continue
		}
		m.handle = f.handleFor(id)
		m.visibleAt = now.Add(vis)
		m.receives++
		out = append(out, &Message{Record: Record{MessageID: id, Body: m.body}, ReceiptHandle: m.handle, ReceivedAt: now})
		if len(out) == max {
			break
		}
	}
	return out
}

// expire ends the visibility of ids now (as if their timeout ran out).
func (f *fakeSQS) expire(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		f.msgs[id].visibleAt = time.Time{}
	}
}

func (f *fakeSQS) isDeleted(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msgs[id].deleted
}

func (f *fakeSQS) isVisible(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.msgs[id]
	return !m.deleted && !time.Now().Before(m.visibleAt)
}

func (f *fakeSQS) callCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeSQS) resetMaxConcurrent() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxInFlight = 0
}

func (f *fakeSQS) maxConcurrent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInFlight
}

// enter counts a call in flight and applies the injected hooks.
func (f *fakeSQS) enter(ctx context.Context, op string, handles []string) error {
	f.mu.Lock()
	f.calls[op]++
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	if f.before != nil {
		f.before(op, handles)
	}
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			f.leave()
			return ctx.Err()
		case <-t.C:
		}
	}
	if f.callErr != nil {
		if err := f.callErr(op, handles); err != nil {
			f.leave()
			return err
		}
	}
	return nil
}

func (f *fakeSQS) leave() {
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
}

func invalidHandle(id *string, h string) types.BatchResultErrorEntry {
	return types.BatchResultErrorEntry{Id: id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true,
		Message: aws.String(fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", h))}
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	handles := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		handles[i] = aws.ToString(e.ReceiptHandle)
	}
	const op = "ChangeMessageVisibilityBatch"
	if err := f.enter(ctx, op, handles); err != nil {
		return nil, err
	}
	defer f.leave()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	now := time.Now()
	var ids []string
	for _, e := range in.Entries {
		h := aws.ToString(e.ReceiptHandle)
		if f.entryFail != nil {
			if fe := f.entryFail(op, h); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		id, known := f.byHandle[h]
		ids = append(ids, id)
		m := f.msgs[id]
		switch {
		case !known || m.deleted:
			out.Failed = append(out.Failed, invalidHandle(e.Id, h))
		case h != m.handle:
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true,
				Message: aws.String("Value " + h + " for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.")})
		case !now.Before(m.visibleAt):
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("AWS.SimpleQueueService.MessageNotInflight"), SenderFault: true,
				Message: aws.String("Message is not in flight.")})
		default:
			m.visibleAt = now.Add(time.Duration(e.VisibilityTimeout) * time.Second)
			f.visChanges = append(f.visChanges, fmt.Sprintf("%s=%d", id, e.VisibilityTimeout))
			out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
		}
	}
	f.visCalls = append(f.visCalls, ids)
	return out, nil
}

func (f *fakeSQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	handles := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		handles[i] = aws.ToString(e.ReceiptHandle)
	}
	const op = "DeleteMessageBatch"
	if err := f.enter(ctx, op, handles); err != nil {
		return nil, err
	}
	defer f.leave()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		h := aws.ToString(e.ReceiptHandle)
		if f.entryFail != nil {
			if fe := f.entryFail(op, h); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		id, known := f.byHandle[h]
		switch m := f.msgs[id]; {
		case !known:
			out.Failed = append(out.Failed, invalidHandle(e.Id, h))
		case h == m.handle:
			m.deleted = true
			out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
		default:
			// A stale handle: AWS may answer success without deleting.
			out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
		}
	}
	return out, nil
}
