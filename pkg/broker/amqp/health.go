package amqp

import (
	"context"
	"strconv"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// ReadDepth is Depth for check and watch: the ready count (exact), what
// consumers hold unacknowledged and the consumers attached (management
// API). RabbitMQ keeps no age of its oldest message: the health commands
// peek the head of the queue, aging each message from its timestamp
// property, else its first death (x-death). Without the management API
// the unacknowledged count is unknown: bad input (exit 2).
func (e *Endpoint) ReadDepth(ctx context.Context, _ bool) (broker.DepthReading, error) {
	if err := e.NeedManagement("check and watch (consumers' unacknowledged messages and the queue type)"); err != nil {
		return broker.DepthReading{}, errs.BadInput(err)
	}
	d, err := e.Depth(ctx)
	if err != nil {
		return broker.DepthReading{}, err
	}
	r := broker.DepthReading{Depth: d, Terms: broker.DepthTerms{Ready: "ready", Held: "unacknowledged",
		AgeFrom: "from each message's timestamp or first death", HeadFirst: e.Capabilities().Ordering == broker.OrderQueue}}
	consumers := "unknown (management API)"
	if qi, err := e.mgmt.Queue(ctx, e.ref.VHost, e.ref.Queue); err == nil {
		consumers = strconv.Itoa(qi.Consumers)
	}
	r.Gauges = []broker.Gauge{{Name: "consumers", Value: consumers}}
	return r, nil
}

var _ broker.DepthReader = (*Endpoint)(nil)
