package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func TestParseRefPicksTheBrokerByScheme(t *testing.T) {
	for _, c := range []struct {
		in, broker, target, display string
	}{
		{"orders-dlq", SQS, "orders-dlq", "orders-dlq"},
		{"  orders-dlq.fifo ", SQS, "orders-dlq.fifo", "orders-dlq.fifo"},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq", SQS, "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"},
		{"http://127.0.0.1:4566/000000000000/orders_dlq", SQS, "http://127.0.0.1:4566/000000000000/orders_dlq", "http://127.0.0.1:4566/000000000000/orders_dlq"},
		{"arn:aws:sqs:us-east-1:123456789012:orders-dlq", SQS, "arn:aws:sqs:us-east-1:123456789012:orders-dlq", "arn:aws:sqs:us-east-1:123456789012:orders-dlq"},
		{"sqs://orders_dlq.fifo", SQS, "orders_dlq.fifo", "sqs://orders_dlq.fifo"},
		{"SQS://orders-dlq/", SQS, "orders-dlq", "sqs://orders-dlq"},
		{"amqp://localhost/orders", AMQP, "amqp://localhost/orders", "amqp://localhost/orders"},
		{"amqps://guest:s3cr%2Ft@rabbit.internal:5671/%2f/orders-dlq", AMQP, "amqps://***@rabbit.internal:5671/%2f/orders-dlq", "amqps://***@rabbit.internal:5671/%2f/orders-dlq"},
		{"kafka://b1:9092,b2:9092/orders-dlq", Kafka, "kafka://b1:9092,b2:9092/orders-dlq", "kafka://b1:9092,b2:9092/orders-dlq"},
		{"kafka://alice:pw@b1:9092/orders-dlq?sasl_password=pw2&mechanism=PLAIN", Kafka, "", "kafka://***@b1:9092/orders-dlq?mechanism=PLAIN&sasl_password=***"},
	} {
		r, err := ParseRef(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if r.Broker != c.broker || c.target != "" && r.Target != c.target || r.Display != c.display {
			t.Errorf("%s: broker %s target %q display %q; want %s %q %q", c.in, r.Broker, r.Target, r.Display, c.broker, c.target, c.display)
		}
	}
}

// TestParseRefNeverPrintsCredentials: whatever a reference carries, no
// error, display or formatting of a Ref repeats its password.
func TestParseRefNeverPrintsCredentials(t *testing.T) {
	const pw = "hunter2-Sup3r"
	for _, in := range []string{
		"amqp://guest:" + pw + "@localhost/orders",
		"amqps://guest:" + pw + "@localhost:5671/%2f/orders",
		"kafka://u:" + pw + "@b1:9092/dlt",
		"kafka://b1:9092/dlt?password=" + pw,
		"redis://u:" + pw + "@host/0",
		"https://u:" + pw + "@sqs.us-east-1.amazonaws.com/1/q",
		"sqs://u:" + pw + "@orders",
		"amqp://u:" + pw + "@",
		"u:" + pw + "@host/q",
		"9x://u:" + pw + "@host/q",
	} {
		r, err := ParseRef(in)
		shown := []string{r.String(), r.Display, r.Target, fmt.Sprintf("%v|%+v|%#v|%s|%q", r, r, r, r, r)}
		if err != nil {
			shown = append(shown, err.Error())
			if errs.Code(err) != errs.ExitUsage {
				t.Errorf("%s: error %v is not bad input", in, err)
			}
		}
		for _, s := range shown {
			if strings.Contains(s, pw) {
				t.Errorf("%s: the password is printed: %s", in, s)
			}
		}
		if err == nil && r.HasCredentials() {
			if u := r.URL(); u == nil || !strings.Contains(u.String(), pw) {
				t.Errorf("%s: the broker package cannot get the credentials back: %v", in, u)
			}
		}
	}
}

func TestParseRefRefusesUnknownSchemes(t *testing.T) {
	for _, in := range []string{"redis://host/q", "nats://host/subject", "file:///tmp/x", "", "kafka://", "amqp:///orders"} {
		_, err := ParseRef(in)
		if err == nil || errs.Code(err) != errs.ExitUsage {
			t.Errorf("%q: %v, want bad input", in, err)
		}
	}
	_, err := ParseRef("redis://host/q")
	if err == nil || !strings.Contains(err.Error(), `unknown scheme "redis"`) || !strings.Contains(err.Error(), "amqp://") {
		t.Errorf("unknown scheme error: %v", err)
	}
}

func TestRedact(t *testing.T) {
	in := `dial tcp: lookup amqp://guest:pw@rabbit:5672/: no such host; see "kafka://u:p@b:9092/t" (password pw-from-env)`
	got := Redact(in, "pw-from-env")
	for _, leak := range []string{"guest:pw", "u:p@", "pw-from-env"} {
		if strings.Contains(got, leak) {
			t.Errorf("Redact left %q: %s", leak, got)
		}
	}
	if !strings.Contains(got, "amqp://***@rabbit:5672/") || !strings.Contains(got, "kafka://***@b:9092/t") {
		t.Errorf("Redact: %s", got)
	}
}

func TestRefuseNamesTheBrokerAndTheWayOut(t *testing.T) {
	rabbit := Capabilities{Label: "RabbitMQ", Broker: AMQP, Hold: HoldDelivery, Removal: RemovePerMessage}
	kafka := Capabilities{Label: "Kafka", Broker: Kafka, Hold: HoldNone, Removal: RemoveCommitOffset, DeleteByOffset: true}
	sqs := Capabilities{Label: "Amazon SQS", Broker: SQS, Hold: HoldLease, Removal: RemovePerMessage, NativeMove: true}
	for _, c := range []struct {
		need    Need
		caps    Capabilities
		flag    string
		have    string
		instead string
		want    string
	}{
		{NeedNativeMove, rabbit, "--engine native", "Amazon SQS", "use --engine dlqctl (the default)",
			"--engine native needs a broker that moves a whole queue itself (Amazon SQS); RabbitMQ has no server-side move: use --engine dlqctl (the default)"},
		{NeedLease, rabbit, "--visibility", "", "drop --visibility",
			"--visibility needs a broker that holds messages with a visibility timeout; RabbitMQ holds a message as an unacknowledged delivery for as long as the connection lives: drop --visibility"},
		{NeedDeleteByOffset, sqs, "--delete-records", "Kafka", "drop --delete-records",
			"--delete-records needs a broker that deletes records by offset (Kafka); Amazon SQS removes messages one by one: drop --delete-records"},
		{NeedBroker(Kafka, "Kafka", "kafka://"), rabbit, "--kafka-tls", "", "drop --kafka-tls",
			"--kafka-tls needs a Kafka reference (kafka://); RabbitMQ is reached without it: drop --kafka-tls"},
		{NeedBroker(SQS, "Amazon SQS", "a queue name, URL or ARN"), kafka, "--sqs-endpoint-url", "", "drop it",
			"--sqs-endpoint-url needs an Amazon SQS reference (a queue name, URL or ARN); Kafka is reached without it: drop it"},
	} {
		if c.need.Has(c.caps) {
			t.Errorf("%s: %s has it", c.flag, c.caps.Label)
		}
		err := c.need.Refusal(c.flag, c.caps, c.have, c.instead)
		if errs.Code(err) != errs.ExitUsage || err.Error() != c.want {
			t.Errorf("%s on %s: exit %d %q\nwant %q", c.flag, c.caps.Label, errs.Code(err), err, c.want)
		}
	}
	if !NeedNativeMove.Has(sqs) || !NeedLease.Has(sqs) || !NeedDeleteByOffset.Has(kafka) {
		t.Error("a broker with the capability does not have the need")
	}
	if !errors.Is(Rejected(errors.New("too big")), ErrRejected) || Rejected(errors.New("too big")).Error() != "too big" {
		t.Fatal("Rejected")
	}
}

// TestSecretsIn: the passwords and secret query values of the URLs in a
// text, as written and decoded; user names, routing keys and other
// parameters are not secrets.
func TestSecretsIn(t *testing.T) {
	cases := map[string][]string{
		"http://u:p%40ss-1@127.0.0.1:1/":                                  {"p%40ss-1", "p@ss-1"},
		"amqp://ops@rabbit/%2f/q":                                         nil,
		"--amqp-management-url=http://127.0.0.1:1/?password=hunter22&x=1": {"hunter22"},
		"s3://b/p/?X-Amz-Signature=abc123&X-Amz-Credential=AKIA%2F1":      {"abc123", "AKIA%2F1", "AKIA/1"},
		"kafka://k:9092/t?token=tok-9":                                    {"tok-9"},
		"amqp://h/v/?exchange=orders&routing_key=orders.created":          nil,
		"orders-dlq": nil,
		"https://sqs.us-east-1.amazonaws.com/1/q?sig=ab": nil, // too short to scrub
	}
	for in, want := range cases {
		got := SecretsIn(in)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("SecretsIn(%q) = %q, want %q", in, got, want)
		}
	}
}
