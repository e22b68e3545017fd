package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer publishes copies with franz-go's idempotent producer and
// acks=all: a copy counts as durable only when every in-sync replica has
// it, and a retried batch is never written twice.
type Producer struct {
	cl *kgo.Client
}

// ProducerOptions tune a Producer.
type ProducerOptions struct {
	// Linger batches records for up to this long (0: 5 ms).
	Linger time.Duration
	// TransactionalID makes the producer transactional (--exactly-once).
	TransactionalID string
}

// OpenProducer opens a producer on addr's cluster (addr.Topic unused).
func OpenProducer(addr Address, conn Conn, opt ProducerOptions) (*Producer, error) {
	l := opt.Linger
	if l <= 0 {
		l = 5 * time.Millisecond
	}
	opts := []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(l),
		kgo.RecordDeliveryTimeout(2 * time.Minute),
	}
	if opt.TransactionalID != "" {
		opts = append(opts, kgo.TransactionalID(opt.TransactionalID), kgo.TransactionTimeout(time.Minute))
	}
	cl, err := NewClient(addr, conn, opts...)
	if err != nil {
		return nil, err
	}
	return &Producer{cl: cl}, nil
}

// Client is the producer's franz-go client.
func (p *Producer) Client() *kgo.Client { return p.cl }

// Send produces recs and waits for every acknowledgement; errs[i] is the
// result of recs[i] (nil: durable).
func (p *Producer) Send(ctx context.Context, recs []*kgo.Record) []error {
	errs := make([]error, len(recs))
	p.sendInto(ctx, recs, func(i int, err error) { errs[i] = err })
	return errs
}

// sendInto produces recs, waits for every acknowledgement and reports the
// error of each record that failed by its index in recs (a record not
// reported is durable).
func (p *Producer) sendInto(ctx context.Context, recs []*kgo.Record, failed func(i int, err error)) {
	// ProduceSync lists its results in the order the records were
	// settled, which is not the order given when they went to several
	// partitions: a failure is matched to its record, never to a position.
	var at map[*kgo.Record]int
	for _, r := range p.cl.ProduceSync(ctx, recs...) {
		if r.Err == nil {
			continue
		}
		if at == nil {
			at = make(map[*kgo.Record]int, len(recs))
			for i, rec := range recs {
				at[rec] = i
			}
		}
		if i, ok := at[r.Record]; ok {
			failed(i, r.Err)
		}
	}
}

// Close flushes and closes the producer.
func (p *Producer) Close() { p.cl.Close() }

// TopicExists reports whether topic exists on the cluster (a replay must
// never create a topic by producing to a mistyped name).
func TopicExists(ctx context.Context, adm *kadm.Client, topic string) (bool, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return false, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	t, ok := td[topic]
	return ok && t.Err == nil, nil
}
