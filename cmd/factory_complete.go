package cmd

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// The names shell completion offers for a queue argument, one source per
// broker (complete.Sources): the factory opens each broker's client with
// the command line's flags, the broker's package lists.

// completeSQSQueues lists the URLs of the SQS queues whose name starts
// with prefix.
func (f *Factory) completeSQSQueues(ctx context.Context, prefix string) ([]string, error) {
	cfg, err := f.AWSConfig(ctx)
	if err != nil || cfg.Region == "" {
		return nil, err
	}
	api := awssqs.NewFromConfig(cfg, func(o *awssqs.Options) {
		if e := f.Opts.SQSEndpointFlag(); e != "" {
			o.BaseEndpoint = aws.String(e)
		}
		o.RetryMaxAttempts = 1
	})
	return sqs.QueueURLs(ctx, api, prefix)
}

// completeAMQPQueues lists the queues of the vhost of vhostRef
// (management API).
func (f *Factory) completeAMQPQueues(ctx context.Context, vhostRef string) ([]string, error) {
	r, m, _, err := f.amqpVHost(vhostRef)
	if err != nil {
		return nil, err
	}
	return m.QueueNames(ctx, r.VHost)
}

// completeKafkaTopics completes kafka://HOST:PORT[,…]/PREFIX with the
// cluster's topics (internal topics left out), with the connection flags
// of the command line (TLS, SASL, MSK IAM).
func (f *Factory) completeKafkaTopics(ctx context.Context, toComplete string) []string {
	cluster, prefix, ok := kafka.SplitCluster(toComplete)
	if !ok || cluster == kafka.Scheme+"://" || !strings.HasPrefix(strings.TrimSpace(toComplete)[len(cluster):], "/") {
		return nil // no host yet, or no slash after it
	}
	ref, err := broker.ParseRef(kafka.OnCluster(cluster))
	if err != nil {
		return nil
	}
	ep, err := kafka.Open(ctx, ref, f.kafkaConfig())
	if err != nil {
		return nil
	}
	defer ep.Close()
	names, err := kafka.TopicNames(ctx, ep)
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, prefix) {
			out = append(out, cluster+"/"+name)
		}
	}
	return out
}
