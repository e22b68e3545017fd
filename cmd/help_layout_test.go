package cmd

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/internal/helptext"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// runCLI runs dlqctl in-process and returns its exit code, stdout and
// stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), output.Test(strings.NewReader(""), &out, &errOut, false), args)
	return code, out.String(), errOut.String()
}

// everyCommand is every command of the tree but the root, the hidden
// __complete ones and cobra's own (help, completion).
func everyCommand(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Hidden || s.Name() == "help" || s.Name() == "completion" {
				continue
			}
			out = append(out, s)
			walk(s)
		}
	}
	walk(root)
	return out
}

// TestRedriveHelpLeadsWithTheEssentials: `dlqctl redrive --help | head -40`
// shows the usage, the address forms of the three brokers, one example per
// broker and the flags that matter, before the long description.
func TestRedriveHelpLeadsWithTheEssentials(t *testing.T) {
	code, stdout, _ := runCLI(t, "redrive", "--help")
	if code != 0 {
		t.Fatalf("redrive --help: exit %d", code)
	}
	lines := strings.Split(stdout, "\n")
	if len(lines) > 40 {
		lines = lines[:40]
	}
	head := strings.Join(lines, "\n")
	for _, want := range []string{
		"Usage:", "  dlqctl redrive DLQ",
		"Addresses of DLQ", "orders-dlq", "https://sqs.REGION.amazonaws.com/", "arn:aws:sqs:", "amqp://USER@HOST:PORT/VHOST/QUEUE", "kafka://",
		"DLQCTL_AMQP_PASSWORD", "DLQCTL_KAFKA_PASSWORD",
		"Examples:", "  dlqctl redrive orders-dlq ", "  dlqctl redrive amqp://", "  dlqctl redrive kafka://",
		"Essential Flags:", "--dry-run", "--canary", "--to", "--class",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("redrive --help | head -40 lacks %q:\n%s", want, head)
		}
	}
	// The essentials come first: the long description and the other
	// flags after them.
	if i, j := strings.Index(stdout, "Essential Flags:"), strings.Index(stdout, "exact copies: the body byte for byte"); i < 0 || j < i {
		t.Errorf("the long description does not follow the essential flags")
	}
	if i, j := strings.Index(stdout, "Essential Flags:"), strings.Index(stdout, "\nFlags:\n"); j < i {
		t.Errorf("the other flags come before the essential ones")
	}
	if strings.Count(stdout, "      --dry-run ") != 1 {
		t.Errorf("--dry-run is listed %d times; the essential flags are not repeated under Flags", strings.Count(stdout, "      --dry-run "))
	}
}

// TestNoCommandHelpRepeatsTheExitCodes: the exit-code table is one help
// topic; every command's help ends with a one-line summary pointing to it.
func TestNoCommandHelpRepeatsTheExitCodes(t *testing.T) {
	table := strings.Split(errs.ExitCodesHelp, "\n")
	root := NewRootCmd(&Factory{})
	for _, c := range append(everyCommand(root), root) {
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "dlqctl")), "--help")
		code, stdout, _ := runCLI(t, args...)
		if code != 0 {
			t.Errorf("%s --help: exit %d", c.CommandPath(), code)
			continue
		}
		for _, l := range table[1:] {
			if strings.Contains(stdout, strings.TrimSpace(l)) && c.Name() != "exit-codes" {
				t.Errorf("%s --help repeats the exit-code table (%q)", c.CommandPath(), strings.TrimSpace(l))
				break
			}
		}
		if c.Runnable() && !strings.Contains(stdout, "'dlqctl help exit-codes'") {
			t.Errorf("%s --help does not point to 'dlqctl help exit-codes'", c.CommandPath())
		}
	}
}

// TestHelpTopics: exit-codes, filters and addresses are help topics listed
// in the root help and shown by `dlqctl help TOPIC`.
func TestHelpTopics(t *testing.T) {
	_, root, _ := runCLI(t, "--help")
	i := strings.Index(root, "Additional help topics:")
	if i < 0 {
		t.Fatalf("the root help has no additional help topics:\n%s", root)
	}
	for _, topic := range []string{"exit-codes", "filters", "addresses"} {
		if !strings.Contains(root[i:], "dlqctl "+topic+" ") {
			t.Errorf("the root help does not list the topic %s", topic)
		}
	}
	cases := map[string][]string{
		"exit-codes": {errs.ExitCodesHelp},
		"filters":    {".envelope.event_type", "jq"},
		"addresses": {"arn:aws:sqs:", "https://sqs.", "amqp://USER@HOST:PORT/VHOST/QUEUE", "kafka://HOST:PORT[,HOST:PORT…]/TOPIC",
			"s3://BUCKET/PREFIX", "DLQCTL_AMQP_PASSWORD", "DLQCTL_KAFKA_PASSWORD", "***"},
	}
	for topic, wants := range cases {
		code, stdout, stderr := runCLI(t, "help", topic)
		if code != 0 || stderr != "" {
			t.Errorf("help %s: exit %d, stderr %q", topic, code, stderr)
		}
		for _, w := range wants {
			if !strings.Contains(stdout, w) {
				t.Errorf("help %s lacks %q", topic, w)
			}
		}
		if strings.Contains(stdout, "Usage:") {
			t.Errorf("help %s shows a usage: a topic is its text only", topic)
		}
	}
}

// TestGlobalFlagsShownWhereTheyApply: the global flags are grouped by
// broker, and a command shows only the groups of the brokers it reaches.
func TestGlobalFlagsShownWhereTheyApply(t *testing.T) {
	cases := []struct {
		cmd            []string
		groups, absent []string
	}{
		{[]string{"redrive"}, []string{"AWS Flags", "RabbitMQ Flags", "Kafka Flags", "Global Flags"}, []string{"S3 Flags", "--s3-endpoint-url"}},
		{[]string{"archive"}, []string{"AWS Flags", "S3 Flags", "RabbitMQ Flags", "Kafka Flags"}, nil},
		{[]string{"watch"}, []string{"AWS Flags", "RabbitMQ Flags", "Kafka Flags"}, []string{"S3 Flags", "--bucket-owner", "--requester-pays"}},
		{[]string{"archive", "verify"}, []string{"AWS Flags", "S3 Flags"}, []string{"RabbitMQ Flags", "--amqp-prefetch", "Kafka Flags", "--kafka-sasl"}},
		{[]string{"redrive", "status"}, []string{"AWS Flags"}, []string{"RabbitMQ Flags", "Kafka Flags", "--kafka-group"}},
		{[]string{"runs"}, []string{"Global Flags"}, []string{"AWS Flags", "--region", "--amqp-ca", "--kafka-tls"}},
	}
	for _, c := range cases {
		_, stdout, _ := runCLI(t, append(c.cmd, "--help")...)
		for _, g := range c.groups {
			if !strings.Contains(stdout, "\n"+g) {
				t.Errorf("%s --help has no %q section", strings.Join(c.cmd, " "), g)
			}
		}
		for _, a := range c.absent {
			if regexp.MustCompile(`(?m)^(\s+(-\w, )?` + regexp.QuoteMeta(a) + `\b|` + regexp.QuoteMeta(a) + `)`).MatchString(stdout) {
				t.Errorf("%s --help shows %q, which does not apply to it", strings.Join(c.cmd, " "), a)
			}
		}
	}
	// The root help shows every global flag once, in its group.
	root := NewRootCmd(&Factory{})
	_, stdout, _ := runCLI(t, "--help")
	for _, g := range helptext.FlagGroups {
		for _, name := range g.Flags {
			if root.PersistentFlags().Lookup(name) == nil {
				t.Errorf("flag group %q names --%s, which is not a global flag", g.Title, name)
			}
			if n := len(regexp.MustCompile(`(?m)^\s+(-\w, )?--`+name+`\b`).FindAllString(stdout, -1)); n != 1 {
				t.Errorf("the root help lists --%s %d times, want once", name, n)
			}
		}
	}
}

// TestEveryCommandHasAHelpLead: every command that does something has a
// help lead whose essential flags exist on it and whose examples are
// accepted (the flags parse, and the brokers of the references honour
// them).
func TestEveryCommandHasAHelpLead(t *testing.T) {
	root := NewRootCmd(&Factory{})
	for _, c := range everyCommand(root) {
		if !c.Runnable() {
			continue
		}
		lead, ok := helptext.Leads[commandName(c)]
		if !ok {
			t.Errorf("%s has no entry in helptext.Leads", c.CommandPath())
			continue
		}
		for _, name := range lead.Flags {
			if c.Flags().Lookup(name) == nil {
				t.Errorf("%s: essential flag --%s does not exist", c.CommandPath(), name)
			}
		}
		schemes := map[string]bool{}
		for _, ex := range lead.Examples {
			args := strings.Fields(strings.SplitN(ex, ">", 2)[0])
			if len(args) < 2 || args[0] != "dlqctl" {
				t.Errorf("%s: example %q is not a dlqctl command line", c.CommandPath(), ex)
				continue
			}
			r := NewRootCmd(&Factory{})
			sub, rest, err := r.Find(args[1:])
			if err != nil || sub.CommandPath() != c.CommandPath() {
				t.Errorf("%s: example %q runs %v", c.CommandPath(), ex, sub.CommandPath())
				continue
			}
			if err := sub.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), ex, err)
				continue
			}
			if err := refuseBrokerFlags(sub, sub.Flags().Args()); err != nil {
				t.Errorf("%s: example %q is refused: %v", c.CommandPath(), ex, err)
			}
			for _, s := range []string{"amqp://", "kafka://"} {
				if strings.Contains(ex, s) {
					schemes[s] = true
				}
			}
		}
		for _, b := range lead.Brokers {
			s := map[string]string{"amqp": "amqp://", "kafka": "kafka://"}[b]
			if s != "" && !schemes[s] {
				t.Errorf("%s takes %s references but has no %s example", c.CommandPath(), b, s)
			}
		}
	}
}

// TestKafkaGroupFlag: --kafka-group names dlqctl's consumer group; the old
// --group still works and says it is deprecated, on stderr.
func TestKafkaGroupFlag(t *testing.T) {
	for _, flag := range []string{"--kafka-group", "--group"} {
		f := &Factory{}
		root := NewRootCmd(f)
		sub, rest, err := root.Find([]string{"sample", "kafka://127.0.0.1:9092/orders.DLT", flag, "billing-replay"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.ParseFlags(rest); err != nil {
			t.Fatalf("%s: %v", flag, err)
		}
		if f.Kafka.Group != "billing-replay" {
			t.Errorf("%s billing-replay: the Kafka group is %q", flag, f.Kafka.Group)
		}
		var errOut bytes.Buffer
		noteDeprecatedFlags(sub, &errOut)
		deprecated := strings.Contains(errOut.String(), "Flag --group has been deprecated, use --kafka-group")
		if deprecated != (flag == "--group") {
			t.Errorf("%s: deprecation note %q", flag, errOut.String())
		}
	}
	// `group` (the command) given --group: the note, on stderr (never in
	// stdout, where -o json goes), says the two differ.
	code, stdout, stderr := runCLI(t, "-o", "json", "group", "--from", "/nonexistent.ndjson", "--by", "source", "--group", "foo")
	if code != 2 || !strings.Contains(stderr, "'dlqctl group' is an unrelated command") || stdout != "" {
		t.Errorf("group --group foo: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_, help, _ := runCLI(t, "sample", "--help")
	if strings.Contains(help, "--group ") || !strings.Contains(help, "--kafka-group") {
		t.Errorf("sample --help shows the deprecated --group, or not --kafka-group")
	}
}

// TestDifferingDefaultsAreExplained: a flag whose default differs between
// commands says, on the commands that differ from the most common
// default, what the others take and why ("4, where redrive and restore
// take 8: …"). --to is left out: it names a destination, whose kind
// differs by command.
func TestDifferingDefaultsAreExplained(t *testing.T) {
	type use struct{ cmd, usage string }
	defs := map[string]map[string][]use{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
			if defs[fl.Name] == nil {
				defs[fl.Name] = map[string][]use{}
			}
			defs[fl.Name][fl.DefValue] = append(defs[fl.Name][fl.DefValue], use{c.CommandPath(), fl.Usage})
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRootCmd(&Factory{}))
	differing := 0
	for name, byDefault := range defs {
		if len(byDefault) < 2 || name == "to" {
			continue
		}
		differing++
		common := ""
		for d, uses := range byDefault {
			if common == "" || len(uses) > len(byDefault[common]) {
				common = d
			}
		}
		shown := common
		if d, err := time.ParseDuration(common); err == nil && common != "0" { // an int 0 parses as a duration too
			// 1m0s is written 1m, 1h0m0s 1h.
			shown = strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
			if strings.HasSuffix(d.String(), "s") && !strings.HasSuffix(d.String(), "m0s") {
				shown = d.String()
			}
		}
		for d, uses := range byDefault {
			if d == common {
				continue
			}
			for _, u := range uses {
				if !strings.Contains(u.usage, "where") || !strings.Contains(u.usage, shown) {
					t.Errorf("%s --%s defaults to %s where most commands take %s, and its help does not say why: %q", u.cmd, name, d, common, u.usage)
				}
			}
		}
	}
	if differing == 0 {
		t.Fatal("no flag has differing defaults: the test looks at nothing")
	}
}
