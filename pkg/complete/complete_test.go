package complete

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
	words := []string{"table\ta table", "json\tone document", "ndjson\tone per line"}
	if got := Words(words, "J"); !reflect.DeepEqual(got, []string{"json\tone document"}) {
		t.Errorf("J: %q", got)
	}
	if got := Words(words, ""); len(got) != 3 {
		t.Errorf("nothing typed: %q", got)
	}
	if got := Words(words, "x"); got != nil {
		t.Errorf("x: %q", got)
	}
}

func TestList(t *testing.T) {
	words := []string{"transient", "permanent", "poison", "unknown"}
	for typed, want := range map[string][]string{
		"":                    {"transient", "permanent", "poison", "unknown"},
		"p":                   {"permanent", "poison"},
		"transient,":          {"transient,permanent", "transient,poison", "transient,unknown"},
		"transient,poison,un": {"transient,poison,unknown"},
		"transient,tr":        nil,
	} {
		if got := List(words, typed); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q, want %q", typed, got, want)
		}
	}
}

// TestQueuesAsksTheBrokerTheFormNames: each form of reference asks its
// broker's listing, and only that one; the answers are sorted; a listing
// that fails offers nothing.
func TestQueuesAsksTheBrokerTheFormNames(t *testing.T) {
	var asked []string
	src := Sources{
		SQS: func(_ context.Context, prefix string) ([]string, error) {
			asked = append(asked, "sqs:"+prefix)
			return []string{"https://sqs.eu-west-1.amazonaws.com/1/orders-dlq", "http://127.0.0.1:4566/000/billing-dlq"}, nil
		},
		AMQP: func(_ context.Context, vhostRef string) ([]string, error) {
			asked = append(asked, "amqp:"+vhostRef)
			return []string{"orders.dlq", "orders retry", "billing.dlq"}, nil
		},
		Kafka: func(_ context.Context, typed string) []string {
			asked = append(asked, "kafka:"+typed)
			return []string{"kafka://h:9092/b", "kafka://h:9092/a"}
		},
	}
	ctx := context.Background()
	for _, c := range []struct {
		typed string
		want  []string
		asked string
	}{
		{"or", []string{"billing-dlq", "orders-dlq"}, "sqs:or"},
		{"amqp://ops@rabbit:5672/orders", []string{"amqp://ops@rabbit:5672/orders%20retry", "amqp://ops@rabbit:5672/orders.dlq"}, "amqp:amqp://ops@rabbit:5672/%2f/"},
		{"AMQPS://rabbit/prod/bil", []string{"AMQPS://rabbit/prod/billing.dlq"}, "amqp:AMQPS://rabbit/prod/"},
		{"amqp://rabbit/%2f/orders%20", []string{"amqp://rabbit/%2f/orders%20retry"}, "amqp:amqp://rabbit/%2f/"},
		{"amqp://rabbit", nil, ""},
		{"kafka://h:9092/", []string{"kafka://h:9092/a", "kafka://h:9092/b"}, "kafka:kafka://h:9092/"},
		{"https://sqs.eu-west-1.amazonaws.com/1/", nil, ""},
		{"arn:aws:sqs:eu-west-1:1:", nil, ""},
	} {
		asked = nil
		got := Queues(ctx, c.typed, src)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %q, want %q", c.typed, got, c.want)
		}
		if want := []string(nil); c.asked != "" {
			want = []string{c.asked}
			if !reflect.DeepEqual(asked, want) {
				t.Errorf("%q asked %q, want %q", c.typed, asked, want)
			}
		} else if asked != nil {
			t.Errorf("%q asked %q, want nothing", c.typed, asked)
		}
	}
	failing := Sources{
		SQS:  func(context.Context, string) ([]string, error) { return nil, errors.New("no credentials") },
		AMQP: func(context.Context, string) ([]string, error) { return nil, errors.New("refused") },
	}
	for _, typed := range []string{"or", "amqp://rabbit/%2f/", "kafka://h/"} {
		if got := Queues(ctx, typed, failing); got != nil {
			t.Errorf("%q with failing listings: %q", typed, got)
		}
	}
}
