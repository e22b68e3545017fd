package cmd

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/refuse"
)

// The references each broker's cases use: unreachable on purpose (port 1),
// so a refusal that came after a connection attempt would show as a
// connection error instead. The RabbitMQ one carries a password that must
// never be printed.
const refusalSecret = "s3cret-pw-77"

var refusalRefs = map[string]string{
	broker.SQS:   "orders-dlq",
	broker.AMQP:  "amqp://ops:" + refusalSecret + "@127.0.0.1:1/%2f/orders.dlq",
	broker.Kafka: "kafka://127.0.0.1:1/orders-dlt",
}

var refusalBrokers = []string{broker.SQS, broker.AMQP, broker.Kafka}

// refusalArgs are the arguments of command cmd reading (or, for restore,
// sending to) a queue of broker b; nil when the command takes none.
func refusalArgs(cmd, b string) []string {
	ref := refusalRefs[b]
	switch cmd {
	case "archive verify", "runs", "filters", "exit-codes", "addresses":
		return nil
	case "restore":
		return []string{"s3://archive-bucket/run=1/", "--to", ref}
	case "redrive resume":
		return []string{"--dlq", ref}
	case "queues":
		return map[string][]string{
			broker.SQS:   {},
			broker.AMQP:  {"amqp://ops:" + refusalSecret + "@127.0.0.1:1/%2f/"},
			broker.Kafka: {"kafka://127.0.0.1:1"},
		}[b]
	}
	return []string{ref}
}

// wantAccepted is, independently of refusals.go, which brokers honour each
// broker-specific flag: "cmd --flag" (or "cmd --flag value"; "* --flag"
// for every command that has it) -> the brokers that accept it. Every
// other flag is accepted on every broker.
var wantAccepted = map[string][]string{
	"* --visibility":          {broker.SQS},
	"* --wait-inflight":       {broker.SQS},
	"* --logs":                {broker.SQS},
	"* --logs-window":         {broker.SQS},
	"* --logs-refresh":        {broker.SQS},
	"redrive --engine native": {broker.SQS},
	"redrive --origin":        {broker.SQS},
	"redrive --exactly-once":  {broker.Kafka},
	"redrive --max-dest-lag":  {broker.Kafka},
	"archive --delete-records": {
		broker.Kafka,
	},
	"redrive --max-dest-backlog":   {broker.SQS, broker.AMQP},
	"restore --max-dest-backlog":   {broker.SQS, broker.AMQP},
	"redrive --verify-drain":       {broker.SQS, broker.AMQP},
	"redrive --max-returns":        {broker.SQS, broker.AMQP},
	"redrive --concurrency":        {broker.SQS, broker.AMQP},
	"restore --concurrency":        {broker.SQS, broker.AMQP},
	"restore --canary":             {broker.SQS, broker.AMQP},
	"restore --verify-for":         {broker.SQS, broker.AMQP},
	"restore --verify-poll":        {broker.SQS, broker.AMQP},
	"restore --verify-drain":       {broker.SQS, broker.AMQP},
	"audit --investigation-window": {broker.SQS, broker.Kafka},
	"audit --sample":               {broker.SQS, broker.Kafka},
	"check --max-growth":           {broker.SQS, broker.AMQP},
	"check --growth-sample":        {broker.SQS, broker.AMQP},
	"doctor --role":                {broker.SQS},
	"* --amqp-management-url":      {broker.AMQP},
	"* --amqp-ca":                  {broker.AMQP},
	"* --amqp-prefetch":            {broker.AMQP},
	"* --amqp-confirm-window":      {broker.AMQP},
	"* --kafka-tls":                {broker.Kafka},
	"* --kafka-ca":                 {broker.Kafka},
	"* --kafka-sasl":               {broker.Kafka},
	"* --kafka-user":               {broker.Kafka},
	"* --kafka-group":              {broker.Kafka},
	"* --group":                    {broker.Kafka},
	"* --sqs-endpoint-url":         {broker.SQS},
}

func acceptedBy(cmd, flag, value string) []string {
	for _, k := range []string{cmd + " --" + flag + " " + value, cmd + " --" + flag, "* --" + flag} {
		if bs, ok := wantAccepted[strings.TrimSpace(k)]; ok {
			return bs
		}
	}
	return refusalBrokers
}

// walkCommands calls fn for every command of the tree but the root and
// cobra's own (help, completion).
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	for _, s := range c.Commands() {
		if s.Name() == "help" || s.Name() == "completion" {
			continue
		}
		fn(s)
		walkCommands(s, fn)
	}
}

// allFlags lists every flag command c takes, its own and inherited.
func allFlags(c *cobra.Command) []*pflag.Flag {
	var out []*pflag.Flag
	seen := map[string]bool{}
	add := func(fl *pflag.Flag) {
		if !seen[fl.Name] {
			seen[fl.Name] = true
			out = append(out, fl)
		}
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TestEveryFlagDeclaresItsBrokers: every command says where its references
// are, and every flag of every command (taken from the cobra tree, so a
// new flag is included) is either in the refusals table or declared as
// honoured by every broker; every row of the table names a flag some
// command has, and the test's own expectations cover every row.
func TestEveryFlagDeclaresItsBrokers(t *testing.T) {
	root := NewRootCmd(&Factory{IO: output.Test(nil, &bytes.Buffer{}, &bytes.Buffer{}, false)})
	exists := map[string]bool{}
	walkCommands(root, func(c *cobra.Command) {
		name := commandName(c)
		if _, ok := refuse.CommandRefs[name]; !ok {
			t.Errorf("command %q does not say where its references are (refuse.CommandRefs in pkg/refuse/refs.go)", name)
		}
		for _, fl := range allFlags(c) {
			exists[fl.Name] = true
			if len(refuse.NeedsFor(name, fl.Name)) == 0 && !refuse.AnyBrokerFlags[fl.Name] {
				t.Errorf("%s --%s declares no broker need: add it to refuse.Table (what it needs of a broker) or to refuse.AnyBrokerFlags (every broker honours it) in pkg/refuse/table.go", name, fl.Name)
			}
		}
	})
	for _, n := range refuse.Table {
		if !exists[n.Flag] {
			t.Errorf("refuse.Table row --%s names no flag of any command", n.Flag)
		}
		cmds := n.Cmds
		if len(cmds) == 0 {
			cmds = []string{"*"}
		}
		for _, c := range cmds {
			k := strings.TrimSpace(c + " --" + n.Flag + " " + n.Value)
			_, ok := wantAccepted[k]
			for w := range wantAccepted {
				ok = ok || c == "*" && strings.HasSuffix(w, k[1:])
			}
			if !ok {
				t.Errorf("refuse.Table row %q has no expectation in wantAccepted", k)
			}
		}
	}
}

// flagValues are values to try for a flag of this type.
func flagValues(fl *pflag.Flag) []string {
	switch fl.Value.Type() {
	case "bool":
		return []string{"true"}
	case "duration":
		return []string{"1m"}
	case "int", "int64", "float64":
		return []string{"1"}
	}
	return []string{"1m", "g:1", "1", "x"}
}

// TestBrokerFlagRefusals enumerates every (command, flag, broker) of the
// cobra tree: a flag the broker of the command's reference cannot honour
// is refused with one sentence naming the flag, the broker and the way
// out (exit 2, no credentials), and every other flag is accepted — decided
// from the parsed reference alone, before anything connects.
func TestBrokerFlagRefusals(t *testing.T) {
	labels := map[string]string{broker.SQS: "Amazon SQS", broker.AMQP: "RabbitMQ", broker.Kafka: "Kafka"}
	var cmds []string
	walkCommands(NewRootCmd(&Factory{IO: output.Test(nil, &bytes.Buffer{}, &bytes.Buffer{}, false)}), func(c *cobra.Command) {
		cmds = append(cmds, commandName(c))
	})
	refused, accepted := 0, 0
	for _, name := range cmds {
		for _, b := range refusalBrokers {
			base := refusalArgs(name, b)
			if base == nil {
				continue
			}
			// The command with its reference alone is accepted.
			if err := parseAndRefuse(t, name, base); err != nil {
				t.Errorf("%s %v: refused without any flag: %v", name, base, err)
			}
			probe := findCmd(t, name)
			for _, fl := range allFlags(probe) {
				if fl.Name == "help" || fl.Name == "version" || (fl.Name == "to" && (name == "restore")) || (fl.Name == "dlq" && name == "redrive resume") {
					continue
				}
				values := flagValues(fl)
				if fl.Name == "engine" {
					values = []string{"native", "dlqctl"}
				}
				tried := false
				for _, v := range values {
					args := append(append([]string{}, base...), "--"+fl.Name+"="+v)
					if fl.Name == "to" && name == "redrive" {
						// --to on the same broker as the DLQ.
						args = append(append([]string{}, base...), "--to="+strings.Replace(refusalRefs[b], "orders", "orders-retry", 1))
					}
					c := findCmd(t, name)
					if c.ParseFlags(args) != nil {
						continue
					}
					if tried && fl.Name != "engine" {
						break
					}
					tried = true
					err := refuseBrokerFlags(c, c.Flags().Args())
					value := ""
					if fl.Name == "engine" {
						value = v
					}
					want := containsStr(acceptedBy(name, fl.Name, value), b)
					switch {
					case want && err != nil:
						t.Errorf("%s on %s: --%s=%s refused: %v", name, labels[b], fl.Name, v, err)
					case want:
						accepted++
					case err == nil:
						t.Errorf("%s on %s: --%s=%s accepted; %s cannot honour it", name, labels[b], fl.Name, v, labels[b])
					default:
						refused++
						msg := err.Error()
						if errs.Code(err) != errs.ExitUsage || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "--"+fl.Name) ||
							!strings.Contains(msg, " needs ") || !strings.Contains(msg, labels[b]) ||
							!(strings.Contains(msg, ": drop --") || strings.Contains(msg, ": use --") || strings.Contains(msg, ": restore ")) ||
							strings.Contains(msg, refusalSecret) {
							t.Errorf("%s on %s --%s: exit %d %q; want exit 2, one sentence: the flag, what it needs, the broker, the way out, no password", name, labels[b], fl.Name, errs.Code(err), msg)
						}
					}
				}
				if !tried {
					t.Errorf("%s --%s: no test value parses", name, fl.Name)
				}
			}
		}
	}
	t.Logf("%d (command, flag, broker) refused, %d accepted", refused, accepted)
	if refused < 60 || accepted < 300 {
		t.Errorf("only %d refusals and %d acceptances were checked", refused, accepted)
	}
}

func findCmd(t *testing.T, name string) *cobra.Command {
	t.Helper()
	root := NewRootCmd(&Factory{IO: output.Test(nil, &bytes.Buffer{}, &bytes.Buffer{}, false)})
	c, _, err := root.Find(strings.Fields(name))
	if err != nil || commandName(c) != name {
		t.Fatalf("no command %q: %v", name, err)
	}
	return c
}

func parseAndRefuse(t *testing.T, name string, args []string) error {
	c := findCmd(t, name)
	if err := c.ParseFlags(args); err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return refuseBrokerFlags(c, c.Flags().Args())
}

// TestRefusalSentences: the generated sentences read as the documentation
// shows them (docs/brokers.md).
func TestRefusalSentences(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"archive", []string{"orders-dlq", "--delete-records"},
			"--delete-records needs a broker that deletes records by offset (Kafka); Amazon SQS removes messages one by one: drop --delete-records (--delete removes what was archived)"},
		{"redrive", []string{refusalRefs[broker.AMQP], "--exactly-once"},
			"--exactly-once needs a broker that publishes a batch and removes its originals in one transaction (Kafka); RabbitMQ removes each message on its own, apart from the publish of its copy: drop --exactly-once"},
		{"redrive", []string{"orders-dlq", "--max-dest-lag", "billing:100"},
			"--max-dest-lag needs a destination whose consumer groups report their lag (Kafka); Amazon SQS counts the messages waiting in a queue, not a consumer group's lag: use --max-dest-backlog N"},
		{"redrive", []string{refusalRefs[broker.Kafka], "--max-dest-backlog", "5"},
			"--max-dest-backlog needs a destination that counts the messages waiting in it (Amazon SQS and RabbitMQ); Kafka keeps every record in the topic: what waits is its consumer groups' lag: use --max-dest-lag GROUP:N"},
		{"sample", []string{refusalRefs[broker.AMQP], "--logs", "/aws/lambda/orders"},
			"--logs needs a broker whose message ids and send times find the consumer's CloudWatch Logs lines (Amazon SQS); RabbitMQ records why a message died in x-death and the consumer's failure headers, which --filter and --class already read: drop --logs"},
		{"group", []string{refusalRefs[broker.Kafka], "--by", "class", "--visibility", "2m"},
			"--visibility needs a broker that holds messages with a visibility timeout (Amazon SQS); Kafka holds nothing, it reads by offset: drop --visibility"},
		{"redrive", []string{refusalRefs[broker.Kafka], "--concurrency", "8"},
			"--concurrency needs a source several workers can move messages from at once (Amazon SQS and RabbitMQ); Kafka is read by one worker per process, so that each partition's records are replayed in their order: drop --concurrency (to spread the topic's partitions, run the same command in more processes: they share its consumer group)"},
		{"restore", []string{"s3://b/p/run=1/", "--to", refusalRefs[broker.Kafka], "--concurrency", "4"},
			"--concurrency needs a destination several senders can send to at once (Amazon SQS and RabbitMQ); Kafka keeps a key's records in order only from one sender, so a restore sends with one: drop --concurrency"},
		{"redrive", []string{refusalRefs[broker.AMQP], "--engine", "native"},
			"--engine native needs a broker that moves a whole queue itself (Amazon SQS); RabbitMQ has no server-side move: use --engine dlqctl (the default)"},
		{"check", []string{"orders-dlq", "--amqp-prefetch", "10"},
			"--amqp-prefetch needs a RabbitMQ reference (amqp://, amqps://); Amazon SQS is reached without it: drop --amqp-prefetch"},
		{"queues", []string{"--kafka-tls"},
			"--kafka-tls needs a Kafka reference (kafka://); Amazon SQS is reached without it: drop --kafka-tls"},
		{"watch", []string{refusalRefs[broker.Kafka], "--sqs-endpoint-url", "http://127.0.0.1:4566"},
			"--sqs-endpoint-url needs an Amazon SQS reference (a queue name, URL or ARN); Kafka is reached without it: drop --sqs-endpoint-url"},
		{"redrive", []string{refusalRefs[broker.AMQP], "--to", refusalRefs[broker.Kafka]},
			"redrive moves messages within one broker: the DLQ amqp://***@127.0.0.1:1/%2f/orders.dlq is on RabbitMQ and --to kafka://127.0.0.1:1/orders-dlt on Kafka; redrive --to source or to a destination on RabbitMQ, or move them across with 'dlqctl archive' and 'dlqctl restore --to kafka://127.0.0.1:1/orders-dlt'"},
		{"redrive", []string{"orders-dlq", "--to", refusalRefs[broker.AMQP]},
			"redrive moves messages within one broker: the DLQ orders-dlq is on Amazon SQS and --to amqp://***@127.0.0.1:1/%2f/orders.dlq on RabbitMQ; redrive --to source or to a destination on Amazon SQS, or move them across with 'dlqctl archive' and 'dlqctl restore --to amqp://***@127.0.0.1:1/%2f/orders.dlq'"},
		// Both brokers' connection flags on a redrive within one of them:
		// the other's is refused.
		{"redrive", []string{refusalRefs[broker.Kafka], "--kafka-tls", "--amqp-ca", "ca.pem"},
			"--amqp-ca needs a RabbitMQ reference (amqp://, amqps://); Kafka is reached without it: drop --amqp-ca"},
		// Accepted: Kafka's flags on Kafka, RabbitMQ's on RabbitMQ, the
		// AWS settings anywhere (S3, MSK IAM).
		{"redrive", []string{refusalRefs[broker.Kafka], "--exactly-once", "--max-dest-lag", "billing:100", "--kafka-tls", "--kafka-group", "g", "--region", "eu-west-1"}, ""},
		{"redrive", []string{refusalRefs[broker.Kafka], "--group", "g"}, ""},
		{"archive", []string{refusalRefs[broker.AMQP], "--to", "s3://b/p", "--amqp-prefetch", "10", "--endpoint-url", "http://127.0.0.1:4566"}, ""},
		{"restore", []string{"s3://b/p/run=1/", "--to", refusalRefs[broker.Kafka], "--kafka-tls", "--rate", "5"}, ""},
	} {
		err := parseAndRefuse(t, c.cmd, c.args)
		got := ""
		if err != nil {
			got = err.Error()
			if errs.Code(err) != errs.ExitUsage {
				t.Errorf("%s %v: exit %d, want 2", c.cmd, c.args, errs.Code(err))
			}
		}
		if got != c.want {
			t.Errorf("%s %v:\n got %q\nwant %q", c.cmd, c.args, got, c.want)
		}
	}
}

// TestRefusalsComeBeforeAnyConnection runs the whole command: a refused
// flag on an unreachable RabbitMQ or Kafka reference, or on an SQS queue
// with no AWS configuration at all, is the refusal (exit 2, one line on
// stderr, nothing on stdout, no password), not a connection or
// credentials error: nothing was tried.
func TestRefusalsComeBeforeAnyConnection(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"} {
		t.Setenv(k, "")
	}
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"archive", refusalRefs[broker.AMQP], "--to", "s3://b/p", "--delete", "--delete-records", "--yes"}, "--delete-records needs a broker that deletes records by offset"},
		{[]string{"redrive", refusalRefs[broker.AMQP], "--exactly-once", "--yes"}, "--exactly-once needs"},
		{[]string{"redrive", "orders-dlq", "--max-dest-lag", "billing:5", "--yes"}, "--max-dest-lag needs"},
		{[]string{"classify", refusalRefs[broker.AMQP], "--logs", "/aws/lambda/orders"}, "--logs needs"},
		{[]string{"sample", refusalRefs[broker.Kafka], "--amqp-prefetch", "5"}, "--amqp-prefetch needs a RabbitMQ reference"},
		{[]string{"check", refusalRefs[broker.AMQP], "--kafka-sasl", "PLAIN"}, "--kafka-sasl needs a Kafka reference"},
		{[]string{"redrive", "resume", "--dlq", refusalRefs[broker.Kafka], "--amqp-ca", "ca.pem"}, "--amqp-ca needs a RabbitMQ reference"},
		{[]string{"redrive", "status", refusalRefs[broker.AMQP], "--kafka-tls"}, "--kafka-tls needs a Kafka reference"},
		{[]string{"redrive", refusalRefs[broker.AMQP], "--to", refusalRefs[broker.Kafka], "--yes"}, "the DLQ amqp://***@127.0.0.1:1/%2f/orders.dlq is on RabbitMQ and --to kafka://127.0.0.1:1/orders-dlt on Kafka"},
	} {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		code := Run(ctx, output.Test(strings.NewReader(""), &out, &errOut, false), c.args)
		cancel()
		msg := strings.TrimSpace(errOut.String())
		if code != errs.ExitUsage || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || out.Len() != 0 ||
			strings.Contains(msg+out.String(), refusalSecret) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out.String(), msg, c.want)
		}
	}
}
