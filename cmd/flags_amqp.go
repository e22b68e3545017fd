package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// envAMQPManagementURL is the default of --amqp-management-url.
const envAMQPManagementURL = "DLQCTL_AMQP_MANAGEMENT_URL"

// addAMQPFlags adds the RabbitMQ flag group (persistent: every command
// that takes a queue reference can be given an amqp:// one).
func addAMQPFlags(fs *pflag.FlagSet, c *amqp.Config) {
	fs.StringVar(&c.ManagementURL, "amqp-management-url", "", "RabbitMQ management HTTP API (default $DLQCTL_AMQP_MANAGEMENT_URL, else http://HOST:15672): queue types, arguments, depths, bindings, policies")
	fs.StringVar(&c.CAFile, "amqp-ca", "", "PEM file of CA certificates trusted for amqps:// (besides the system roots)")
	fs.IntVar(&c.Prefetch, "amqp-prefetch", 1000, "RabbitMQ: the most deliveries dlqctl holds unacknowledged at once (an unpaced redrive reads and publishes batches of prefetch / (2 × --concurrency), at most --amqp-confirm-window; a filtered redrive also holds the messages it skips until the end: it stops partial when they fill the prefetch)")
	fs.IntVar(&c.ConfirmWindow, "amqp-confirm-window", 256, "RabbitMQ: the most publishes awaiting a publisher confirm at once")
}

// amqpConfig is the RabbitMQ configuration: the flags, and credentials
// from DLQCTL_AMQP_USERNAME / DLQCTL_AMQP_PASSWORD for references without
// them (read here, in cmd, never below).
func (f *Factory) amqpConfig() amqp.Config {
	c := f.AMQP
	c.Username, c.Password = os.Getenv(amqp.EnvUsername), os.Getenv(amqp.EnvPassword)
	if c.ManagementURL == "" {
		c.ManagementURL = os.Getenv(envAMQPManagementURL)
	}
	if c.Idle <= 0 {
		c.Idle = time.Second
	}
	return c
}

func validateAMQPFlags(c amqp.Config) error {
	if c.Prefetch < 1 || c.Prefetch > 65535 {
		return errs.BadInputf("--amqp-prefetch must be between 1 and 65535 (got %d)", c.Prefetch)
	}
	if c.ConfirmWindow < 1 || c.ConfirmWindow > 100000 {
		return errs.BadInputf("--amqp-confirm-window must be between 1 and 100000 (got %d)", c.ConfirmWindow)
	}
	return nil
}

// isAMQPRef reports whether a reference names RabbitMQ (amqp://, amqps://).
func isAMQPRef(raw string) bool {
	l := strings.ToLower(strings.TrimSpace(raw))
	return strings.HasPrefix(l, "amqp://") || strings.HasPrefix(l, "amqps://")
}

// amqpVHost parses a reference to a RabbitMQ vhost (amqp://HOST/VHOST/,
// or a queue in it) for the commands that look at a whole vhost through
// the management API (queues, audit).
func (f *Factory) amqpVHost(raw string) (amqp.Ref, *amqp.Management, string, error) {
	bref, err := broker.ParseRef(raw)
	if err != nil {
		return amqp.Ref{}, nil, "", err
	}
	u := bref.URL()
	if u == nil || bref.Broker != broker.AMQP {
		return amqp.Ref{}, nil, "", errs.BadInputf("%s is not an amqp:// reference", bref)
	}
	cfg := f.amqpConfig()
	r, err := amqp.ParseVHostRef(u.String(), func(k string) string {
		switch k {
		case amqp.EnvUsername:
			return cfg.Username
		case amqp.EnvPassword:
			return cfg.Password
		}
		return ""
	})
	if err != nil {
		return amqp.Ref{}, nil, "", errs.BadInputf("%s: %s", bref, strings.TrimPrefix(err.Error(), amqp.ErrBadRef.Error()+" "))
	}
	m, err := amqp.NewManagement(r, cfg.ManagementURL, amqp.ConnOptions{CAFile: cfg.CAFile})
	if err != nil {
		return amqp.Ref{}, nil, "", errs.BadInput(err)
	}
	f.Verbosef("RabbitMQ vhost %q at %s, management API %s", r.VHost, r.HostPort(), m.URL())
	return r, m, r.Queue, nil
}

// amqpAuditors are the RabbitMQ vhosts to audit: every reference names a
// vhost (amqp://HOST/VHOST/) or a queue in it (only that queue's findings).
func amqpAuditors(f *Factory, refs []string, prefix string) ([]broker.Auditor, error) {
	var vhosts []*amqp.VHostAudit
	for _, raw := range refs {
		if !isAMQPRef(raw) {
			return nil, errs.BadInputf("audit takes references of one broker at a time: %q is not amqp:// like the others; run audit once per broker", raw)
		}
		r, m, q, err := f.amqpVHost(raw)
		if err != nil {
			return nil, err
		}
		var v *amqp.VHostAudit
		for _, x := range vhosts {
			if x.Ref.HostPort() == r.HostPort() && x.Ref.VHost == r.VHost {
				v = x
			}
		}
		if v == nil {
			v = &amqp.VHostAudit{Ref: r, Management: m, Prefix: prefix}
			vhosts = append(vhosts, v)
		}
		if q != "" {
			v.Queues = append(v.Queues, q)
		}
	}
	out := make([]broker.Auditor, len(vhosts))
	for i, v := range vhosts {
		out[i] = v
	}
	return out, nil
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// AMQPDLQInfo is one RabbitMQ dead-letter queue (queues -o json).
type AMQPDLQInfo struct {
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

// amqpQueuesRun lists a vhost's dead-letter queues: queues some queue's
// dead letters reach through its dead-letter exchange.
func amqpQueuesRun(ctx context.Context, opts *QueuesOptions, raw string) error {
	f := opts.F
	r, m, q, err := f.amqpVHost(raw)
	if err != nil {
		return err
	}
	if q != "" {
		return errs.BadInputf("queues lists a whole vhost: pass amqp://HOST/VHOST/ (with --prefix to narrow it), not a queue")
	}
	topo, err := amqp.LoadTopology(ctx, m, r.VHost)
	if err != nil {
		return broker.StartError(err)
	}
	dlqs := amqp.DeadLetterQueues(topo)
	var out []AMQPDLQInfo
	for _, d := range dlqs {
		if !strings.HasPrefix(d.Queue.Name, opts.Prefix) {
			continue
		}
		x := AMQPDLQInfo{Name: d.Queue.Name, Ref: r.WithQueue(d.Queue.Name).String(), Type: d.Queue.Type,
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
				x.Warnings = append(x.Warnings, fmt.Sprintf("dead letters expire after %s", output.Duration(time.Duration(x.TTLMillis)*time.Millisecond)))
			}
		}
		out = append(out, x)
	}
	if out == nil {
		out = []AMQPDLQInfo{}
	}
	if done, err := writeStructured(f, out, out); done {
		return err
	}
	if len(out) == 0 {
		f.IO.Infof("no dead-letter queues found in vhost %q (no queue's dead-letter exchange routes to a queue%s)", r.VHost, map[bool]string{true: " named " + opts.Prefix + "*", false: ""}[opts.Prefix != ""])
		return nil
	}
	t := output.NewTable(f.IO, "DLQ", "TYPE", "READY", "UNACKED", "CONSUMERS", "LIMITS", "SOURCES")
	for _, d := range out {
		var lim []string
		if d.MaxLength > 0 {
			lim = append(lim, fmt.Sprintf("max-length %d", d.MaxLength))
		}
		if d.TTLMillis > 0 {
			lim = append(lim, "ttl "+output.Duration(time.Duration(d.TTLMillis)*time.Millisecond))
		}
		if len(lim) == 0 {
			lim = []string{"-"}
		}
		t.Row(d.Name, d.Type, fmt.Sprint(d.Ready), fmt.Sprint(d.Unacked), fmt.Sprint(d.Consumers), strings.Join(lim, ", "), strings.Join(d.Sources, ", "))
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, d := range out {
		for _, w := range d.Warnings {
			f.IO.Warnf("%s: %s", d.Name, w)
		}
	}
	f.IO.Infof("counts from the management API (they trail the queues by its statistics interval, 5 s by default)")
	return nil
}

// warnPeekSideEffects prints what reading queue without consuming it
// changes (before reading): SQS's receive counts and FIFO group locks,
// RabbitMQ's redelivered flag and quorum delivery counts.
func warnPeekSideEffects(ctx context.Context, f *Factory, queue string) error {
	if !isAMQPRef(queue) {
		_, q, err := f.ResolveQueue(ctx, queue)
		if err != nil {
			return err
		}
		for _, w := range SideEffectWarnings(q) {
			f.IO.Warnf("%s", w)
		}
		return nil
	}
	ep, err := f.Endpoint(ctx, queue)
	if err != nil {
		return err
	}
	a, ok := ep.(*amqp.Endpoint)
	if !ok {
		return nil
	}
	if err := amqp.CheckPeekSafe(a.Info()); err != nil {
		return errs.BadInput(err)
	}
	switch a.Info().Type {
	case amqp.TypeQuorum:
		f.IO.Warnf("%s is a quorum queue: each message read is returned with a requeue, which counts as a delivery attempt (x-delivery-count) and may change the order", a.Name())
	case amqp.TypeClassic:
		f.Verbosef("%s is a classic queue: messages read are returned in place (they are marked redelivered)", a.Name())
	case amqp.TypeStream:
		f.Verbosef("%s is a stream: it is read by offset, nothing changes", a.Name())
	}
	return nil
}
