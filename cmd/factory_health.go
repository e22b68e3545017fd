package cmd

// The factory's part for the commands that look at many queues at once
// (audit, queues, ui): auditors and DLQ listers per broker. Like
// factory.go, it may import the broker packages (imports_test.go).

import (
	"context"
	"strings"

	"github.com/dlqctl/dlqctl/internal/helplayout"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs/origins"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/finding"
	"github.com/dlqctl/dlqctl/pkg/health"
)

// What audit and doctor check on each broker, as their --help lists it:
// the tables live in the broker packages, with the code that checks.
var (
	auditRules = struct{ sqs, origins, amqp, kafka string }{
		sqs: ruleTable(sqs.AuditRules), origins: ruleTable(origins.AuditRules),
		amqp: ruleTable(amqp.AuditRules), kafka: ruleTable(kafka.AuditRules),
	}
	doctorChecks = struct{ amqp, kafka string }{checkTable(amqp.DoctorChecks), checkTable(kafka.DoctorChecks)}
)

func ruleTable(rules []finding.Rule) string {
	rows := make([][]string, len(rules))
	for i, r := range rules {
		rows[i] = []string{string(r.Severity), r.Check, r.Summary}
	}
	return helplayout.Columns(rows, 92)
}

func checkTable(checks []broker.DoctorCheckDoc) string {
	rows := make([][]string, len(checks))
	for i, c := range checks {
		rows[i] = []string{c.Name, c.What}
	}
	return helplayout.Columns(rows, 80)
}

// sqsTargets parses references that must name SQS queues (audit's) and
// returns the form the SQS package resolves; any other broker is bad input
// naming it (never its credentials).
func sqsTargets(raw []string) ([]string, error) {
	out := make([]string, len(raw))
	for i, r := range raw {
		ref, err := checkRef(r)
		if err != nil {
			return nil, err
		}
		out[i] = ref.Target
	}
	return out, nil
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
		if ref, err := broker.ParseRef(raw); err == nil && ref.Broker != broker.AMQP {
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

// auditScopes: audit's references name scopes whose queues --prefix
// narrows (RabbitMQ vhosts), rather than queues or topics (SQS, Kafka),
// which are given instead of --prefix.
func auditScopes(raw string) bool {
	ref, err := broker.ParseRef(raw)
	return err == nil && (ref.Broker == broker.AMQP || kafkaCluster(raw))
}

// kafkaCluster reports whether raw names a Kafka cluster, not a topic:
// kafka://HOST:PORT[,HOST:PORT…] with no topic after it.
func kafkaCluster(raw string) bool {
	_, rest, ok := kafka.SplitCluster(raw)
	return ok && rest == ""
}

// auditors turns audit's references into what each broker audits (one
// broker per run): an SQS selection (named queues, a prefix, or the
// region), RabbitMQ vhosts, or Kafka topics (endpoints that are
// broker.Auditors) and clusters (kafka.ClusterAudit, with --prefix). noun
// names what is counted; the endpoints opened are returned for the caller
// to close (also on an error).
func (f *Factory) auditors(ctx context.Context, refs []string, prefix string, onSample func(queue string, n int)) (auditors []broker.Auditor, noun string, opened []broker.Endpoint, err error) {
	if len(refs) > 0 {
		if ref, err := broker.ParseRef(refs[0]); err == nil && ref.Broker == broker.AMQP {
			a, err := amqpAuditors(f, refs, prefix)
			return a, "queue(s)", nil, err
		}
	}
	k := 0
	for _, r := range refs {
		if kafka.IsReference(strings.TrimSpace(r)) {
			k++
		}
	}
	if k > 0 {
		if k != len(refs) {
			return nil, "", nil, errs.BadInputf("audit takes either SQS queues or kafka:// topics in one run, not both; run it once per broker")
		}
		for _, ref := range refs {
			if cluster, rest, _ := kafka.SplitCluster(ref); rest == "" {
				// The whole cluster (what queues lists): parsed, and its
				// credentials checked, as a topic reference on it.
				ep, err := f.KafkaEndpoint(ctx, kafka.OnCluster(cluster))
				if err != nil {
					return nil, "", opened, err
				}
				opened = append(opened, ep)
				auditors = append(auditors, &kafka.ClusterAudit{Addr: ep.Address(), Conn: ep.Conn(), Prefix: prefix, Group: f.Kafka.Group})
				continue
			}
			ep, err := f.Endpoint(ctx, ref)
			if err != nil {
				return nil, "", opened, broker.StartError(err)
			}
			opened = append(opened, ep)
			a, ok := ep.(broker.Auditor)
			if !ok {
				return nil, "", opened, errs.BadInputf("%s cannot be audited on its own: %s is audited by its vhost or region", ep, ep.Capabilities().Label)
			}
			auditors = append(auditors, a)
		}
		return auditors, "topic(s)", opened, nil
	}
	queues, err := sqsTargets(refs)
	if err != nil {
		return nil, "", nil, err
	}
	c, err := f.SQS(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	oa, err := f.originAuditor(ctx, c, queues, prefix)
	if err != nil {
		return nil, "", nil, err
	}
	return []broker.Auditor{&sqs.Auditor{Client: c, Queues: queues, Prefix: prefix, OnSample: onSample, Sample: health.Sample}, oa}, "queue(s)", nil, nil
}

// dlqLister is what `queues` lists: the region's SQS dead-letter queues
// (scope ""), a RabbitMQ vhost's (amqp://HOST/VHOST/) or a Kafka
// cluster's dead-letter and retry topics (kafka://HOST:PORT[/PREFIX]),
// with the name prefix to list. done releases what was opened.
func (f *Factory) dlqLister(ctx context.Context, scope, prefix string) (l broker.DLQLister, pfx string, done func(), err error) {
	done = func() {}
	if scope == "" {
		c, err := f.SQS(ctx)
		return c, prefix, done, err
	}
	ref, err := broker.ParseRef(scope)
	if err != nil {
		return nil, "", done, err
	}
	switch ref.Broker {
	case broker.AMQP:
		r, m, q, err := f.amqpVHost(scope)
		if err != nil {
			return nil, "", done, err
		}
		if q != "" {
			return nil, "", done, errs.BadInputf("queues lists a whole vhost: pass amqp://HOST/VHOST/ (with --prefix to narrow it), not a queue")
		}
		return &amqp.VHostLister{Ref: r, Management: m}, prefix, done, nil
	case broker.Kafka:
		cluster, path, _ := kafka.SplitCluster(scope)
		if prefix != "" && path != "" {
			return nil, "", done, errs.BadInputf("give the topic prefix once: kafka://HOST:PORT/PREFIX or --prefix PREFIX")
		}
		if path != "" {
			prefix = path
		}
		// Parse (and check credentials) as a topic reference on the cluster.
		ep, err := f.KafkaEndpoint(ctx, kafka.OnCluster(cluster))
		if err != nil {
			return nil, "", done, err
		}
		return &kafka.TopicLister{Addr: ep.Address(), Conn: ep.Conn(), Group: f.Kafka.Group}, prefix, ep.Close, nil
	}
	return nil, "", done, errs.BadInputf("%s: queues lists SQS queues (no argument), a RabbitMQ vhost or a Kafka cluster", ref)
}
