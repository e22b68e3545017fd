package amqp

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

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

var (
	_ broker.DepthReader = (*Endpoint)(nil)
	_ broker.Auditor     = (*VHostAudit)(nil)
)

// VHostAudit is a vhost to audit (audit amqp://HOST/VHOST/): its queues'
// dead-lettering, followed through exchanges and bindings, from the
// management API. Queues narrows it to those queues (references naming a
// queue), else Prefix to the queues whose name starts with it.
type VHostAudit struct {
	Ref        Ref
	Management *Management
	Queues     []string
	Prefix     string
}

// Audit loads the vhost's topology and checks it (package func Audit). It
// reads no message.
func (v *VHostAudit) Audit(ctx context.Context, _ broker.AuditOptions) (broker.AuditResult, error) {
	topo, err := LoadTopology(ctx, v.Management, v.Ref.VHost)
	if err != nil {
		return broker.AuditResult{}, fmt.Errorf("audit %s: %w", v.Ref.WithQueue(""), err)
	}
	display := func(q string) string { return v.Ref.WithQueue(q).String() }
	res := broker.AuditResult{Audited: []string{},
		Findings: Audit(topo, AuditOptions{Queues: v.Queues, Prefix: v.Prefix}, display)}
	for _, q := range topo.Queues {
		if (len(v.Queues) == 0 && strings.HasPrefix(q.Name, v.Prefix)) || slices.Contains(v.Queues, q.Name) {
			res.Audited = append(res.Audited, q.Name)
		}
	}
	res.Notes = []string{fmt.Sprintf("RabbitMQ %s, vhost %q: dead letters followed through exchanges and bindings (headers-exchange arguments are not evaluated)", topo.Version, topo.VHost)}
	return res, nil
}
