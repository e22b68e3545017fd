package doctor

import (
	"context"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Request is one 'dlqctl doctor': the references to check and what the
// AWS side is asked about.
type Request struct {
	// Queues are the references given (SQS, amqp://, kafka://).
	Queues  []string
	Roles   []string
	To      string // destination queue ("" the DLQs' sources)
	Archive string // s3://BUCKET/PREFIX ("" none)
	Logs    []string
	// StateDir is where run journals go, StateDirSource where that came
	// from (StateDirSource).
	StateDir, StateDirSource string
}

// Sources are how Run reaches the brokers and AWS; the command's factory
// gives them, so this package knows no broker package.
type Sources struct {
	// ParseRef parses and checks a reference.
	ParseRef func(raw string) (broker.Ref, error)
	// BrokerChecks are a RabbitMQ or Kafka reference's checks, run by its
	// broker package.
	BrokerChecks func(ctx context.Context, ref broker.Ref) ([]broker.DoctorCheck, error)
	// AWS loads the AWS configuration and clients, when AWS is checked.
	AWS func(ctx context.Context) AWSEnv
}

// Run checks every reference of req with its broker, the AWS side when
// it is needed, and this shell (state dir, tools); the report is
// finished.
func Run(ctx context.Context, req Request, src Sources) (*Report, error) {
	rep := &Report{}
	// RabbitMQ and Kafka references: their broker packages check them.
	var sqsQueues []string
	for _, q := range req.Queues {
		ref, err := src.ParseRef(q)
		if err != nil {
			return nil, err
		}
		if ref.Broker == broker.SQS {
			sqsQueues = append(sqsQueues, q)
			continue
		}
		cs, err := src.BrokerChecks(ctx, ref)
		if err != nil {
			return nil, err
		}
		rep.AddBroker(cs)
	}
	// AWS: for SQS queues, S3 (--archive), CloudWatch Logs (--logs), and a
	// bare `dlqctl doctor`; a RabbitMQ or Kafka reference alone needs none.
	sqs := len(sqsQueues) > 0 || len(sqsQueues) == len(req.Queues)
	if sqs || req.Archive != "" || len(req.Logs) > 0 {
		AWS(ctx, src.AWS(ctx), AWSTargets{Queues: sqsQueues, SQS: sqs,
			Roles: req.Roles, To: req.To, Archive: req.Archive, LogGroups: req.Logs}, rep)
	}
	Local(ctx, rep, req.StateDir, req.StateDirSource)
	rep.Finish()
	return rep, nil
}
