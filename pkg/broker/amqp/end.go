package amqp

import (
	"context"
	"errors"
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
	// HeldElsewhere: messages held unacknowledged by consumers that are
	// not processes of this run (other applications, a basic.get).
	HeldElsewhere int
	// PeersHeld: messages the other processes of a shared run
	// (--rate-share) hold unacknowledged; they account for them.
	PeersHeld int
	// OtherConsumers attached to the queue at the end; Peers of them are
	// processes of this shared run.
	OtherConsumers, Peers int
	// Note says what is left in one sentence ("" when nothing is);
	// NotReadNote and HeldNote are its two halves. PeersNote says what the
	// peers hold (not part of Note: it leaves nothing undone).
	Note, NotReadNote, HeldNote, PeersNote string
}

// endReport reads what is left once the run's workers stopped: the ready
// count (exact, taken after every held delivery was settled) and what
// other consumers hold (the management API's unacknowledged count minus
// what this run still holds, waited for until it reflects the run's own
// acknowledgements). In a shared run that count is split between the
// run's peers (consumers tagged dlqctl-share-…) and everyone else: what
// other applications' consumers hold is their channels' unacknowledged
// count, the rest is the peers'.
func (s *Source) endReport(ctx context.Context) (EndReport, error) {
	if s.mode != broker.Consume {
		return EndReport{}, nil
	}
	s.stopReading()
	s.mu.Lock()
	// Deliveries that arrived after the last read (a message that came
	// back) are held by this run until Close: count them as not read.
	late := 0
	ownTag := ""
	if s.c != nil {
		ownTag = s.c.tag
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
	shared := s.opt.Share.N > 1
	others := 0  // held by consumers other than this run (the queue's count less ours)
	held := 0    // of them, held by other applications (not this run's peers)
	foreign := 0 // other applications' consumers that acknowledge
	start := time.Now()
	for {
		// The counts trail by up to a statistics interval. With no other
		// consumer attached, wait until they show the run's own
		// acknowledgements (what stays is held by a basic.get of another
		// client). With other consumers attached, sample once a full
		// interval has passed (their newest deliveries show by then) — and
		// while another application's consumer is attached and the counts
		// say it holds nothing, sample on until two intervals have passed:
		// a count that has not caught up must not make a run complete.
		waited := time.Since(start)
		if consumers == 0 || waited >= statsWait/2 {
			var qi QueueInfo
			qi, mgmtErr = s.ep.mgmt.Queue(ctx, s.ep.ref.VHost, q)
			if mgmtErr == nil {
				others = max(0, int(qi.Unacked)-ours)
				var channels []string
				r.Peers, channels = consumersOf(qi, ownTag, shared)
				foreign = len(channels)
				held = others
				if r.Peers > 0 && others > 0 {
					held = s.heldByChannels(ctx, channels, others)
				}
			}
			if mgmtErr != nil || ctx.Err() != nil || waited >= statsWait ||
				consumers == 0 && others == 0 ||
				consumers > 0 && (held > 0 || foreign == 0) {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	r.HeldElsewhere, r.PeersHeld = held, others-held
	if r.NotRead > 0 {
		r.NotReadNote = fmt.Sprintf("%d message(s) are still ready in %s that this run did not read (they came back or were delivered to another consumer after reading ended); re-run to process them", r.NotRead, q)
	}
	switch {
	case r.HeldElsewhere > 0:
		r.HeldNote = fmt.Sprintf("%d message(s) are held unacknowledged by other consumers of %s (%d attached", r.HeldElsewhere, q, consumers)
		if r.Peers > 0 {
			r.HeldNote += fmt.Sprintf(", %d of them this shared run's processes", r.Peers)
		}
		r.HeldNote += "); they return to the queue when those consumers reject them or disconnect — stop them, then re-run"
	case consumers > 0 && mgmtErr != nil:
		// Without the management API nobody can say who holds what: other
		// applications may, so the run cannot say it is complete.
		r.HeldNote = fmt.Sprintf("%d other consumer(s) are attached to %s and the management API could not say what they hold (%v); stop them, then re-run", consumers, q, mgmtErr)
		r.HeldElsewhere = consumers // at least one each, unknown
	}
	if r.PeersHeld > 0 {
		r.PeersNote = fmt.Sprintf("%d message(s) are held by the other processes of this shared run (%d attached to %s); they archive or move them, and the shared run is complete when every process exits 0", r.PeersHeld, r.Peers, q)
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

// consumersOf sorts a queue's consumers, all but the run's own (cancelled;
// the statistics may still list it): in a shared run the consumers tagged
// as its processes' are its peers; the others that acknowledge are other
// applications', returned by channel name (a consumer without
// acknowledgements holds nothing).
func consumersOf(qi QueueInfo, ownTag string, shared bool) (peers int, foreign []string) {
	seen := map[string]bool{}
	for _, c := range qi.ConsumerDetails {
		switch {
		case c.Tag == ownTag:
		case shared && isPeerTag(c.Tag):
			peers++
		case c.AckRequired && !seen[c.Channel.Name]:
			seen[c.Channel.Name] = true
			foreign = append(foreign, c.Channel.Name)
		}
	}
	return peers, foreign
}

// heldByChannels is what other applications' consumers hold of others
// (what every consumer but this run holds), when the run's peers hold the
// rest: each channel's unacknowledged count, at most others. A channel
// that cannot be read counts as holding everything: the run cannot call
// complete what it cannot account for.
func (s *Source) heldByChannels(ctx context.Context, channels []string, others int) int {
	held := 0
	for _, name := range channels {
		ci, err := s.ep.mgmt.Channel(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			// The channel closed: what it held went back to the queue.
		case err != nil:
			return others
		default:
			held += int(ci.Unacked)
		}
	}
	return min(held, others)
}
