package amqp

import (
	"fmt"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// MaxPrefetch is RabbitMQ's largest prefetch count (basic.qos takes a
// 16-bit count): no consumer holds more unacknowledged deliveries.
const MaxPrefetch = 65535

var _ broker.HeldLimiter = (*Endpoint)(nil)

// HeldLimit: a reader that acknowledges as it goes holds at most its
// prefetch (--amqp-prefetch); one that gives everything back at its end
// asks for the largest prefetch, and RabbitMQ delivers no more.
func (e *Endpoint) HeldLimit(removing bool) (int, string) {
	if removing {
		return e.cfg.Prefetch, "--amqp-prefetch: RabbitMQ delivers no more unacknowledged"
	}
	return MaxPrefetch, fmt.Sprintf("RabbitMQ delivers at most %d unacknowledged", MaxPrefetch)
}
