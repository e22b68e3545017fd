package cmd

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/pkg/awsconf"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs/origins"
	"github.com/dlqctl/dlqctl/pkg/doctor"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// GlobalOptions are the persistent flags every command shares.
type GlobalOptions struct {
	// Region, profile, endpoints and S3 addressing (awsconf.Settings).
	awsconf.Settings
	Output   string
	NoColor  bool
	Yes      bool
	StateDir string
	Verbose  bool
	// BucketOwner and RequesterPays apply to every S3 call (--bucket-owner,
	// --requester-pays).
	BucketOwner   string
	RequesterPays bool
}

// Factory gives commands what they need without globals: streams, options
// and lazily built AWS clients.
type Factory struct {
	IO   *output.IOStreams
	Opts GlobalOptions
	// AMQP is the RabbitMQ flag group (cmd/flags_amqp.go).
	AMQP amqp.Config
	// Kafka is the Kafka connection (flags_kafka.go).
	Kafka kafka.Config

	awsOnce sync.Once
	awsC    *awsconf.Clients
	sqsOnce sync.Once
	sqsC    *sqs.Client
}

// Format returns the validated -o value.
func (f *Factory) Format() (output.Format, error) { return output.ParseFormat(f.Opts.Output) }

// Verbosef prints a line to stderr when -v is set.
func (f *Factory) Verbosef(format string, a ...any) {
	if f.Opts.Verbose {
		f.IO.Infof(format, a...)
	}
}

// StateDir returns --state-dir, else $DLQCTL_STATE_DIR, else
// $XDG_STATE_HOME/dlqctl (~/.local/state/dlqctl).
func (f *Factory) StateDir() string {
	if f.Opts.StateDir != "" {
		return f.Opts.StateDir
	}
	if d := os.Getenv("DLQCTL_STATE_DIR"); d != "" {
		return d
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "dlqctl")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "dlqctl")
	}
	return filepath.Join(os.TempDir(), "dlqctl-state")
}

// SQS returns the SQS client (with its own retryer).
func (f *Factory) SQS(ctx context.Context) (*sqs.Client, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	f.sqsOnce.Do(func() {
		api := awssqs.NewFromConfig(cfg, func(o *awssqs.Options) {
			o.Retryer = awsconf.NewRetryer()
			if e := f.Opts.SQSEndpointFlag(); e != "" {
				o.BaseEndpoint = aws.String(e)
			}
		})
		f.sqsC = sqs.New(api, cfg.Region)
		f.Verbosef("region %s, sqs endpoint %s", cfg.Region, awsconf.EndpointOr(f.Opts.SQSEndpointFlag(), "AWS_ENDPOINT_URL_SQS"))
	})
	return f.sqsC, nil
}

// brokerCapabilities are the capabilities of every broker dlqctl speaks as
// they are known before anything connects (SQS standard queues, RabbitMQ
// queues of unknown type, Kafka topics): pkg/refuse checks the flags
// against them right after the references are parsed. What depends on the
// resolved queue (a FIFO queue, a RabbitMQ stream) is checked again once
// it is resolved.
func brokerCapabilities() []broker.Capabilities {
	return []broker.Capabilities{sqs.Capabilities(false), amqp.Capabilities(""), kafka.Capabilities()}
}

// Endpoint parses a queue reference once and resolves it with its
// broker's opener (endpointOpeners): the one place that knows the broker
// packages.
func (f *Factory) Endpoint(ctx context.Context, raw string) (broker.Endpoint, error) {
	ref, err := checkRef(raw)
	if err != nil {
		return nil, err
	}
	return f.EndpointOf(ctx, ref)
}

// EndpointOf opens the endpoint of a reference already checked (checkRef)
// with its broker's opener.
func (f *Factory) EndpointOf(ctx context.Context, ref broker.Ref) (broker.Endpoint, error) {
	o, ok := endpointOpeners[ref.Broker]
	if !ok {
		return nil, errs.BadInputf("%s: unknown broker %q", ref, ref.Broker)
	}
	return o.open(ctx, f, ref)
}

// endpointOpener opens the endpoints of one broker: the factory holds one
// per broker dlqctl speaks (endpointOpeners), and Factory.Endpoint
// dispatches to it; one that is a refChecker is asked by checkRef.
type endpointOpener interface {
	open(ctx context.Context, f *Factory, ref broker.Ref) (broker.Endpoint, error)
}

// refChecker refuses, before anything is sent anywhere, a reference its
// broker cannot read.
type refChecker interface{ check(ref broker.Ref) error }

var endpointOpeners = map[string]endpointOpener{broker.SQS: sqsOpener{}, broker.AMQP: amqpOpener{}, broker.Kafka: kafkaOpener{}}

type sqsOpener struct{}

// check checks the shape of a URL or ARN now, before any call.
func (sqsOpener) check(ref broker.Ref) error {
	_, err := sqs.ParseRef(ref.Target)
	return err
}

func (sqsOpener) open(ctx context.Context, f *Factory, ref broker.Ref) (broker.Endpoint, error) {
	return f.sqsEndpoint(ctx, ref)
}

type amqpOpener struct{}

func (amqpOpener) open(ctx context.Context, f *Factory, ref broker.Ref) (broker.Endpoint, error) {
	if err := validateAMQPFlags(f.AMQP); err != nil {
		return nil, err
	}
	ep, err := amqp.OpenEndpoint(ctx, ref, f.amqpConfig())
	if err != nil {
		return nil, err
	}
	f.Verbosef("queue %s -> %s (%s queue, management API %s)", ref, ep.ID(), ep.Info().Type, ep.Management().URL())
	return ep, nil
}

// DoctorChecks runs the broker package's doctor on a RabbitMQ or Kafka
// reference: reaching the broker, logging in, the queue or topic and its
// settings, permissions (nil for SQS, whose permissions doctor proves
// through IAM). The error is bad input only.
func (f *Factory) DoctorChecks(ctx context.Context, ref broker.Ref) ([]broker.DoctorCheck, error) {
	switch ref.Broker {
	case broker.AMQP:
		if err := validateAMQPFlags(f.AMQP); err != nil {
			return nil, err
		}
		return amqp.Doctor(ctx, ref, f.amqpConfig())
	case broker.Kafka:
		cs, err := kafka.Doctor(ctx, ref, f.kafkaConfig())
		return cs, kafkaErr(err)
	}
	return nil, nil
}

// checkRef parses a queue reference and refuses, before anything is sent
// anywhere, one whose broker this dlqctl does not speak (one sentence, no
// credentials). Commands call it while validating their flags.
func checkRef(raw string) (broker.Ref, error) {
	ref, err := broker.ParseRef(raw)
	if err != nil {
		return ref, err
	}
	if c, ok := endpointOpeners[ref.Broker].(refChecker); ok {
		err = c.check(ref)
	}
	return ref, err
}

// SQSEndpoint resolves a reference that must name an SQS queue (the
// command paths that only SQS has, such as the native engine).
func (f *Factory) SQSEndpoint(ctx context.Context, raw string) (*sqs.Endpoint, error) {
	if ref, err := broker.ParseRef(raw); err == nil && ref.Broker == broker.AMQP {
		return nil, errs.BadInputf("%s is a RabbitMQ queue; this command works on SQS queues only (on RabbitMQ: sample, group, classify, redrive, archive, restore, queues, audit, check and watch)", ref)
	}
	ep, err := f.Endpoint(ctx, raw)
	if err != nil {
		return nil, err
	}
	s, ok := ep.(*sqs.Endpoint)
	if !ok {
		return nil, errs.BadInputf("%s is a %s queue; this command works on SQS queues only", ep, ep.Capabilities().Label)
	}
	return s, nil
}

func (f *Factory) sqsEndpoint(ctx context.Context, ref broker.Ref) (*sqs.Endpoint, error) {
	c, err := f.SQS(ctx)
	if err != nil {
		return nil, err
	}
	ep, err := sqs.Open(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	f.Verbosef("queue %s -> %s", ref, ep.Queue().URL)
	return f.withHoldLedger(ep), nil
}

// SQSQueue makes an SQS queue resolved some other way (a source queue, a
// destination read from a journal) an endpoint.
func (f *Factory) SQSQueue(c *sqs.Client, q *sqs.Queue) *sqs.Endpoint {
	return f.withHoldLedger(sqs.NewEndpoint(c, q))
}

// withHoldLedger keeps the queue's hold ledger in the state dir
// (docs/state.md): a run knows what a killed dlqctl process still hides.
func (f *Factory) withHoldLedger(ep *sqs.Endpoint) *sqs.Endpoint {
	return ep.WithHoldLedger(f.StateDir(),
		func(s string) { f.IO.Infof("%s", s) },
		func(s string) { f.IO.Warnf("%s", s) })
}

// ResolveQueue resolves a reference that must name an SQS queue and prints
// the URL with -v.
func (f *Factory) ResolveQueue(ctx context.Context, ref string) (*sqs.Client, *sqs.Queue, error) {
	ep, err := f.SQSEndpoint(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	return ep.Client(), ep.Queue(), nil
}

// sqsQueueARN is the ARN of a reference that must name an SQS queue: an
// ARN as written (no call), else the resolved queue's.
func (f *Factory) sqsQueueARN(ctx context.Context, ref string) (string, error) {
	if r, err := sqs.ParseRef(ref); err == nil && r.Kind == sqs.RefARN {
		return r.Raw, nil
	}
	_, q, err := f.ResolveQueue(ctx, ref)
	if err != nil {
		return "", err
	}
	return q.ARN, nil
}

// maxLeaseHold is the longest a broker that holds messages with a
// visibility timeout lets a read hold one (SQS: 12 h), the bound of
// --visibility.
func maxLeaseHold() time.Duration {
	var m time.Duration
	for _, c := range brokerCapabilities() {
		if c.Hold == broker.HoldLease && c.MaxHold > m {
			m = c.MaxHold
		}
	}
	return m
}

// parseQueueRef gives doctor the SQS package's reading of a queue
// reference (every AWS URL form, ARNs, names).
func parseQueueRef(ref string) (doctor.QueueRef, error) {
	br, err := checkRef(ref)
	if err != nil {
		return doctor.QueueRef{}, err
	}
	r, err := sqs.ParseRef(br.Target)
	if err != nil {
		return doctor.QueueRef{}, err
	}
	out := doctor.QueueRef{Name: r.Name, Account: r.Account, Region: r.Region}
	if r.Kind == sqs.RefURL {
		out.URL = r.URL
	}
	return out, nil
}

// startErr maps an error met before anything was read or changed, on any
// broker: a broker package's bad input (Kafka's UsageError) and an
// unreachable broker, refused credentials or a missing queue are exit 2
// (broker.StartError).
func startErr(err error) error { return kafkaErr(err) }

// redriveOrigins is how a redrive --to source reaches origins that are
// not queues of the DLQ's broker: an SQS DLQ fed by Lambda functions, SNS
// subscriptions or EventBridge targets (package origins); explicit is
// --origin. ok is false for a DLQ of another broker, which has none.
func (f *Factory) redriveOrigins(ctx context.Context, ep broker.Endpoint, explicit string) (route redrive.Route, ok bool, err error) {
	s, isSQS := ep.(*sqs.Endpoint)
	if !isSQS {
		return route, false, nil
	}
	r, p, err := f.awsOrigins(ctx, s.Client(), s.Queue(), explicit)
	if err != nil {
		return route, true, err
	}
	return redrive.Route{Router: r, PubEp: ep, Pub: p, Origins: &redrive.Origins{
		Watch: origins.Watch(ep, r),
		Dests: func(ctx context.Context) ([]broker.Destination, error) {
			cands, err := r.Candidates(ctx)
			return origins.Destinations(cands), err
		},
		Unreplayed: origins.Unreplayed,
	}}, true, nil
}

// awsOrigins builds the router and publisher of `redrive --to source` for
// an SQS DLQ fed by Lambda functions, SNS subscriptions or EventBridge
// targets (package origins); explicit is --origin. Messages that name an
// SQS source queue still go there.
func (f *Factory) awsOrigins(ctx context.Context, c *sqs.Client, dlq *sqs.Queue, explicit string) (*origins.Resolver, *origins.Publisher, error) {
	o, err := f.aws().Origins(ctx)
	if err != nil {
		return nil, nil, err
	}
	cl := origins.Clients{Lambda: o.Lambda, SNS: o.SNS, Events: o.EventBridge, SQS: c, Kinesis: o.Kinesis}
	r, err := origins.NewResolver(cl, dlq, explicit)
	if err != nil {
		return nil, nil, err
	}
	fb, err := sqs.ToSource(ctx, c, dlq)
	if err != nil {
		return nil, nil, err
	}
	r.Fallback = fb
	if err := r.ValidateExplicit(ctx); err != nil {
		return nil, nil, err
	}
	return r, origins.NewPublisher(cl), nil
}

// originAuditor is the audit of the traps of SQS DLQs fed by Lambda, SNS
// and EventBridge (package origins). A service with no endpoint of its
// own while SQS has one (--endpoint-url, AWS_ENDPOINT_URL_SQS: a local
// emulator) is not asked: its answer would be about another world (AWS's)
// than the queues'; the audit notes it.
func (f *Factory) originAuditor(ctx context.Context, c *sqs.Client, queues []string, prefix string) (*origins.Auditor, error) {
	o, err := f.aws().Origins(ctx)
	if err != nil {
		return nil, err
	}
	a := &origins.Auditor{Clients: origins.Clients{SQS: c, Lambda: o.Lambda, SNS: o.SNS, Events: o.EventBridge}, Queues: queues, Prefix: prefix, Skipped: map[origins.Kind]string{}}
	sqsEP := f.Opts.SQSEndpointFlag()
	if sqsEP == "" {
		sqsEP = os.Getenv("AWS_ENDPOINT_URL_SQS")
	}
	if sqsEP == "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
		return a, nil
	}
	for kind, env := range map[origins.Kind]string{origins.KindFunction: "AWS_ENDPOINT_URL_LAMBDA", origins.KindSubscription: "AWS_ENDPOINT_URL_SNS", origins.KindTarget: "AWS_ENDPOINT_URL_EVENTBRIDGE"} {
		if os.Getenv(env) == "" {
			a.Skipped[kind] = "SQS is served by " + sqsEP + " and " + env + " is not set"
		}
	}
	return a, nil
}
