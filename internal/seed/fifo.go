package seed

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// FIFOOptions configure FIFOIncident.
type FIFOOptions struct {
	// Prefix names the queues PREFIX-dlq.fifo and PREFIX-orders.fifo.
	// Required; [A-Za-z0-9_-]{1,60}.
	Prefix string
	// Now anchors timestamps in the bodies; zero means time.Now().
	Now time.Time
}

// FIFOGroupSizes are the message groups FIFOIncident dead-letters and how
// many messages each holds, in seeding order. Two groups are longer than
// one ReceiveMessage can return (10), so on a server that locks message
// groups (moto, AWS) no read that holds a group's first messages can see
// its later ones.
var FIFOGroupSizes = []struct {
	Group string
	N     int
}{
	{"order-o-2001", 12}, // a database outage: every event failed, transient
	{"order-o-2002", 3},  // bare envelopes, no failure context
	{"order-o-2003", 3},  // order cancelled: business failures
	{"order-o-2004", 11}, // a 503 from the payment provider, transient
}

// FIFOIncident seeds only the FIFO part of an incident, with longer message
// groups than Incident: a FIFO source with a RedrivePolicy
// (maxReceiveCount FIFOMaxReceiveCount) into a FIFO DLQ, the messages sent
// in group order and dead-lettered for real (received without deleting
// until the server moves them). It works on local-aws-sqs and on moto;
// moto sets no DeadLetterQueueSourceArn and continues the receive count
// (docs/emulators.md). Only Truth.FIFODLQ and Truth.FIFOSource are set.
//
// Each group's messages reach the DLQ in their original order, as they do
// when a consumer fails them one after another: the source is received
// one message at a time. (Receiving 10 at a time, as Incident does, lets
// moto dead-letter the tail of a group longer than 10 before its head.)
func FIFOIncident(ctx context.Context, c *sqs.Client, opt FIFOOptions) (*Truth, error) {
	if !prefixRE.MatchString(opt.Prefix) {
		return nil, fmt.Errorf("seed: prefix %q must match %s", opt.Prefix, prefixRE)
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	start := time.Now()
	t := &Truth{Prefix: opt.Prefix}
	t.FIFODLQ = Queue{Name: opt.Prefix + suffixFIFODLQ, FIFO: true, RetentionSeconds: DLQRetention}
	t.FIFOSource = Queue{Name: opt.Prefix + suffixFIFOSource, FIFO: true, MaxReceiveCount: FIFOMaxReceiveCount, RetentionSeconds: SourceRetention}
	if err := createQueue(ctx, c, &t.FIFODLQ, "", opt.Prefix); err != nil {
		return nil, err
	}
	if err := createQueue(ctx, c, &t.FIFOSource, t.FIFODLQ.ARN, opt.Prefix); err != nil {
		return nil, err
	}
	for _, q := range []Queue{t.FIFODLQ, t.FIFOSource} {
		n, err := queueDepth(ctx, c, q.URL)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, fmt.Errorf("seed: queue %s already holds %d messages; use another prefix", q.Name, n)
		}
	}
	t.Timings.CreateQueues = time.Since(start)

	t.Messages = planFIFO(opt.Prefix, now, t.FIFOSource, t.FIFODLQ.Name)
	sendStart := time.Now()
	idx := make([]int, len(t.Messages))
	for i := range idx {
		idx[i] = i
	}
	// FIFO order within a group is the order of sends: one batch at a time.
	for _, b := range chunk(idx, func(i int) int { return entrySize(t.Messages[i].Body, t.Messages[i].Attributes) }) {
		entries := make([]types.SendMessageBatchRequestEntry, len(b))
		for k, i := range b {
			m := t.Messages[i]
			entries[k] = types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(k)), MessageBody: aws.String(m.Body), MessageAttributes: m.Attributes,
				MessageGroupId: aws.String(m.GroupID), MessageDeduplicationId: aws.String(m.DedupID),
			}
		}
		ids, err := sendBatch(ctx, c, t.FIFOSource.URL, entries)
		if err != nil {
			return nil, err
		}
		for k, i := range b {
			t.Messages[i].MessageID = ids[k]
		}
	}
	t.Timings.Send = time.Since(sendStart)

	dlStart := time.Now()
	if err := deadLetterInOrder(ctx, c, t.FIFOSource); err != nil {
		return nil, err
	}
	if err := waitCount(ctx, c, t.FIFODLQ, len(t.Messages)); err != nil {
		return nil, err
	}
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(t.FIFOSource.URL),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(sourceVisibility)},
	}); err != nil {
		return nil, fmt.Errorf("seed: restoring visibility timeout of %s: %w", t.FIFOSource.Name, err)
	}
	t.Timings.DeadLetter = time.Since(dlStart)
	t.Timings.Total = time.Since(start)
	return t, nil
}

// deadLetterInOrder receives from a FIFO source one message at a time
// (visibility 0, no delete) until the server has moved every message to the
// DLQ.
func deadLetterInOrder(ctx context.Context, c *sqs.Client, q Queue) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 1})
		if err != nil {
			return fmt.Errorf("seed: dead-lettering %s: %w", q.Name, err)
		}
		if len(out.Messages) > 0 {
			continue
		}
		n, err := queueDepth(ctx, c, q.URL)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("seed: dead-lettering %s: %d messages left: %w", q.Name, n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// planFIFO returns the FIFO incident's messages in group order.
func planFIFO(prefix string, now time.Time, src Queue, dlq string) []Seeded {
	p := &planner{prefix: prefix + "|fifo", now: now}
	for gi, g := range FIFOGroupSizes {
		order := g.Group[len("order-"):]
		for si := range g.N {
			// A plausible order history: created, then payments and their
			// captures, a refund at the end.
			eventType := "OrderCreated"
			pay := fmt.Sprintf("p-8%d%02d", gi, (si+1)/2)
			var pl map[string]any
			switch {
			case si == 0:
				pl = orderCreated(order, fmt.Sprintf("c-30%02d", gi), 99.0, "SKU-4411", "SKU-2002")
			case si == g.N-1 && g.N > 2:
				eventType = "RefundIssued"
				pl = refundIssued(fmt.Sprintf("r-4%d%02d", gi, si), pay, order, 19.8)
			case si%2 == 1:
				eventType = "OrderPaid"
				pl = orderPaid(order, pay, 19.8)
			default:
				eventType = "PaymentCaptured"
				pl = paymentCaptured(pay, order, 19.8)
			}
			e := p.envelope(eventType, 1, "t-acme", 2*time.Hour-time.Duration(gi*20+si)*time.Minute, pl)
			switch gi {
			case 0:
				p.addEnriched(src.Name, KindFIFO, e, dbTimeout(900+si*37, order), 2, fifoConsumer, nil)
			case 1:
				p.addEnvelope(src.Name, KindFIFO, ClassUnknown, e, envAttrs(e))
			case 2:
				if si == 0 {
					p.addEnvelope(src.Name, KindFIFO, ClassUnknown, e, envAttrs(e))
				} else {
					p.addEnriched(src.Name, KindFIFO, e, cancelled(order), 2, fifoConsumer, nil)
				}
			default:
				p.addEnriched(src.Name, KindFIFO, e, http503("https://psp.example.com/v1/captures", fmt.Sprintf("req-%d%02d", gi, si)), 2, fifoConsumer, nil)
			}
			m := &p.msgs[len(p.msgs)-1]
			m.GroupID, m.GroupSeq = g.Group, si
			m.DedupID = "dedup-" + e.EventID
			m.SourceARN, m.DLQName = src.ARN, dlq
		}
	}
	return p.msgs
}

// fifoConsumer is the consumer version in the FIFO failures (the orders
// worker of the standard incident).
const fifoConsumer = "orders-worker@1.4.2"
