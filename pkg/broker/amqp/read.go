package amqp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

var (
	_ broker.PeekChecker = (*Endpoint)(nil)
	_ broker.DLQLister   = (*VHostLister)(nil)
)

// CheckPeek refuses a peek that could push quorum-queue messages over
// their delivery limit (CheckPeekSafe) and says what a peek changes: a
// quorum queue counts each requeue as a delivery attempt; a classic queue
// returns messages in place, marked redelivered; a stream changes nothing.
func (e *Endpoint) CheckPeek() (broker.PeekAdvice, error) {
	var adv broker.PeekAdvice
	if err := CheckPeekSafe(e.info); err != nil {
		return adv, err
	}
	switch e.info.Type {
	case TypeQuorum:
		adv.Warnings = append(adv.Warnings, fmt.Sprintf("%s is a quorum queue: each message read is returned with a requeue, which counts as a delivery attempt (x-delivery-count) and may change the order", e.Name()))
	case TypeClassic:
		adv.Notes = append(adv.Notes, fmt.Sprintf("%s is a classic queue: messages read are returned in place (they are marked redelivered)", e.Name()))
	case TypeStream:
		adv.Notes = append(adv.Notes, fmt.Sprintf("%s is a stream: it is read by offset, nothing changes", e.Name()))
	}
	return adv, nil
}

// DLQInfo is one RabbitMQ dead-letter queue (queues -o json).
type DLQInfo struct {
	Name      string   `json:"name"`
	Ref       string   `json:"ref"`
	Type      string   `json:"type"`
	Ready     int64    `json:"ready"`
	Unacked   int64    `json:"unacked"`
	Consumers int      `json:"consumers"`
	Sources   []string `json:"sources"`
	MaxLength int64    `json:"max_length,omitempty"`
	TTLMillis int64    `json:"message_ttl_ms,omitempty"`
	Warnings  []string `json:"warnings"`
}

// VHostLister lists a vhost's dead-letter queues (`dlqctl queues
// amqp://HOST/VHOST/`): queues some queue's dead letters reach through its
// dead-letter exchange, read from the management API.
type VHostLister struct {
	Ref        Ref
	Management *Management
}

// ListDLQs lists the vhost's dead-letter queues whose names start with
// opt.Prefix. Failing to read the management API is a failure to start
// (broker.StartError): nothing was read.
func (l *VHostLister) ListDLQs(ctx context.Context, opt broker.ListOptions) (broker.DLQListing, error) {
	topo, err := LoadTopology(ctx, l.Management, l.Ref.VHost)
	if err != nil {
		return broker.DLQListing{}, broker.StartError(err)
	}
	dur := opt.Duration
	out := []DLQInfo{}
	for _, d := range DeadLetterQueues(topo) {
		if !strings.HasPrefix(d.Queue.Name, opt.Prefix) {
			continue
		}
		x := DLQInfo{Name: d.Queue.Name, Ref: l.Ref.WithQueue(d.Queue.Name).String(), Type: d.Queue.Type,
			Ready: d.Queue.Ready, Unacked: d.Queue.Unacked, Consumers: d.Queue.Consumers, Sources: d.Sources, Warnings: []string{}}
		x.MaxLength, _ = d.Queue.MaxLength()
		x.TTLMillis, _ = d.Queue.MessageTTL()
		if x.MaxLength == 0 {
			if _, ok := d.Queue.MaxLengthBytes(); !ok {
				x.Warnings = append(x.Warnings, "no length limit: an incident can fill it until the node's memory or disk alarm blocks publishers")
			}
		}
		if x.TTLMillis > 0 {
			if _, ok := d.Queue.DeadLetterExchange(); !ok {
				x.Warnings = append(x.Warnings, fmt.Sprintf("dead letters expire after %s", dur(millis(x.TTLMillis))))
			}
		}
		out = append(out, x)
	}
	named := ""
	if opt.Prefix != "" {
		named = " named " + opt.Prefix + "*"
	}
	res := broker.DLQListing{Items: broker.Items(out),
		None:    fmt.Sprintf("no dead-letter queues found in vhost %q (no queue's dead-letter exchange routes to a queue%s)", l.Ref.VHost, named),
		Columns: []string{"DLQ", "TYPE", "READY", "UNACKED", "CONSUMERS", "LIMITS", "SOURCES"},
		Note:    "counts from the management API (they trail the queues by its statistics interval, 5 s by default)"}
	for _, d := range out {
		var lim []string
		if d.MaxLength > 0 {
			lim = append(lim, fmt.Sprintf("max-length %d", d.MaxLength))
		}
		if d.TTLMillis > 0 {
			lim = append(lim, "ttl "+dur(millis(d.TTLMillis)))
		}
		if len(lim) == 0 {
			lim = []string{"-"}
		}
		res.Rows = append(res.Rows, []string{d.Name, d.Type, fmt.Sprint(d.Ready), fmt.Sprint(d.Unacked), fmt.Sprint(d.Consumers), strings.Join(lim, ", "), strings.Join(d.Sources, ", ")})
	}
	for _, d := range out {
		for _, w := range d.Warnings {
			res.Warnings = append(res.Warnings, d.Name+": "+w)
		}
	}
	return res, nil
}

func millis(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
