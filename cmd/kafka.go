package cmd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// isKafkaRef reports whether a queue reference is kafka://….
func isKafkaRef(s string) bool { return kafka.IsReference(strings.TrimSpace(s)) }

// KafkaEndpoint resolves a kafka:// reference with the Kafka flags, the
// password from DLQCTL_KAFKA_PASSWORD and, for AWS_MSK_IAM, the AWS
// credential chain. Bad references and settings are exit 2.
func (f *Factory) KafkaEndpoint(ctx context.Context, refStr string) (*kafka.Endpoint, error) {
	ref, err := broker.ParseRef(refStr)
	if err != nil {
		return nil, err
	}
	cfg := f.kafkaConfig()
	// The member ledger: a re-run after a kill waits for the killed run's
	// group members (docs/kafka.md).
	cfg.StateDir = f.StateDir()
	cfg.Tell = func(s string) { f.IO.Infof("%s", s) }
	cfg.Warn = func(s string) { f.IO.Warnf("%s", s) }
	ep, err := kafka.Open(ctx, ref, cfg)
	if err != nil {
		return nil, kafkaErr(err)
	}
	f.Verbosef("Kafka topic %s, consumer group %s", ep, ep.Group())
	return ep, nil
}

// kafkaErr maps the Kafka package's errors met before anything changed
// to exit codes: bad input, an unreachable cluster, a refused login or
// ACL and a missing topic are exit 2, as on every broker.
func kafkaErr(err error) error {
	if err == nil {
		return nil
	}
	var ue *kafka.UsageError
	if errors.As(err, &ue) {
		return errs.BadInputf("%s", ue.Msg)
	}
	return broker.StartError(err)
}

// kafkaRunErr maps the error that ended a run, after it may have moved
// records: only bad input and a missing topic are exit 2 there; a cluster
// lost in the middle of a run is an error (1).
func kafkaRunErr(err error) error {
	if err == nil {
		return nil
	}
	var ue *kafka.UsageError
	if errors.As(err, &ue) {
		return errs.BadInputf("%s", ue.Msg)
	}
	if errors.Is(err, broker.ErrNotFound) {
		return errs.BadInput(err)
	}
	return err
}

// kafkaForEachRecord is ForEachRecord for a kafka:// reference: a peek of
// the topic (or of its whole retry chain with in.Chain) from the group's
// committed offsets to the ends taken at the start, read_committed,
// committing nothing.
func (f *Factory) kafkaForEachRecord(ctx context.Context, in InputOptions, fn func(rec *record.Record, parsed any) error) (*InputResult, error) {
	ep, err := f.KafkaEndpoint(ctx, in.Queue)
	if err != nil {
		return nil, err
	}
	defer ep.Close()
	eps := []*kafka.Endpoint{ep}
	if in.Chain {
		if eps, err = f.kafkaChain(ctx, ep); err != nil {
			return nil, err
		}
		defer func() {
			for _, e := range eps[1:] {
				e.Close()
			}
		}()
	}
	read := 0
	for _, e := range eps {
		src, err := e.OpenSource(ctx, broker.SourceOptions{Mode: broker.Peek, Decode: inspect.Decode})
		if err != nil {
			return nil, kafkaErr(err)
		}
		n, err := func() (int, error) {
			defer src.Close(context.WithoutCancel(ctx))
			n := 0
			for {
				ms, err := src.Next(ctx, 500)
				if errors.Is(err, broker.ErrSourceDone) {
					if t, ok := src.(interface{ TruncatedNote() string }); ok && t.TruncatedNote() != "" {
						f.IO.Warnf("%s: %s", e, t.TruncatedNote())
					}
					return n, nil
				}
				if err != nil {
					return n, err
				}
				for _, m := range ms {
					n++
					if err := fn(m.Record, m.Parsed); err != nil {
						return n, err
					}
					if in.Max > 0 && read+n >= in.Max {
						return n, errStop
					}
				}
			}
		}()
		read += n
		f.Verbosef("read %d pending records of %s (group %s; nothing committed)", n, e, e.Group())
		if errors.Is(err, errStop) {
			return &InputResult{}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return &InputResult{}, nil
}

// kafkaChain returns the retry chain ep's topic belongs to: its retry
// topics in order, then its dead-letter topic(s) (orders-retry-1,
// orders-retry-2, …, orders-dlq), each with its own default group (or
// --group for all).
func (f *Factory) kafkaChain(ctx context.Context, ep *kafka.Endpoint) ([]*kafka.Endpoint, error) {
	_, base := kafka.Stage(ep.Name())
	adm, err := ep.Admin()
	if err != nil {
		return nil, err
	}
	td, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var names []string
	for name := range td {
		if st, b := kafka.Stage(name); st != "" && b == base {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, k int) bool { return stageOrder(names[i]) < stageOrder(names[k]) })
	if len(names) == 0 {
		names = []string{ep.Name()}
	}
	out := []*kafka.Endpoint{ep}
	addr := ep.Address()
	for _, n := range names {
		if n == ep.Name() {
			continue
		}
		ref := addr.WithTopic(n)
		ref.User = ""
		e, err := f.KafkaEndpoint(ctx, ref.String())
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// stageOrder sorts a chain: retry-1 < retry-2 < … < retry-10 < retry < dlt.
func stageOrder(topic string) string {
	st, _ := kafka.Stage(topic)
	switch {
	case st == "dlt":
		return "2" + topic
	case strings.HasPrefix(st, "retry-"):
		return fmt.Sprintf("0%08s", strings.TrimPrefix(st, "retry-"))
	}
	return "1" + topic
}

// kafkaUnsupported is the one sentence for a command dlqctl cannot run on
// Kafka yet (exit 2, nothing changed).
func kafkaUnsupported(cmd, instead string) error {
	return errs.BadInputf("%s does not support Kafka topics yet; %s", cmd, instead)
}

// kafkaGroupLag sums a consumer group's lag over every topic it has
// committed on (end offset − committed).
func kafkaGroupLag(ctx context.Context, adm *kadm.Client, group string) (int64, error) {
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return 0, err
	}
	l, ok := lags[group]
	if !ok {
		return 0, fmt.Errorf("group %s not found", group)
	}
	if err := l.Error(); err != nil {
		return 0, err
	}
	var n int64
	for _, ps := range l.Lag {
		for _, pl := range ps {
			if pl.Lag > 0 {
				n += pl.Lag
			}
		}
	}
	return n, nil
}

func countKafkaRefs(refs []string) int {
	n := 0
	for _, r := range refs {
		if isKafkaRef(r) {
			n++
		}
	}
	return n
}

// checkKafkaPair refuses a redrive between Kafka and another broker (one
// sentence, exit 2), after checking the Kafka reference itself (so a
// password in it is refused as such, never printed).
func checkKafkaPair(dlq, to string) error {
	fromKafka, toKafka := isKafkaRef(dlq), isKafkaRef(to)
	if strings.EqualFold(to, "source") || fromKafka == toKafka {
		return nil
	}
	k := dlq
	if toKafka {
		k = to
	}
	ref, err := broker.ParseRef(k)
	if err != nil {
		return err
	}
	if _, err := kafka.Open(context.Background(), ref, kafka.Config{}); err != nil {
		return kafkaErr(err)
	}
	if toKafka {
		label := "an SQS queue"
		if src, err := broker.ParseRef(dlq); err == nil {
			if c, ok := capsOf(src.Broker); ok && src.Broker != broker.SQS {
				label = "a " + c.Label + " queue"
			}
		}
		return errs.BadInputf("redrive from %s to a Kafka topic (%s) is not supported; redrive within the DLQ's broker or --to source, or archive the DLQ and restore it --to the topic", label, ref)
	}
	return errs.BadInputf("a Kafka dead-letter topic is redriven to --to source or --to kafka://HOST:PORT/TOPIC, not to %s", broker.Redact(to))
}

// kafkaQueuesRun lists a Kafka cluster's dead-letter and retry topics.
func kafkaQueuesRun(ctx context.Context, f *Factory, raw, prefix string) error {
	rest := raw[len("kafka://"):]
	hosts, path, _ := strings.Cut(rest, "/")
	if prefix != "" && path != "" {
		return errs.BadInputf("give the topic prefix once: kafka://HOST:PORT/PREFIX or --prefix PREFIX")
	}
	if path != "" {
		prefix = path
	}
	// Parse (and check credentials) as a topic reference on the cluster.
	ep, err := f.KafkaEndpoint(ctx, "kafka://"+hosts+"/__dlqctl_queues")
	if err != nil {
		return err
	}
	defer ep.Close()
	group := func(topic string) string {
		if f.Kafka.Group != "" {
			return f.Kafka.Group
		}
		return kafka.DefaultGroup(topic)
	}
	topics, err := kafka.ListTopics(ctx, ep.Address(), ep.Conn(), prefix, group)
	if err != nil {
		return kafkaErr(err)
	}
	if topics == nil {
		topics = []kafka.TopicInfo{}
	}
	if done, err := writeStructured(f, topics, topics); done {
		return err
	}
	if len(topics) == 0 {
		f.IO.Infof("no dead-letter or retry topics found")
		return nil
	}
	t := output.NewTable(f.IO, "TOPIC", "STAGE", "PARTITIONS", "PENDING", "OLDEST", "RETENTION", "SOURCES", "FOUND BY")
	for _, ti := range topics {
		ret := "unlimited"
		if ti.RetentionMS >= 0 {
			ret = (time.Duration(ti.RetentionMS) * time.Millisecond).String()
		}
		oldest := "-"
		if ti.Pending > 0 {
			oldest = (time.Duration(ti.OldestPendingAge) * time.Second).String()
		}
		t.Row(ti.Name, ti.Stage, strconv.Itoa(len(ti.Partitions)), strconv.FormatInt(ti.Pending, 10), oldest, ret, strings.Join(ti.Sources, ","), ti.FoundBy)
	}
	return t.Render()
}
