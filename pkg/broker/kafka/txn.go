package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// TxnID is the transactional id of a --exactly-once run reading group:
// one per group, so a run started after a killed one fences it (the killed
// run's open transaction is aborted).
func TxnID(group string) string { return "dlqctl-" + group }

// OpenTxnPublisher opens a transactional producer on this endpoint's
// cluster whose transactions carry the copies and the commit of src's
// group (broker.TxnOpener; redrive --exactly-once). src must be a consuming
// read of a topic on the same cluster.
func (e *Endpoint) OpenTxnPublisher(_ context.Context, src broker.Source) (broker.TxnPublisher, error) {
	cs, ok := src.(*consumeSource)
	if !ok {
		return nil, fmt.Errorf("a Kafka transaction removes records of a consuming read of a Kafka topic (open the source with broker.Consume): %w", broker.ErrUnsupported)
	}
	if !slices.Equal(cs.e.addr.Brokers, e.addr.Brokers) {
		return nil, broker.Kindf(broker.ErrUnsupported, "--exactly-once needs the destination on the dead-letter topic's cluster (one transaction covers the copies and the offsets); drop it or --to a topic on %s", strings.Join(cs.e.addr.Brokers, ","))
	}
	p, err := OpenProducer(e.addr, e.conn, ProducerOptions{TransactionalID: TxnID(cs.c.group)})
	if err != nil {
		return nil, e.wrap(err)
	}
	t := &txnPublisher{publisher: publisher{e: e, p: p}, src: cs, removed: map[*Message]bool{}}
	if !cs.txn.CompareAndSwap(nil, t) {
		p.Close()
		return nil, errors.New("kafka: the source already has a transactional publisher")
	}
	// The transaction owns the source's polls from the first: no
	// read-ahead starts after this, and one started before refuses it.
	cs.aheadOnce.Do(func() {})
	if cs.ahead.Load() != nil {
		cs.txn.Store(nil)
		p.Close()
		return nil, errAheadStarted
	}
	return t, nil
}

// txnPublisher produces each batch in a transaction that also commits the
// group's offsets past the batch's originals.
type txnPublisher struct {
	publisher
	src *consumeSource
	// mu serializes transactions (one producer, one open transaction) and
	// the source's polls (consumeSource.Next).
	mu sync.Mutex
	// removed are the originals a committed transaction moved the group
	// past, until the source's Ack confirms them.
	rmu     sync.Mutex
	removed map[*Message]bool
}

// PublishRemoving: begin, produce and wait for every acknowledgement,
// mark the originals handled and commit the group's offsets in the
// transaction, end it (commit only when everything before succeeded).
func (t *txnPublisher) PublishRemoving(ctx context.Context, dest broker.Destination, batch []broker.Outgoing, originals []broker.Message) ([]broker.Result, error) {
	if len(originals) != len(batch) {
		return nil, errors.New("kafka: PublishRemoving needs one original per copy")
	}
	cp := copiers.Get().(*copier)
	defer copiers.Put(cp)
	recs, err := buildCopies(cp, batch)
	if err != nil {
		return nil, err
	}
	msgs := make([]*Message, len(batch))
	for i := range batch {
		m, ok := originals[i].Handle.(*Message)
		if !ok {
			return nil, errors.New("kafka: PublishRemoving got an entry the source did not build")
		}
		msgs[i] = m
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.src.c
	if c.fenced.Load() {
		return nil, errFenced
	}
	// The transaction ends even when ctx ends mid-batch: an interrupted
	// run stops between transactions.
	sctx := context.WithoutCancel(ctx)
	if err := t.p.cl.BeginTransaction(); err != nil {
		return nil, t.e.wrap(fmt.Errorf("beginning a transaction: %w", err))
	}
	errs := t.p.Send(sctx, recs)
	cause := errors.Join(errs...)
	if cause == nil {
		res := c.ackAll(msgs, nil)
		for i, a := range res {
			switch {
			case a.err != nil:
				cause = fmt.Errorf("%s: %w", msgs[i].ID(), a.err)
			case !a.ok:
				cause = fmt.Errorf("%s: its partition moved to another member of group %s before the commit", msgs[i].ID(), c.group)
			}
			if cause != nil {
				break
			}
		}
		if cause == nil {
			cause = c.CommitInTxn(sctx, t.p)
		}
	}
	endErr := t.p.cl.EndTransaction(sctx, kgo.TransactionEndTry(cause == nil))
	if cause == nil && endErr == nil {
		t.rmu.Lock()
		for _, m := range msgs {
			t.removed[m] = true
		}
		t.rmu.Unlock()
		out := make([]broker.Result, len(recs))
		for i, r := range recs {
			out[i].ID = copyID(r)
		}
		return out, nil
	}
	// Aborted. The originals may be marked handled in the partition
	// journals while their copies were aborted: no commit may carry those
	// marks, and the run stops (as a kill would stop it, minus the wait).
	c.fence()
	err = fmt.Errorf("transaction aborted, its copies are invisible to read_committed consumers and its records stay pending: %w", errors.Join(cause, endErr))
	if endErr != nil {
		err = fmt.Errorf("ending the transaction: %w", errors.Join(cause, endErr))
	}
	out := make([]broker.Result, len(recs))
	for i := range out {
		if errs[i] != nil {
			out[i].Err = t.e.wrap(fmt.Errorf("%w (%w)", errs[i], err))
		} else {
			out[i].Err = t.e.wrap(err)
		}
	}
	return out, nil
}

// confirm answers the source's Ack: nil for the originals a committed
// transaction removed. Others (a resumed run removing what its journal
// says an earlier attempt published) are removed in a transaction of
// their own that carries only the group's commit; if it cannot commit,
// they stay pending and the source commits nothing more.
func (t *txnPublisher) confirm(ctx context.Context, msgs []broker.Message) []error {
	errs := make([]error, len(msgs))
	var rest []*Message
	var restIdx []int
	t.rmu.Lock()
	for i, bm := range msgs {
		m, _ := bm.Handle.(*Message)
		switch {
		case m == nil:
			errs[i] = errors.New("not a message of this source")
		case t.removed[m]:
			delete(t.removed, m)
		default:
			rest, restIdx = append(rest, m), append(restIdx, i)
		}
	}
	t.rmu.Unlock()
	if len(rest) == 0 {
		return errs
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.src.c
	err := func() error {
		if c.fenced.Load() {
			return errFenced
		}
		sctx := context.WithoutCancel(ctx)
		if err := t.p.cl.BeginTransaction(); err != nil {
			return fmt.Errorf("beginning a transaction: %w", err)
		}
		var cause error
		for i, a := range c.ackAll(rest, nil) {
			switch {
			case a.err != nil:
				cause = fmt.Errorf("%s: %w", rest[i].ID(), a.err)
			case !a.ok:
				cause = fmt.Errorf("%s: its partition moved to another member of group %s before the commit: %w", rest[i].ID(), c.group, broker.ErrLeaseLost)
			}
			if cause != nil {
				break
			}
		}
		if cause == nil {
			cause = c.CommitInTxn(sctx, t.p)
		}
		endErr := t.p.cl.EndTransaction(sctx, kgo.TransactionEndTry(cause == nil))
		if cause != nil || endErr != nil {
			c.fence()
			return errors.Join(cause, endErr)
		}
		return nil
	}()
	if err != nil {
		for _, i := range restIdx {
			errs[i] = t.e.wrap(fmt.Errorf("not removed: %w", err))
		}
	}
	return errs
}

// Publish outside a transaction is refused: every copy of a transactional
// run goes with the commit of its original.
func (t *txnPublisher) Publish(context.Context, broker.Destination, []broker.Outgoing) ([]broker.Result, error) {
	return nil, errors.New("kafka: a transactional publisher publishes with PublishRemoving")
}

// GroupLag is the records group has yet to consume on this endpoint's
// cluster (broker.LagReader; redrive --max-dest-lag), summed over the
// partitions it has committed offsets for.
func (e *Endpoint) GroupLag(ctx context.Context, group string) (int64, error) {
	adm, err := e.Admin()
	if err != nil {
		return 0, e.wrap(err)
	}
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return 0, e.wrap(err)
	}
	l, ok := lags[group]
	if !ok || l.State == "Dead" {
		return 0, broker.Kindf(broker.ErrNotFound, "consumer group %s is not known to %s", group, strings.Join(e.addr.Brokers, ","))
	}
	if err := l.Error(); err != nil {
		return 0, e.wrap(err)
	}
	var n int64
	for _, ps := range l.Lag {
		for _, pl := range ps {
			if pl.Lag > 0 {
				n += pl.Lag
			}
		}
	}
	return n, nil
}
