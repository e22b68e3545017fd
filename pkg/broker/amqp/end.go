package amqp

import (
	"context"
	"fmt"
	"strings"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// The end of a consuming run on RabbitMQ.
//
// A queue.declare(passive) answers the queue's ready count and consumer
// count exactly (unlike SQS's approximate counts). Reading is over when
// the run holds nothing in progress (every delivery it was handed is
// acknowledged, or kept to be returned at the end) and the queue has no
// ready message — or when ready messages stop being delivered to this run
// (another consumer of higher priority, a single-active-consumer queue).
// Messages other consumers hold unacknowledged are not ready: the run
// cannot read them and says so — it is not complete while they exist.

// endQuiet is how long ready messages may go undelivered to an idle run
// before reading ends with them reported as not read.
var endQuiet = 5 * time.Second

// statsWait bounds how long the end of a run waits for the management
// API's unacknowledged count (refreshed every statistics interval, 5 s by
// default) to catch up with the run's own acknowledgements.
var statsWait = 11 * time.Second

// queueCounts is queue.declare(passive): ready messages and consumers.
func queueCounts(conn *amqp091.Connection, queue string) (ready, consumers int, err error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, 0, fmt.Errorf("opening a channel: %w", err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
	if err != nil {
		return 0, 0, consumeError(queue, err)
	}
	return q.Messages, q.Consumers, nil
}

// endCheck says whether a consuming run's reading is over, after a read
// came back empty. busy is what the run still has in progress (received
// and not yet acknowledged or decided).
func (s *Source) endCheck(busy int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode != broker.Consume || s.done {
		return true, nil
	}
	if busy > 0 {
		return false, nil // deliveries in progress: they may be given back
	}
	ready, _, err := queueCounts(s.conn, s.ep.ref.Queue)
	if err != nil {
		return false, err
	}
	if ready == 0 {
		return true, nil
	}
	// Ready messages that do not reach this run although it could hold
	// more: another consumer is preferred (priority, single active
	// consumer). Reading ends; the final report names them.
	return time.Since(s.lastDelivery) > endQuiet, nil
}

// stopReading cancels the consumer: nothing more is delivered to the run
// (what it holds stays held until Close returns it).
func (s *Source) stopReading() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode != broker.Consume || s.stopped {
		return
	}
	if s.c != nil && !s.c.ch.IsClosed() {
		s.c.cancel()
	}
	s.stopped = true
}

// EndReport is what a consuming run left in the queue.
type EndReport struct {
	// NotRead: messages ready in the queue at the end that the run did not
	// read (they arrived or came back after reading ended, or were
	// delivered to another consumer first).
	NotRead int
	// HeldElsewhere: messages other consumers hold unacknowledged.
	HeldElsewhere int
	// OtherConsumers attached to the queue at the end.
	OtherConsumers int
	// Note says it in one sentence ("" when nothing is left); NotReadNote
	// and HeldNote are its two halves.
	Note, NotReadNote, HeldNote string
}

// endReport reads what is left once the run's workers stopped: the ready
// count (exact, taken after every held delivery was settled) and what
// other consumers hold (the management API's unacknowledged count minus
// what this run still holds, waited for until it reflects the run's own
// acknowledgements).
func (s *Source) endReport(ctx context.Context) (EndReport, error) {
	if s.mode != broker.Consume {
		return EndReport{}, nil
	}
	s.stopReading()
	s.mu.Lock()
	// Deliveries that arrived after the last read (a message that came
	// back) are held by this run until Close: count them as not read.
	late := 0
	if s.c != nil {
		for {
			m, ok, err := s.c.Next(ctx, 20*time.Millisecond)
			if err != nil || !ok {
				break
			}
			late++
			if !s.c.stream {
				s.released[m.DeliveryTag] = true
			}
		}
	}
	ours := len(s.held) + len(s.released)
	s.mu.Unlock()

	var r EndReport
	ready, consumers, err := queueCounts(s.conn, s.ep.ref.Queue)
	if err != nil {
		return r, err
	}
	r.NotRead = ready + late
	r.OtherConsumers = consumers // ours is cancelled
	q := s.ep.ref.Queue
	var mgmtErr error
	start := time.Now()
	for {
		var qi QueueInfo
		qi, mgmtErr = s.ep.mgmt.Queue(ctx, s.ep.ref.VHost, q)
		if mgmtErr == nil {
			r.HeldElsewhere = max(0, int(qi.Unacked)-ours)
		}
		// The count trails by up to a statistics interval. With no other
		// consumer attached, wait until it shows the run's own
		// acknowledgements (what stays is held by a basic.get of another
		// client); with other consumers attached, take a sample a full
		// interval later (their newest deliveries show by then).
		waited := time.Since(start)
		if consumers == 0 && (mgmtErr != nil || r.HeldElsewhere == 0) ||
			consumers > 0 && (mgmtErr != nil || waited >= statsWait/2) ||
			waited >= statsWait || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	if r.NotRead > 0 {
		r.NotReadNote = fmt.Sprintf("%d message(s) are still ready in %s that this run did not read (they came back or were delivered to another consumer after reading ended); re-run to process them", r.NotRead, q)
	}
	switch {
	case r.HeldElsewhere > 0:
		r.HeldNote = fmt.Sprintf("%d message(s) are held unacknowledged by other consumers of %s (%d attached); they return to the queue when those consumers reject them or disconnect — stop them, then re-run", r.HeldElsewhere, q, consumers)
	case consumers > 0 && mgmtErr != nil:
		r.HeldNote = fmt.Sprintf("%d other consumer(s) are attached to %s and the management API could not say what they hold (%v); stop them, then re-run", consumers, q, mgmtErr)
		r.HeldElsewhere = consumers // at least one each, unknown
	}
	var parts []string
	for _, p := range []string{r.NotReadNote, r.HeldNote} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	r.Note = strings.Join(parts, "; ")
	return r, nil
}
