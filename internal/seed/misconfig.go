package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Expected is one audit finding a misconfigured setup must produce: the
// check id (as pkg/health names it) on the named queue.
type Expected struct {
	Check    string
	Severity string
	Queue    string
}

// MisconfigCase is one deliberate configuration mistake and every finding
// `dlqctl audit` must report for it (a mistake can imply a second one: a
// chain's last DLQ cannot outlive a 14-day DLQ, for example).
type MisconfigCase struct {
	Name   string
	Expect []Expected
}

// Misconfig describes the misconfigured queues Misconfigured created.
type Misconfig struct {
	Prefix string
	Cases  []MisconfigCase
	// Clean is a correctly configured standard pair and FIFO pair (source,
	// DLQ, FIFO source, FIFO DLQ) that must produce no finding; the standard
	// DLQ holds a few fresh messages so the expiry sample has something to
	// read.
	Clean []Queue
	// Queues is every queue that exists after seeding (for cleanup).
	Queues []Queue
	// NotSeedable lists checks the emulator cannot host, with the reason;
	// they are covered by pkg/health's unit tests.
	NotSeedable map[string]string
}

// Expected returns every finding of every case.
func (m *Misconfig) Expected() []Expected {
	var out []Expected
	for _, c := range m.Cases {
		out = append(out, c.Expect...)
	}
	return out
}

// DeleteQueues deletes every queue Misconfigured created.
func (m *Misconfig) DeleteQueues(ctx context.Context, c *sqs.Client) error {
	var errs []error
	for _, q := range m.Queues {
		if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q.URL)}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MisconfigOptions configure Misconfigured.
type MisconfigOptions struct {
	// Prefix names every queue (PREFIX-...); [A-Za-z0-9_-]{1,60}. Audit the
	// set with `dlqctl audit --prefix PREFIX`.
	Prefix string
	// Expiring is how many messages to put into the short-retention DLQ
	// (default 3).
	Expiring int
}

// Retention and visibility values of the misconfigured set.
const (
	misDay         = 24 * 60 * 60
	expiringRetain = 3600 // the short-retention DLQ keeps messages one hour
)

// Misconfigured creates a set of queues, each case with one deliberate
// mistake from the audit checklist, plus a clean standard and FIFO pair.
// The default investigation window (7 days) is assumed.
func Misconfigured(ctx context.Context, c *sqs.Client, opt MisconfigOptions) (*Misconfig, error) {
	if !prefixRE.MatchString(opt.Prefix) {
		return nil, fmt.Errorf("seed: prefix %q must match %s", opt.Prefix, prefixRE)
	}
	if opt.Expiring <= 0 {
		opt.Expiring = 3
	}
	p := opt.Prefix
	m := &Misconfig{Prefix: p, NotSeedable: map[string]string{
		"dlq-type-mismatch": "local-aws-sqs, like SQS, rejects a RedrivePolicy whose DLQ is of the other type",
	}}
	mk := func(name string, attrs map[string]string) (Queue, error) {
		q, err := misQueue(ctx, c, name, attrs)
		if err == nil {
			m.Queues = append(m.Queues, q)
		}
		return q, err
	}
	ret := func(days int) string { return strconv.Itoa(days * misDay) }
	add := func(name string, exp ...Expected) { m.Cases = append(m.Cases, MisconfigCase{Name: name, Expect: exp}) }

	// The clean pairs.
	cleanDLQ, err := mk(p+"-clean-dlq", map[string]string{"MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	cleanSrc, err := mk(p+"-clean-src", map[string]string{"MessageRetentionPeriod": ret(4), "RedrivePolicy": misRedrive(cleanDLQ.ARN, 5)})
	if err != nil {
		return m, err
	}
	cleanFDLQ, err := mk(p+"-clean-dlq.fifo", map[string]string{"FifoQueue": "true", "MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	cleanFSrc, err := mk(p+"-clean-src.fifo", map[string]string{"FifoQueue": "true", "MessageRetentionPeriod": ret(4), "RedrivePolicy": misRedrive(cleanFDLQ.ARN, 5)})
	if err != nil {
		return m, err
	}
	m.Clean = []Queue{cleanSrc, cleanDLQ, cleanFSrc, cleanFDLQ}
	if err := FillDLQ(ctx, c, cleanDLQ.URL, 3, func(i int) string { return fmt.Sprintf(`{"eventId":"clean-%d"}`, i) }); err != nil {
		return m, err
	}

	// A source without a RedrivePolicy; a DLQ nothing feeds.
	q, err := mk(p+"-nopolicy", nil)
	if err != nil {
		return m, err
	}
	add("no redrive policy", Expected{"no-redrive-policy", "error", q.Name})
	if q, err = mk(p+"-orphan-dlq", map[string]string{"MessageRetentionPeriod": ret(14)}); err != nil {
		return m, err
	}
	add("orphan DLQ", Expected{"orphan-dlq", "warn", q.Name})

	// A RedrivePolicy whose DLQ was deleted afterwards (SQS, like the
	// emulator, refuses a missing target at SetQueueAttributes time).
	gone, err := misQueue(ctx, c, p+"-gone-dlq", map[string]string{"MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	if q, err = mk(p+"-missing-src", map[string]string{"RedrivePolicy": misRedrive(gone.ARN, 5)}); err != nil {
		return m, err
	}
	if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(gone.URL)}); err != nil {
		return m, fmt.Errorf("seed: deleting %s: %w", gone.Name, err)
	}
	add("DLQ deleted", Expected{"dlq-missing", "error", q.Name})

	// A DLQ in another region (the emulator checks the target by name only).
	regionDLQ, err := mk(p+"-region-dlq", map[string]string{"MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	otherARN := "arn:aws:sqs:eu-west-1:" + misAccount(regionDLQ.ARN) + ":" + regionDLQ.Name
	if q, err = mk(p+"-region-src", map[string]string{"RedrivePolicy": misRedrive(otherARN, 5)}); err != nil {
		return m, err
	}
	add("DLQ in another region", Expected{"dlq-other-region", "error", q.Name},
		// Nothing in this region targets the same-named local queue.
		Expected{"orphan-dlq", "warn", regionDLQ.Name})

	// A queue that dead-letters into itself: create, then point at itself.
	if q, err = mk(p+"-self", nil); err != nil {
		return m, err
	}
	if err := misSetAttrs(ctx, c, q, map[string]string{"RedrivePolicy": misRedrive(q.ARN, 5)}); err != nil {
		return m, err
	}
	add("self loop", Expected{"dlq-self", "error", q.Name})

	// A DLQ whose RedriveAllowPolicy denies its only source (set after the
	// source's policy, the order in which it goes wrong in real life).
	denyDLQ, err := mk(p+"-deny-dlq", map[string]string{"MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	if _, err = mk(p+"-deny-src", map[string]string{"RedrivePolicy": misRedrive(denyDLQ.ARN, 5)}); err != nil {
		return m, err
	}
	if err := misSetAttrs(ctx, c, denyDLQ, map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`}); err != nil {
		return m, err
	}
	add("allow policy denies the source", Expected{"redrive-allow-denied", "error", denyDLQ.Name})

	// Retention: a DLQ shorter than its source; a 14-day DLQ behind a 14-day source.
	shortDLQ, err := mk(p+"-short-dlq", map[string]string{"MessageRetentionPeriod": ret(1)})
	if err != nil {
		return m, err
	}
	if _, err = mk(p+"-short-src", map[string]string{"MessageRetentionPeriod": ret(4), "RedrivePolicy": misRedrive(shortDLQ.ARN, 5)}); err != nil {
		return m, err
	}
	add("DLQ retention below the source's", Expected{"dlq-retention-short", "error", shortDLQ.Name})
	capDLQ, err := mk(p+"-capped-dlq", map[string]string{"MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	if _, err = mk(p+"-capped-src", map[string]string{"MessageRetentionPeriod": ret(14), "RedrivePolicy": misRedrive(capDLQ.ARN, 5)}); err != nil {
		return m, err
	}
	add("DLQ at 14 days and still short", Expected{"dlq-retention-capped", "warn", capDLQ.Name})

	// Source settings, all dead-lettering into one well-configured DLQ.
	shared, err := mk(p+"-shared-dlq", map[string]string{"MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	for _, s := range []struct {
		suffix, check, sev string
		attrs              map[string]string
	}{
		{"-mrc-low", "max-receive-low", "warn", map[string]string{"RedrivePolicy": misRedrive(shared.ARN, 1)}},
		{"-mrc-high", "max-receive-high", "warn", map[string]string{"RedrivePolicy": misRedrive(shared.ARN, 50)}},
		{"-vis-tiny", "visibility-tiny", "warn", map[string]string{"RedrivePolicy": misRedrive(shared.ARN, 5), "VisibilityTimeout": "2"}},
		{"-vis-max", "visibility-max", "warn", map[string]string{"RedrivePolicy": misRedrive(shared.ARN, 5), "VisibilityTimeout": "43200"}},
		{"-retry-short", "retry-window-short", "info", map[string]string{"RedrivePolicy": misRedrive(shared.ARN, 4), "VisibilityTimeout": "10"}},
		{"-plaintext", "no-encryption", "warn", map[string]string{"RedrivePolicy": misRedrive(shared.ARN, 5), "SqsManagedSseEnabled": "false"}},
	} {
		if q, err = mk(p+s.suffix, s.attrs); err != nil {
			return m, err
		}
		add(s.check, Expected{s.check, s.sev, q.Name})
	}

	// A DLQ with its own RedrivePolicy. Its target is then a DLQ of a
	// 14-day DLQ, which no retention can cover.
	last, err := mk(p+"-chain-last", map[string]string{"MessageRetentionPeriod": ret(14)})
	if err != nil {
		return m, err
	}
	chain, err := mk(p+"-chain-dlq", map[string]string{"MessageRetentionPeriod": ret(14), "RedrivePolicy": misRedrive(last.ARN, 5)})
	if err != nil {
		return m, err
	}
	if _, err = mk(p+"-chain-src", map[string]string{"RedrivePolicy": misRedrive(chain.ARN, 5)}); err != nil {
		return m, err
	}
	add("DLQ with its own RedrivePolicy", Expected{"dlq-has-redrive-policy", "warn", chain.Name},
		Expected{"dlq-retention-capped", "warn", last.Name})

	// Messages about to expire: a one-hour DLQ (which is also far too short
	// for its source).
	expDLQ, err := mk(p+"-expiring-dlq", map[string]string{"MessageRetentionPeriod": strconv.Itoa(expiringRetain)})
	if err != nil {
		return m, err
	}
	if _, err = mk(p+"-expiring-src", map[string]string{"RedrivePolicy": misRedrive(expDLQ.ARN, 5)}); err != nil {
		return m, err
	}
	if err := FillDLQ(ctx, c, expDLQ.URL, opt.Expiring, func(i int) string { return fmt.Sprintf(`{"eventId":"expiring-%d"}`, i) }); err != nil {
		return m, err
	}
	add("messages expiring", Expected{"messages-expiring", "error", expDLQ.Name},
		Expected{"dlq-retention-short", "error", expDLQ.Name})
	return m, nil
}

func misRedrive(arn string, mrc int) string {
	b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arn, "maxReceiveCount": mrc})
	return string(b)
}

func misAccount(arn string) string {
	if p := strings.Split(arn, ":"); len(p) == 6 {
		return p[4]
	}
	return ""
}

// misQueue creates a queue with attrs (VisibilityTimeout 30 and SSE unless
// attrs say otherwise) and reads its ARN.
func misQueue(ctx context.Context, c *sqs.Client, name string, attrs map[string]string) (Queue, error) {
	a := map[string]string{"VisibilityTimeout": "30"}
	for k, v := range attrs {
		a[k] = v
	}
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
	if err != nil {
		return Queue{}, fmt.Errorf("seed: creating %s: %w", name, err)
	}
	got, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return Queue{}, fmt.Errorf("seed: reading attributes of %s: %w", name, err)
	}
	q := Queue{Name: name, URL: aws.ToString(out.QueueUrl), ARN: got.Attributes[string(types.QueueAttributeNameQueueArn)],
		FIFO: a["FifoQueue"] == "true"}
	q.RetentionSeconds, _ = strconv.Atoi(got.Attributes[string(types.QueueAttributeNameMessageRetentionPeriod)])
	var rp struct {
		MaxReceiveCount json.Number `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(got.Attributes[string(types.QueueAttributeNameRedrivePolicy)]), &rp) == nil {
		n, _ := rp.MaxReceiveCount.Int64()
		q.MaxReceiveCount = int(n)
	}
	return q, nil
}

func misSetAttrs(ctx context.Context, c *sqs.Client, q Queue, attrs map[string]string) error {
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(q.URL), Attributes: attrs}); err != nil {
		return fmt.Errorf("seed: setting %v on %s: %w", misKeys(attrs), q.Name, err)
	}
	return nil
}

func misKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
