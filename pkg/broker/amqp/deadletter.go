package amqp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// DeadLetterQueue is where copies published to this destination end up
// when they die again: the queue a restore canary watches. For a queue
// destination (published through the default exchange, routing key = the
// queue's name) it is a queue its dead-letter exchange routes to with the
// dead-letter routing key, or the copy's own key when none is set. For an
// exchange destination every queue the exchange routes the reference's
// routing key to is followed the same way, and one queue must receive the
// dead letters of all of them. Read from the management API (queue
// arguments, policies, bindings). An answer dlqctl cannot watch is bad
// input (exit 2) naming why and the way out: nothing was sent yet.
func (e *Endpoint) DeadLetterQueue(ctx context.Context) (string, error) {
	if err := e.NeedManagement("--canary (to find the queue the destination dead-letters to)"); err != nil {
		return "", errs.BadInput(err)
	}
	t, err := LoadTopology(ctx, e.mgmt, e.ref.VHost)
	if err != nil {
		return "", err
	}
	var queues []string
	key := e.ref.Queue
	if e.isExchange {
		key = e.routingKey
		queues = t.routes(e.exchange, key, false)
		if len(queues) == 0 {
			return "", errs.BadInputf("--canary watches where the copies are dead-lettered, but exchange %q routes routing key %q to no queue; restore to a queue (amqp://HOST/VHOST/QUEUE) or fix the bindings", e.exchange, key)
		}
	} else {
		queues = []string{e.ref.Queue}
	}
	var common []string // queues that receive the dead letters of every destination queue
	for i, name := range queues {
		q, ok := t.queue(name)
		if !ok {
			return "", fmt.Errorf("queue %q is not in the management API's list of vhost %q", name, e.ref.VHost)
		}
		dlx, ok := q.DeadLetterExchange()
		if !ok {
			return "", errs.BadInputf("--canary watches the destination's dead-letter queue, but queue %q has no dead-letter exchange (x-dead-letter-exchange or a policy's dead-letter-exchange), so a failing copy is dropped, not returned; restore to a queue with a dead-letter exchange, or drop --canary", name)
		}
		dkey := key
		if k, ok := q.DeadLetterRoutingKey(); ok {
			dkey = k
		}
		targets := t.routes(dlx, dkey, false)
		targets = slices.DeleteFunc(targets, func(s string) bool { return slices.Contains(queues, s) })
		if len(targets) == 0 {
			return "", errs.BadInputf("--canary watches the destination's dead-letter queue, but queue %q's dead-letter exchange %q routes routing key %q to no other queue, so a failing copy is dropped; bind a dead-letter queue to it, or drop --canary", name, dlx, dkey)
		}
		if i == 0 {
			common = targets
			continue
		}
		common = slices.DeleteFunc(common, func(s string) bool { return !slices.Contains(targets, s) })
		if len(common) == 0 {
			return "", errs.BadInputf("--canary watches one dead-letter queue, but the queues exchange %q routes to (%s) dead-letter to different queues; restore the canary --to one of those queues", e.exchange, strings.Join(queues, ", "))
		}
	}
	return common[0], nil
}

// Sibling opens another queue of the same vhost with the same connection
// settings and credentials (the queue a canary watches).
func (e *Endpoint) Sibling(ctx context.Context, queue string) (*Endpoint, error) {
	r := e.ref.WithQueue(queue)
	s := &Endpoint{ref: r, display: r.String(), cfg: e.cfg, mgmt: e.mgmt, exchanges: map[string]error{}}
	conn, err := s.dial(ctx, "check")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := readyCount(conn, queue); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("queue %q does not exist in vhost %q at %s: %w", queue, r.VHost, r.HostPort(), broker.ErrNotFound)
		}
		return nil, err
	}
	s.info, s.infoErr = s.mgmt.Queue(ctx, r.VHost, queue)
	if s.infoErr != nil {
		return nil, s.infoErr
	}
	return s, nil
}

var (
	_ broker.DeadLetterWatcher  = (*Endpoint)(nil)
	_ broker.DestinationDepther = (*Endpoint)(nil)
)

// DeadLetterEndpoint is the queue this queue dead-letters to (its
// dead-letter exchange and routing key, through the bindings), refused
// when a peek of it could change it (a quorum queue at its delivery
// limit).
func (e *Endpoint) DeadLetterEndpoint(ctx context.Context) (broker.Endpoint, error) {
	name, err := e.DeadLetterQueue(ctx)
	if err != nil {
		return nil, err
	}
	w, err := e.Sibling(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := CheckPeekSafe(w.Info()); err != nil {
		return nil, errs.BadInputf("--canary reads %s to find copies that came back: %v", name, err)
	}
	return w, nil
}
