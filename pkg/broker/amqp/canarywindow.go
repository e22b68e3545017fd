package amqp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// CanaryWindow is how long a message that always fails needs, at most, to
// come back to this queue (the DLQ a canary watches) after a canary sent
// it to dests (nil: back to the queues that dead-letter into this one).
// RabbitMQ dead-letters a message when its consumer rejects it without
// requeue (at once), when a quorum queue's delivery limit is passed (each
// requeue is redelivered at once), or when it expires (the queue's message
// TTL); a dead-letter exchange may route it through retry queues whose TTL
// holds it before it dead-letters on. The window is the longest, over the
// destination queues, of the TTLs on the way from the queue into this one
// (the queue's own and each retry queue's), + broker.CanaryMargin. Read
// from the queues' arguments and policies (management API). A queue whose
// dead letters never reach this one adds nothing; when none does, Returns
// is false.
func (e *Endpoint) CanaryWindow(ctx context.Context, dests []broker.Destination) (broker.CanaryWindow, error) {
	if err := e.NeedManagement("computing the canary window from the queues' dead-lettering arguments"); err != nil {
		return broker.CanaryWindow{Reason: err.Error()}, nil
	}
	t, err := LoadTopology(ctx, e.mgmt, e.ref.VHost)
	if err != nil {
		return broker.CanaryWindow{}, err
	}
	dlq := e.ref.Queue
	var starts []string
	if dests == nil {
		for _, q := range t.Queues {
			if q.Name != dlq {
				starts = append(starts, q.Name)
			}
		}
	}
	for _, d := range dests {
		r, ok := d.Target.(Route)
		switch {
		case !ok:
		case r.Queue != "":
			starts = append(starts, r.Queue)
		default:
			for _, k := range r.RoutingKeys {
				starts = append(starts, t.routes(r.Exchange, k, false)...)
			}
		}
	}
	w := broker.CanaryWindow{Known: true}
	for _, name := range starts {
		path, delay, ok := t.deadLetterPath(name, dlq)
		if !ok {
			continue
		}
		if need := delay + broker.CanaryMargin; !w.Returns || need > w.Need {
			w.Returns, w.Need = true, need
			w.Reason = t.describePath(path, dlq) + ", + " + broker.CanaryMargin.String()
		}
	}
	if !w.Returns {
		where := "no queue of vhost " + e.ref.VHost
		if dests != nil {
			where = "no destination queue (" + strings.Join(starts, ", ") + ")"
			if len(starts) == 0 {
				where = "the destination reaches no queue that"
			}
		}
		w.Reason = fmt.Sprintf("%s dead-letters into %s, so there is no return time to compute", where, dlq)
	}
	return w, nil
}

// deadLetterPath finds the quickest way a message dead-lettered by queue
// from takes into dlq through dead-letter exchanges (retry queues on the
// way hold it for their message TTL): the queues on the way (from first,
// dlq excluded) and the sum of their TTLs. ok is false when from's dead
// letters never reach dlq.
func (t *Topology) deadLetterPath(from, dlq string) (path []string, delay time.Duration, ok bool) {
	type hop struct {
		path  []string
		delay time.Duration
	}
	best := map[string]time.Duration{}
	queue := []hop{{path: []string{from}, delay: t.ttl(from)}}
	found := false
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		last := h.path[len(h.path)-1]
		q, ok := t.queue(last)
		if !ok {
			continue
		}
		for _, next := range t.dlqTargets(q) {
			if next == dlq {
				if !found || h.delay < delay {
					found, path, delay = true, h.path, h.delay
				}
				continue
			}
			d := h.delay + t.ttl(next)
			if prev, seen := best[next]; (seen && prev <= d) || next == from || len(h.path) > 8 {
				continue
			}
			best[next] = d
			queue = append(queue, hop{path: append(append([]string(nil), h.path...), next), delay: d})
		}
	}
	return path, delay, found
}

// ttl is a queue's message TTL (0 when it has none).
func (t *Topology) ttl(name string) time.Duration {
	q, ok := t.queue(name)
	if !ok {
		return 0
	}
	ms, ok := q.MessageTTL()
	if !ok || ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// describePath says how a failing message comes back along path into dlq,
// with the settings that decide when ("queue orders (quorum, delivery limit
// 20; message TTL 1m0s) dead-letters through orders-retry (message TTL 5s)
// into orders-dlq").
func (t *Topology) describePath(path []string, dlq string) string {
	var b strings.Builder
	for i, name := range path {
		q, _ := t.queue(name)
		var set []string
		if i == 0 {
			if l, ok := q.DeliveryLimit(); ok && q.Type == TypeQuorum {
				set = append(set, fmt.Sprintf("quorum, delivery limit %d, each requeue redelivered at once", l))
			}
		}
		if d := t.ttl(name); d > 0 {
			set = append(set, "message TTL "+d.String())
		} else if i == 0 {
			set = append(set, "no message TTL: a rejection dead-letters at once")
		} else {
			set = append(set, "no message TTL")
		}
		switch i {
		case 0:
			fmt.Fprintf(&b, "queue %s (%s) dead-letters", name, strings.Join(set, "; "))
		case 1:
			fmt.Fprintf(&b, " through %s (%s)", name, strings.Join(set, "; "))
		default:
			fmt.Fprintf(&b, ", %s (%s)", name, strings.Join(set, "; "))
		}
	}
	fmt.Fprintf(&b, " into %s", dlq)
	return b.String()
}
