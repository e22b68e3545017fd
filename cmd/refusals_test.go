package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// TestRefusalsNameTheBrokerAndTheWayOut: a flag the queue's broker cannot
// honour is exit 2 with one sentence naming the broker and what to do
// instead, decided from the capabilities alone; SQS honours them all.
func TestRefusalsNameTheBrokerAndTheWayOut(t *testing.T) {
	flags := func(set ...string) *pflag.FlagSet {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.Duration("visibility", 30*time.Second, "")
		fs.Bool("wait-inflight", true, "")
		for _, s := range set {
			if err := fs.Set(s, map[string]string{"visibility": "2m", "wait-inflight": "false"}[s]); err != nil {
				t.Fatal(err)
			}
		}
		return fs
	}
	rabbit := broker.Capabilities{Label: "RabbitMQ", Hold: broker.HoldDelivery, Removal: broker.RemovePerMessage}
	kafka := broker.Capabilities{Label: "Kafka", Hold: broker.HoldNone, Removal: broker.RemoveCommitOffset}
	for _, c := range []struct {
		caps   broker.Capabilities
		set    []string
		native bool
		want   string
	}{
		{rabbit, nil, true, "--engine native cannot be used with RabbitMQ: RabbitMQ has no native move; use --engine dlqctl (the default)"},
		{rabbit, []string{"visibility"}, false, "--visibility cannot be used with RabbitMQ: RabbitMQ holds a message as an unacknowledged delivery that lasts as long as the connection, not with a visibility timeout; drop --visibility"},
		{kafka, []string{"wait-inflight"}, false, "--wait-inflight cannot be used with Kafka: Kafka holds a message as nothing: reads are free, by offset, not with a visibility timeout; drop --wait-inflight"},
		{kafka, nil, false, ""},
		{sqs.Capabilities(true), []string{"visibility", "wait-inflight"}, true, ""},
	} {
		err := refuseFlags(c.caps, flags(c.set...), c.native)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %v: refused: %v", c.caps.Label, c.set, err)
		case c.want != "" && (err == nil || err.Error() != c.want || errs.Code(err) != errs.ExitUsage || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s %v: %v, want exit 2 %q", c.caps.Label, c.set, err, c.want)
		}
	}
}
