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
		{rabbit, nil, true, "--engine native needs a broker that moves a whole queue itself (Amazon SQS); RabbitMQ has no server-side move: use --engine dlqctl (the default)"},
		{rabbit, []string{"visibility"}, false, "--visibility needs a broker that holds messages with a visibility timeout (Amazon SQS); RabbitMQ holds a message as an unacknowledged delivery for as long as the connection lives: drop --visibility"},
		{kafka, []string{"wait-inflight"}, false, "--wait-inflight needs a broker that holds messages with a visibility timeout (Amazon SQS); Kafka holds nothing, it reads by offset: drop --wait-inflight"},
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
