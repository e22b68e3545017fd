// Package sqsfake is dlqctl's one in-memory SQS for unit tests. *SQS
// implements the narrow SQS API of pkg/broker/sqs (sqs.API) and behaves like
// AWS where dlqctl's safety depends on it:
//
//   - every receive gives a message a new receipt handle (long, base64,
//     "AQEB…" like AWS's); older handles go stale;
//   - DeleteMessageBatch with a stale handle SUCCEEDS WITHOUT DELETING (AWS
//     documents that it may); with an unknown handle, or one of a deleted
//     message, it fails with ReceiptHandleIsInvalid, echoing the handle in
//     the message as AWS does;
//   - ChangeMessageVisibilityBatch with a stale handle fails with
//     InvalidParameterValue "Value <handle> for parameter ReceiptHandle is
//     invalid", on a deleted message with ReceiptHandleIsInvalid, on a
//     visible one with MessageNotInflight; visibility never reaches past
//     12 h from the receive;
//   - FIFO queues lock message groups: no message of a group is returned
//     while another message of that group is in flight, and a receive may
//     return several messages of one group, in order;
//   - ApproximateNumberOfMessages counts visible messages only (as AWS and
//     moto do; Options.CountsIncludeInFlight imitates local-aws-sqs);
//   - SendMessageBatch answers per entry; FIFO queues drop a send whose
//     deduplication id was seen in the last 5 minutes (answering success
//     with the first message's id, as AWS does);
//   - batches hold 1 to 10 entries with distinct ids, at most 1 MiB.
//
// Faults and observation: a delay before every call is applied (SetDelay)
// and one after it was applied, before its answer (SetAnswerDelay); hooks
// that hold calls (SetBefore) or a delete's answer (SetDeleteAnswered),
// fail whole calls (SetCallErr) or single entries (SetEntryFail,
// SetSendFail); lost receive answers (LoseReceives:
// the receive is applied, its messages stay in flight, and the caller sees
// the SDK's retry); counters of calls, calls in flight and applied
// visibility changes.
//
// Long polls are simulated: a receive that finds nothing waits
// WaitTimeSeconds × Options.WaitScale for a message to become available.
//
// The package imports only the AWS SDK, so any package's tests can use it,
// pkg/broker/sqs's included.
package sqsfake

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// Operation names, as passed to the hooks and counted by CallCount.
const (
	OpReceive       = "ReceiveMessage"
	OpDelete        = "DeleteMessageBatch"
	OpChangeVis     = "ChangeMessageVisibilityBatch"
	OpSend          = "SendMessageBatch"
	OpGetAttributes = "GetQueueAttributes"
	OpGetURL        = "GetQueueUrl"
	OpListQueues    = "ListQueues"
	OpListDLQSource = "ListDeadLetterSourceQueues"
)

// Limits of real SQS the fake enforces.
const (
	MaxBatchEntries = 10
	MaxBatchBytes   = 1 << 20
	MaxAttributes   = 10
	MaxVisibility   = 12 * time.Hour
	DedupWindow     = 5 * time.Minute
)

// Options configure a fake.
type Options struct {
	// Region and Account make queue URLs and ARNs (defaults us-east-1 and
	// 123456789012): https://sqs.REGION.amazonaws.com/ACCOUNT/NAME.
	Region, Account string
	// WaitScale scales simulated long polls: a receive that finds nothing
	// waits WaitTimeSeconds × WaitScale for a message (0 means 0.01, so a
	// 1 s long poll waits 10 ms; negative: never wait).
	WaitScale float64
	// CountsIncludeInFlight makes ApproximateNumberOfMessages count
	// in-flight messages too, as local-aws-sqs does (AWS does not).
	CountsIncludeInFlight bool
}

// SQS is the fake. Use New; the zero value is not usable. All methods are
// safe for concurrent use.
type SQS struct {
	opt Options

	mu       sync.Mutex
	queues   map[string]*fqueue // by URL
	byName   map[string]*fqueue
	byHandle map[string]handleRef // every handle ever issued
	seq      int
	idSeq    int

	delay, answerDelay time.Duration
	before             func(op string, handles []string)
	deleteAnswered     func()
	callErr            func(op string, handles []string) error
	entryFail          func(op, handle string) *types.BatchResultErrorEntry
	sendFail           func(queueURL string, e types.SendMessageBatchRequestEntry) *types.BatchResultErrorEntry

	lose         map[int]bool // numbers of non-empty receives whose answer is lost
	loseHidden   time.Duration
	loseErr      error
	receivesN    int // receives that handed out messages
	lostMessages int
	// abandonedClaims: messages taken by abandoned long polls.
	abandonedClaims int

	calls       map[string]int
	inFlight    int
	maxInFlight int
	visChanges  []string
	visCalls    [][]string
}

type handleRef struct {
	q  *fqueue
	id string
}

type fqueue struct {
	name, url, arn string
	fifo           bool
	attrs          map[string]string
	created        time.Time
	msgs           map[string]*msg
	order          []string // ids in send (sequence) order; deleted ones are pruned lazily
	deletedN       int
	seqNum         int64
	dedup          map[string]dedupEntry
}

type dedupEntry struct {
	id, seq string
	at      time.Time
}

type msg struct {
	id, body       string
	group, dedupID string
	seqNum         string
	sourceARN      string
	attrs          map[string]types.MessageAttributeValue
	sentAt         time.Time
	availableAt    time.Time // sentAt + delay
	handle         string
	receivedAt     time.Time // of the current handle
	visibleAt      time.Time
	firstReceive   time.Time
	deleted        bool
	receives       int
}

// New returns an empty fake (add queues with AddQueue).
func New(opt Options) *SQS {
	if opt.Region == "" {
		opt.Region = "us-east-1"
	}
	if opt.Account == "" {
		opt.Account = "123456789012"
	}
	if opt.WaitScale == 0 {
		opt.WaitScale = 0.01
	}
	return &SQS{opt: opt, queues: map[string]*fqueue{}, byName: map[string]*fqueue{},
		byHandle: map[string]handleRef{}, calls: map[string]int{}, lose: map[int]bool{}}
}

// AddQueue creates a queue (no API call is counted) and returns its URL. A
// FIFO queue's name must end in ".fifo". attrs are its attributes
// (VisibilityTimeout default "30", MessageRetentionPeriod "345600",
// RedrivePolicy, ContentBasedDeduplication, DelaySeconds…). Adding a
// queue that exists replaces its attributes and keeps its messages.
func (f *SQS) AddQueue(name string, fifo bool, attrs map[string]string) string {
	if fifo != strings.HasSuffix(name, ".fifo") {
		panic(fmt.Sprintf("sqsfake: queue %q: a FIFO queue's name, and only its name, ends in .fifo", name))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a := map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout):             "30",
		string(types.QueueAttributeNameMessageRetentionPeriod):        "345600",
		string(types.QueueAttributeNameMaximumMessageSize):            "1048576",
		string(types.QueueAttributeNameDelaySeconds):                  "0",
		string(types.QueueAttributeNameReceiveMessageWaitTimeSeconds): "0",
	}
	if fifo {
		a[string(types.QueueAttributeNameFifoQueue)] = "true"
		a[string(types.QueueAttributeNameContentBasedDeduplication)] = "false"
	}
	for k, v := range attrs {
		a[k] = v
	}
	if q, ok := f.byName[name]; ok {
		q.attrs = a
		return q.url
	}
	q := &fqueue{name: name, fifo: fifo, attrs: a, created: time.Now(),
		url:  fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", f.opt.Region, f.opt.Account, name),
		arn:  fmt.Sprintf("arn:aws:sqs:%s:%s:%s", f.opt.Region, f.opt.Account, name),
		msgs: map[string]*msg{}, dedup: map[string]dedupEntry{}}
	f.queues[q.url] = q
	f.byName[name] = q
	return q.url
}

// URL returns the URL of queue name ("" if there is none).
func (f *SQS) URL(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.byName[name]; ok {
		return q.url
	}
	return ""
}

// ARN returns the ARN of queue name ("" if there is none).
func (f *SQS) ARN(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.byName[name]; ok {
		return q.arn
	}
	return ""
}

// Message is a message to put into a queue with Send.
type Message struct {
	// ID is the message id (default: a generated one).
	ID   string
	Body string
	// GroupID and DedupID: FIFO queues need GroupID; DedupID defaults to
	// the ID.
	GroupID, DedupID string
	Attributes       map[string]types.MessageAttributeValue
	// SourceARN, when set, is returned as DeadLetterQueueSourceArn (as if
	// the message had been dead-lettered from that queue).
	SourceARN string
	// SentAt defaults to now.
	SentAt time.Time
}

// Send puts messages into the queue at url directly (no API call is
// counted, no dedup), in order, and returns their ids. It panics on an
// unknown queue or a FIFO message without a group.
func (f *SQS) Send(url string, msgs ...Message) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[url]
	if q == nil {
		panic("sqsfake: Send to unknown queue " + url)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		if q.fifo && m.GroupID == "" {
			panic("sqsfake: Send to a FIFO queue without a GroupID")
		}
		if m.ID == "" {
			m.ID = f.newIDLocked()
		}
		if m.DedupID == "" && q.fifo {
			m.DedupID = m.ID
		}
		at := m.SentAt
		if at.IsZero() {
			at = time.Now()
		}
		fm := &msg{id: m.ID, body: m.Body, group: m.GroupID, dedupID: m.DedupID, sourceARN: m.SourceARN,
			attrs: m.Attributes, sentAt: at, availableAt: at}
		q.add(fm)
		ids[i] = m.ID
	}
	return ids
}

// Put puts messages with the given ids into the queue at url, each with the
// body "body of <id>" (FIFO: one group per message, named after it).
func (f *SQS) Put(url string, ids ...string) {
	msgs := make([]Message, len(ids))
	for i, id := range ids {
		msgs[i] = Message{ID: id, Body: "body of " + id, GroupID: id}
	}
	f.mu.Lock()
	fifo := f.queues[url] != nil && f.queues[url].fifo
	f.mu.Unlock()
	if !fifo {
		for i := range msgs {
			msgs[i].GroupID = ""
		}
	}
	f.Send(url, msgs...)
}

func (q *fqueue) add(m *msg) {
	if q.fifo {
		q.seqNum++
		m.seqNum = fmt.Sprintf("%020d", 18000000000000000000+uint64(q.seqNum))
	}
	q.msgs[m.id] = m
	q.order = append(q.order, m.id)
}

func (f *SQS) newIDLocked() string {
	f.idSeq++
	sum := sha256.Sum256([]byte(strconv.Itoa(f.idSeq)))
	h := hex.EncodeToString(sum[:16])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// handleFor returns a new AWS-like receipt handle for m (caller holds mu).
func (f *SQS) handleFor(q *fqueue, id string) string {
	f.seq++
	raw := fmt.Sprintf("%s|%s|%d|%s", q.name, id, f.seq, strings.Repeat("x", 200))
	h := "AQEB" + base64.StdEncoding.EncodeToString([]byte(raw))
	f.byHandle[h] = handleRef{q, id}
	return h
}

// ---- direct helpers for tests (no API call counted, no hooks) ----

// Take receives up to max messages from the queue at url as ReceiveMessage
// would (group locking included), hiding them for vis, without a call.
func (f *SQS) Take(url string, max int, vis time.Duration) []types.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.mustQueue(url)
	return f.pickLocked(q, max, vis, time.Now(), allSystem, []string{"All"})
}

// Expire ends the visibility of the messages ids now (as if their timeout
// ran out).
func (f *SQS) Expire(url string, ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.mustQueue(url)
	for _, id := range ids {
		if m := q.msgs[id]; m != nil {
			m.visibleAt = time.Time{}
		}
	}
}

// ExpireAll ends the visibility of every in-flight message of the queue.
func (f *SQS) ExpireAll(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.mustQueue(url).msgs {
		m.visibleAt = time.Time{}
	}
}

// Deleted reports whether message id was deleted.
func (f *SQS) Deleted(url, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.mustQueue(url).msgs[id]
	return m != nil && m.deleted
}

// Visible reports whether message id is in the queue and visible now.
func (f *SQS) Visible(url, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.mustQueue(url).msgs[id]
	now := time.Now()
	return m != nil && !m.deleted && !now.Before(m.visibleAt) && !now.Before(m.availableAt)
}

// ReceiveCount is how often message id was received.
func (f *SQS) ReceiveCount(url, id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.mustQueue(url).msgs[id]; m != nil {
		return m.receives
	}
	return 0
}

// Counts are the exact depths of a queue.
type Counts struct {
	Visible, InFlight, Delayed, Deleted int
}

// Counts returns the exact depths of the queue at url now.
func (f *SQS) Counts(url string) Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mustQueue(url).counts(time.Now())
}

func (q *fqueue) counts(now time.Time) Counts {
	var c Counts
	for _, m := range q.msgs {
		switch {
		case m.deleted:
			c.Deleted++
		case now.Before(m.availableAt):
			c.Delayed++
		case now.Before(m.visibleAt):
			c.InFlight++
		default:
			c.Visible++
		}
	}
	return c
}

// Stored is a message as the queue holds it.
type Stored struct {
	ID, Body, GroupID, DedupID, SequenceNumber string
	Attributes                                 map[string]types.MessageAttributeValue
	Receives                                   int
	Visible                                    bool
}

// Messages lists the messages still in the queue at url (not deleted), in
// send order.
func (f *SQS) Messages(url string) []Stored {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.mustQueue(url)
	now := time.Now()
	var out []Stored
	for _, id := range q.order {
		m := q.msgs[id]
		if m.deleted {
			continue
		}
		out = append(out, Stored{ID: m.id, Body: m.body, GroupID: m.group, DedupID: m.dedupID, SequenceNumber: m.seqNum,
			Attributes: m.attrs, Receives: m.receives, Visible: !now.Before(m.visibleAt) && !now.Before(m.availableAt)})
	}
	return out
}

// IssuedHandles returns every receipt handle the fake ever issued.
func (f *SQS) IssuedHandles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	hs := make([]string, 0, len(f.byHandle))
	for h := range f.byHandle {
		hs = append(hs, h)
	}
	return hs
}

// ForgetHandle makes handle unknown to the fake (ReceiptHandleIsInvalid).
func (f *SQS) ForgetHandle(handle string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.byHandle, handle)
}

// CallCount is the number of calls of op so far (lost receive answers
// count their retry as a second call).
func (f *SQS) CallCount(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// MaxConcurrent is the most calls that were in flight at once.
func (f *SQS) MaxConcurrent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInFlight
}

// ResetMaxConcurrent starts MaxConcurrent afresh.
func (f *SQS) ResetMaxConcurrent() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxInFlight = 0
}

// VisChanges lists the applied visibility changes in order: "<id>=<secs>".
func (f *SQS) VisChanges() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.visChanges...)
}

// VisCalls lists, per ChangeMessageVisibilityBatch call, the ids of its
// entries that no EntryFail hook failed ("" for an unknown handle).
func (f *SQS) VisCalls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]string, len(f.visCalls))
	for i, c := range f.visCalls {
		out[i] = append([]string(nil), c...)
	}
	return out
}

// LostMessages is how many messages were handed out in lost receive
// answers.
func (f *SQS) LostMessages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lostMessages
}

// ---- fault hooks ----

// SetDelay delays every call by d before it is applied (a call whose ctx
// ends during the delay is not applied and returns ctx.Err()).
func (f *SQS) SetDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// SetAnswerDelay delays every answer by d after the call was applied (the
// response half of a slow link; the caller's ctx does not undo it).
func (f *SQS) SetAnswerDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answerDelay = d
}

// SetBefore runs fn at the start of every call, before the delay (handles
// are the receipt handles of a batch call, nil for other calls). It may
// block to hold the call.
func (f *SQS) SetBefore(fn func(op string, handles []string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before = fn
}

// SetDeleteAnswered runs fn after each DeleteMessageBatch was applied and
// before its answer (it may block to hold the answer): the messages are
// gone on the server, and a FIFO group they locked is free, while the
// caller still waits.
func (f *SQS) SetDeleteAnswered(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleteAnswered = fn
}

// SetCallErr lets fn fail a whole call before it is applied.
func (f *SQS) SetCallErr(fn func(op string, handles []string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.callErr = fn
}

// SetEntryFail lets fn fail one entry of a delete or visibility batch (op
// is OpDelete or OpChangeVis) before the fake looks at it; the returned
// entry's Id is set by the fake.
func (f *SQS) SetEntryFail(fn func(op, handle string) *types.BatchResultErrorEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entryFail = fn
}

// SetSendFail lets fn fail one entry of a SendMessageBatch (nothing is
// enqueued for it); the returned entry's Id is set by the fake.
func (f *SQS) SetSendFail(fn func(queueURL string, e types.SendMessageBatchRequestEntry) *types.BatchResultErrorEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sendFail = fn
}

// LoseReceives loses the answers of the nth receives that hand out
// messages (1-based, counting only receives that returned at least one
// message): the receive is applied — its messages are in flight with the
// receive's visibility, or hiddenFor when it is > 0 — and its answer never
// reaches the caller. By default the caller then sees what the SDK's
// retryer makes of a 500: the receive is sent again and that answer is
// returned (see internal/faultproxy). With SetLostReceiveErr the caller
// gets an error instead.
func (f *SQS) LoseReceives(hiddenFor time.Duration, nth ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseHidden = hiddenFor
	for _, n := range nth {
		f.lose[n] = true
	}
}

// SetLostReceiveErr makes lost receives return err instead of the retried
// answer (nil restores the retry).
func (f *SQS) SetLostReceiveErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseErr = err
}

// ---- call plumbing ----

// enter counts a call in flight and applies the injected hooks; on nil the
// caller must call leave.
func (f *SQS) enter(ctx context.Context, op string, handles []string) error {
	f.mu.Lock()
	f.calls[op]++
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	before, delay, callErr := f.before, f.delay, f.callErr
	f.mu.Unlock()
	if before != nil {
		before(op, handles)
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			f.leave()
			return ctx.Err()
		case <-t.C:
		}
	}
	if callErr != nil {
		if err := callErr(op, handles); err != nil {
			f.leave()
			return err
		}
	}
	return nil
}

// leave ends a call: the answer delay, then the in-flight count.
func (f *SQS) leave() {
	f.mu.Lock()
	d := f.answerDelay
	f.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
}

func (f *SQS) mustQueue(url string) *fqueue {
	q := f.queues[url]
	if q == nil {
		panic("sqsfake: unknown queue " + url)
	}
	return q
}

func (f *SQS) queueLocked(url *string) (*fqueue, error) {
	q := f.queues[aws.ToString(url)]
	if q == nil {
		return nil, &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	return q, nil
}

func invalidParam(msg string) error {
	return &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: msg, Fault: smithy.FaultClient}
}

func checkBatch(n int, ids []*string) error {
	if n == 0 {
		return &types.EmptyBatchRequest{Message: aws.String("There should be at least one entry in the request.")}
	}
	if n > MaxBatchEntries {
		return &types.TooManyEntriesInBatchRequest{Message: aws.String(fmt.Sprintf("Maximum number of entries per request are 10. You have sent %d.", n))}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		s := aws.ToString(id)
		if seen[s] {
			return &types.BatchEntryIdsNotDistinct{Message: aws.String("Id " + s + " repeated.")}
		}
		seen[s] = true
	}
	return nil
}

// ---- the API ----

// GetQueueUrl returns the URL of a queue by name.
func (f *SQS) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	if err := f.enter(ctx, OpGetURL, nil); err != nil {
		return nil, err
	}
	defer f.leave()
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.byName[aws.ToString(in.QueueName)]
	if q == nil {
		return nil, &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(q.url)}, nil
}

// GetQueueAttributes answers the queue's attributes and exact depths.
func (f *SQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if err := f.enter(ctx, OpGetAttributes, nil); err != nil {
		return nil, err
	}
	defer f.leave()
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queueLocked(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	c := q.counts(time.Now())
	visible := c.Visible
	if f.opt.CountsIncludeInFlight {
		visible += c.InFlight
	}
	all := map[string]string{}
	for k, v := range q.attrs {
		all[k] = v
	}
	all[string(types.QueueAttributeNameQueueArn)] = q.arn
	all[string(types.QueueAttributeNameApproximateNumberOfMessages)] = strconv.Itoa(visible)
	all[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] = strconv.Itoa(c.InFlight)
	all[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)] = strconv.Itoa(c.Delayed)
	all[string(types.QueueAttributeNameCreatedTimestamp)] = strconv.FormatInt(q.created.Unix(), 10)
	all[string(types.QueueAttributeNameLastModifiedTimestamp)] = strconv.FormatInt(q.created.Unix(), 10)
	want := map[string]bool{}
	for _, n := range in.AttributeNames {
		want[string(n)] = true
	}
	out := map[string]string{}
	for k, v := range all {
		if want["All"] || want[k] {
			out[k] = v
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}

// ListQueues lists queue URLs by prefix, sorted, in one page.
func (f *SQS) ListQueues(ctx context.Context, in *sqs.ListQueuesInput, _ ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error) {
	if err := f.enter(ctx, OpListQueues, nil); err != nil {
		return nil, err
	}
	defer f.leave()
	f.mu.Lock()
	defer f.mu.Unlock()
	var urls []string
	for name, q := range f.byName {
		if strings.HasPrefix(name, aws.ToString(in.QueueNamePrefix)) {
			urls = append(urls, q.url)
		}
	}
	sort.Strings(urls)
	return &sqs.ListQueuesOutput{QueueUrls: urls}, nil
}

// ListDeadLetterSourceQueues lists the queues whose RedrivePolicy targets
// the queue, in one page.
func (f *SQS) ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, _ ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	if err := f.enter(ctx, OpListDLQSource, nil); err != nil {
		return nil, err
	}
	defer f.leave()
	f.mu.Lock()
	defer f.mu.Unlock()
	dlq, err := f.queueLocked(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, q := range f.byName {
		if strings.Contains(q.attrs[string(types.QueueAttributeNameRedrivePolicy)], `"`+dlq.arn+`"`) {
			urls = append(urls, q.url)
		}
	}
	sort.Strings(urls)
	return &sqs.ListDeadLetterSourceQueuesOutput{QueueUrls: urls}, nil
}

var allSystem = map[string]bool{"All": true}

// ReceiveMessage receives like AWS: up to MaxNumberOfMessages (default 1,
// at most 10) visible messages, hidden for VisibilityTimeout (default: the
// queue's), FIFO groups locked; with nothing to return it waits the scaled
// long poll.
func (f *SQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := f.enter(ctx, OpReceive, nil); err != nil {
		return nil, err
	}
	defer f.leave()
	n := int(in.MaxNumberOfMessages)
	if n == 0 {
		n = 1
	}
	if n < 1 || n > MaxBatchEntries {
		return nil, invalidParam(fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", n))
	}
	if in.VisibilityTimeout < 0 || time.Duration(in.VisibilityTimeout)*time.Second > MaxVisibility {
		return nil, invalidParam(fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", in.VisibilityTimeout))
	}
	if in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20 {
		return nil, invalidParam(fmt.Sprintf("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", in.WaitTimeSeconds))
	}
	sys := map[string]bool{}
	for _, a := range in.AttributeNames { //nolint:staticcheck // honoured by AWS like MessageSystemAttributeNames
		sys[string(a)] = true
	}
	for _, a := range in.MessageSystemAttributeNames {
		sys[string(a)] = true
	}

	f.mu.Lock()
	q, err := f.queueLocked(in.QueueUrl)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	vis := time.Duration(in.VisibilityTimeout) * time.Second
	if in.VisibilityTimeout == 0 {
		v, _ := strconv.Atoi(q.attrs[string(types.QueueAttributeNameVisibilityTimeout)])
		vis = time.Duration(v) * time.Second
	}
	waitSecs := int(in.WaitTimeSeconds)
	if waitSecs == 0 {
		waitSecs, _ = strconv.Atoi(q.attrs[string(types.QueueAttributeNameReceiveMessageWaitTimeSeconds)])
	}
	f.mu.Unlock()
	var wait time.Duration
	if f.opt.WaitScale > 0 {
		wait = time.Duration(float64(time.Duration(waitSecs)*time.Second) * f.opt.WaitScale)
	}
	deadline := time.Now().Add(wait)

	for {
		f.mu.Lock()
		msgs := f.pickLocked(q, n, vis, time.Now(), sys, in.MessageAttributeNames)
		if len(msgs) > 0 {
			f.receivesN++
			if f.lose[f.receivesN] {
				delete(f.lose, f.receivesN)
				f.lostMessages += len(msgs)
				if f.loseHidden > 0 {
					at := time.Now().Add(f.loseHidden)
					for _, m := range msgs {
						q.msgs[aws.ToString(m.MessageId)].visibleAt = at
					}
				}
				if f.loseErr != nil {
					err := f.loseErr
					f.mu.Unlock()
					return nil, err
				}
				// The SDK retries the 500: a second call, answered now.
				f.calls[OpReceive]++
				msgs = f.pickLocked(q, n, vis, time.Now(), sys, in.MessageAttributeNames)
			}
		}
		f.mu.Unlock()
		if len(msgs) > 0 || !time.Now().Before(deadline) {
			return &sqs.ReceiveMessageOutput{Messages: msgs}, nil
		}
		t := time.NewTimer(min(2*time.Millisecond, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			// As on SQS, a long poll the client abandons goes on at the
			// server until its wait is over, and what it takes stays
			// invisible for the visibility timeout with nobody to read it.
			go f.lingerPoll(q, n, vis, sys, in.MessageAttributeNames, deadline)
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// lingerPoll is an abandoned long poll still running at the server.
func (f *SQS) lingerPoll(q *fqueue, n int, vis time.Duration, sys map[string]bool, attrNames []string, deadline time.Time) {
	for time.Now().Before(deadline) {
		f.mu.Lock()
		msgs := f.pickLocked(q, n, vis, time.Now(), sys, attrNames)
		f.abandonedClaims += len(msgs)
		f.mu.Unlock()
		if len(msgs) > 0 {
			return
		}
		time.Sleep(min(2*time.Millisecond, time.Until(deadline)))
	}
}

// AbandonedClaims counts messages taken by long polls their clients had
// abandoned (they stay invisible for their visibility timeout).
func (f *SQS) AbandonedClaims() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.abandonedClaims
}

// pickLocked hands out up to n messages of q for vis (caller holds mu).
func (f *SQS) pickLocked(q *fqueue, n int, vis time.Duration, now time.Time, sys map[string]bool, attrNames []string) []types.Message {
	q.prune()
	var locked map[string]bool
	if q.fifo {
		locked = map[string]bool{}
		for _, m := range q.msgs {
			if !m.deleted && now.Before(m.visibleAt) {
				locked[m.group] = true
			}
		}
	}
	var out []types.Message
	for _, id := range q.order {
		if len(out) == n {
			break
		}
		m := q.msgs[id]
		if m.deleted {
			continue
		}
		if q.fifo && locked[m.group] {
			continue
		}
		if now.Before(m.visibleAt) || now.Before(m.availableAt) {
			if q.fifo {
				locked[m.group] = true // keep the group's order
			}
			continue
		}
		m.handle = f.handleFor(q, id)
		m.receivedAt = now
		m.visibleAt = now.Add(vis)
		m.receives++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		out = append(out, m.toSDK(sys, attrNames))
	}
	return out
}

// prune drops deleted ids from the order once they are many.
func (q *fqueue) prune() {
	if q.deletedN < 1000 || q.deletedN < len(q.order)/2 {
		return
	}
	keep := q.order[:0]
	for _, id := range q.order {
		if m := q.msgs[id]; m != nil && !m.deleted {
			keep = append(keep, id)
		}
	}
	q.order = keep
	q.deletedN = 0
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func (m *msg) toSDK(sys map[string]bool, attrNames []string) types.Message {
	all := sys["All"]
	attrs := map[string]string{}
	set := func(name types.MessageSystemAttributeName, v string) {
		if v != "" && (all || sys[string(name)]) {
			attrs[string(name)] = v
		}
	}
	set(types.MessageSystemAttributeNameSenderId, "AIDAFAKESENDER")
	set(types.MessageSystemAttributeNameSentTimestamp, ms(m.sentAt))
	set(types.MessageSystemAttributeNameApproximateReceiveCount, strconv.Itoa(m.receives))
	set(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp, ms(m.firstReceive))
	set(types.MessageSystemAttributeNameMessageGroupId, m.group)
	set(types.MessageSystemAttributeNameMessageDeduplicationId, m.dedupID)
	set(types.MessageSystemAttributeNameSequenceNumber, m.seqNum)
	set(types.MessageSystemAttributeNameDeadLetterQueueSourceArn, m.sourceARN)
	var mattrs map[string]types.MessageAttributeValue
	for k, v := range m.attrs {
		for _, want := range attrNames {
			if want == "All" || want == ".*" || want == k || strings.HasSuffix(want, ".*") && strings.HasPrefix(k, strings.TrimSuffix(want, "*")) {
				if mattrs == nil {
					mattrs = map[string]types.MessageAttributeValue{}
				}
				mattrs[k] = v
				break
			}
		}
	}
	return types.Message{MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.handle), Body: aws.String(m.body),
		MD5OfBody: aws.String(md5Hex(m.body)), Attributes: attrs, MessageAttributes: mattrs}
}

func invalidHandle(id *string, h string) types.BatchResultErrorEntry {
	return types.BatchResultErrorEntry{Id: id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true,
		Message: aws.String(fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", h))}
}

// ChangeMessageVisibilityBatch changes visibilities like AWS (see the
// package comment for stale, deleted and visible messages).
func (f *SQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	handles := make([]string, len(in.Entries))
	ids := make([]*string, len(in.Entries))
	for i, e := range in.Entries {
		handles[i] = aws.ToString(e.ReceiptHandle)
		ids[i] = e.Id
	}
	if err := f.enter(ctx, OpChangeVis, handles); err != nil {
		return nil, err
	}
	defer f.leave()
	if err := checkBatch(len(in.Entries), ids); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queueLocked(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	now := time.Now()
	var applied []string
	for _, e := range in.Entries {
		h := aws.ToString(e.ReceiptHandle)
		if f.entryFail != nil {
			if fe := f.entryFail(OpChangeVis, h); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		ref, known := f.byHandle[h]
		known = known && ref.q == q
		applied = append(applied, ref.id)
		var m *msg
		if known {
			m = q.msgs[ref.id]
		}
		d := time.Duration(e.VisibilityTimeout) * time.Second
		switch {
		case !known || m.deleted:
			out.Failed = append(out.Failed, invalidHandle(e.Id, h))
		case h != m.handle:
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true,
				Message: aws.String("Value " + h + " for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.")})
		case !now.Before(m.visibleAt):
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("AWS.SimpleQueueService.MessageNotInflight"), SenderFault: true,
				Message: aws.String("Message is not in flight.")})
		case e.VisibilityTimeout < 0 || now.Add(d).After(m.receivedAt.Add(MaxVisibility)):
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), SenderFault: true,
				Message: aws.String(fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", e.VisibilityTimeout))})
		default:
			m.visibleAt = now.Add(d)
			f.visChanges = append(f.visChanges, fmt.Sprintf("%s=%d", m.id, e.VisibilityTimeout))
			out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
		}
	}
	f.visCalls = append(f.visCalls, applied)
	return out, nil
}

// DeleteMessageBatch deletes like AWS: a stale handle succeeds without
// deleting; an unknown one fails with ReceiptHandleIsInvalid.
func (f *SQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	handles := make([]string, len(in.Entries))
	ids := make([]*string, len(in.Entries))
	for i, e := range in.Entries {
		handles[i] = aws.ToString(e.ReceiptHandle)
		ids[i] = e.Id
	}
	if err := f.enter(ctx, OpDelete, handles); err != nil {
		return nil, err
	}
	defer f.leave()
	f.mu.Lock()
	answered := f.deleteAnswered
	f.mu.Unlock()
	if answered != nil {
		defer answered() // after the deletes below, before the answer
	}
	if err := checkBatch(len(in.Entries), ids); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queueLocked(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		h := aws.ToString(e.ReceiptHandle)
		if f.entryFail != nil {
			if fe := f.entryFail(OpDelete, h); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		ref, known := f.byHandle[h]
		switch {
		case !known || ref.q != q:
			out.Failed = append(out.Failed, invalidHandle(e.Id, h))
		case h == q.msgs[ref.id].handle:
			m := q.msgs[ref.id]
			if !m.deleted {
				m.deleted = true
				q.deletedN++
			}
			out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
		default:
			// A stale handle: AWS may answer success without deleting.
			out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
		}
	}
	return out, nil
}

func entrySize(e types.SendMessageBatchRequestEntry) int {
	n := len(aws.ToString(e.MessageBody))
	for k, v := range e.MessageAttributes {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// SendMessageBatch enqueues entries with per-entry results; on a FIFO
// queue it requires a group, and drops (answering success with the first
// message's id and sequence number) an entry whose deduplication id was
// seen in the last 5 minutes.
func (f *SQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	ids := make([]*string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	if err := f.enter(ctx, OpSend, nil); err != nil {
		return nil, err
	}
	defer f.leave()
	if err := checkBatch(len(in.Entries), ids); err != nil {
		return nil, err
	}
	total := 0
	for _, e := range in.Entries {
		total += entrySize(e)
	}
	if total > MaxBatchBytes {
		return nil, &types.BatchRequestTooLong{Message: aws.String(fmt.Sprintf("Batch requests cannot be longer than 1048576 bytes. You have sent %d bytes.", total))}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queueLocked(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for k, d := range q.dedup {
		if now.Sub(d.at) >= DedupWindow {
			delete(q.dedup, k)
		}
	}
	out := &sqs.SendMessageBatchOutput{}
	fail := func(e types.SendMessageBatchRequestEntry, code, text string) {
		out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(code), SenderFault: true, Message: aws.String(text)})
	}
	qDelay, _ := strconv.Atoi(q.attrs[string(types.QueueAttributeNameDelaySeconds)])
	cbd := q.attrs[string(types.QueueAttributeNameContentBasedDeduplication)] == "true"
	for _, e := range in.Entries {
		if f.sendFail != nil {
			if fe := f.sendFail(q.url, e); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		body := aws.ToString(e.MessageBody)
		if body == "" {
			fail(e, "MissingParameter", "The request must contain the parameter MessageBody.")
			continue
		}
		if len(e.MessageAttributes) > MaxAttributes {
			fail(e, "InvalidParameterValue", fmt.Sprintf("Number of message attributes [%d] exceeds the allowed maximum [10].", len(e.MessageAttributes)))
			continue
		}
		m := &msg{body: body, attrs: e.MessageAttributes, sentAt: now, availableAt: now}
		if q.fifo {
			m.group = aws.ToString(e.MessageGroupId)
			if m.group == "" {
				fail(e, "MissingParameter", "The request must contain the parameter MessageGroupId.")
				continue
			}
			if e.DelaySeconds != 0 {
				fail(e, "InvalidParameterValue", "Value "+strconv.Itoa(int(e.DelaySeconds))+" for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.")
				continue
			}
			m.dedupID = aws.ToString(e.MessageDeduplicationId)
			if m.dedupID == "" && cbd {
				sum := sha256.Sum256([]byte(body))
				m.dedupID = hex.EncodeToString(sum[:])
			}
			if m.dedupID == "" {
				fail(e, "InvalidParameterValue", "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
				continue
			}
			if d, dup := q.dedup[m.dedupID]; dup {
				out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(d.id),
					MD5OfMessageBody: aws.String(md5Hex(body)), SequenceNumber: aws.String(d.seq)})
				continue
			}
		} else {
			delay := int(e.DelaySeconds)
			if delay == 0 {
				delay = qDelay
			}
			m.availableAt = now.Add(time.Duration(delay) * time.Second)
		}
		m.id = f.newIDLocked()
		q.add(m)
		res := types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(m.id), MD5OfMessageBody: aws.String(md5Hex(body))}
		if q.fifo {
			res.SequenceNumber = aws.String(m.seqNum)
			q.dedup[m.dedupID] = dedupEntry{id: m.id, seq: m.seqNum, at: now}
		}
		out.Successful = append(out.Successful, res)
	}
	return out, nil
}

func unsupported(op string) error {
	return &types.UnsupportedOperation{Message: aws.String(op + " is not supported by sqsfake")}
}

// StartMessageMoveTask is not supported (move tasks need the stack).
func (f *SQS) StartMessageMoveTask(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	return nil, unsupported("StartMessageMoveTask")
}

// ListMessageMoveTasks is not supported.
func (f *SQS) ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	return nil, unsupported("ListMessageMoveTasks")
}

// CancelMessageMoveTask is not supported.
func (f *SQS) CancelMessageMoveTask(context.Context, *sqs.CancelMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error) {
	return nil, unsupported("CancelMessageMoveTask")
}
