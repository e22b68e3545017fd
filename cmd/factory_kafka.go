package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// isKafkaRef reports whether a queue reference is kafka://….
func isKafkaRef(s string) bool { return kafka.IsReference(strings.TrimSpace(s)) }

// The Kafka side of the factory: opening a kafka:// endpoint and the
// refusal of a redrive between Kafka and another broker.

// KafkaEndpoint resolves a kafka:// reference with the Kafka flags, the
// password from DLQCTL_KAFKA_PASSWORD and, for AWS_MSK_IAM, the AWS
// credential chain. Bad references and settings are exit 2.
func (f *Factory) KafkaEndpoint(ctx context.Context, refStr string) (*kafka.Endpoint, error) {
	ref, err := broker.ParseRef(refStr)
	if err != nil {
		return nil, err
	}
	return f.kafkaEndpoint(ctx, ref)
}

// kafkaOpener opens kafka:// endpoints for Factory.Endpoint.
type kafkaOpener struct{}

func (kafkaOpener) open(ctx context.Context, f *Factory, ref broker.Ref) (broker.Endpoint, error) {
	return f.kafkaEndpoint(ctx, ref)
}

func (f *Factory) kafkaEndpoint(ctx context.Context, ref broker.Ref) (*kafka.Endpoint, error) {
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
	if cfg.AWS != nil {
		// MSK IAM: the AWS credentials are resolved before any broker is
		// dialled, and a failure is said as on SQS (none configured, an
		// expired SSO session, a refused AssumeRole, no IMDS role), exit 2.
		if _, err := f.AWSConfig(ctx); err != nil {
			ep.Close()
			return nil, err
		}
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
