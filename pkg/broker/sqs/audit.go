package sqs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/pkg/broker"
	fnd "github.com/dlqctl/dlqctl/pkg/finding"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// The SQS audit: the queues to audit, their DLQs and sources loaded as a
// graph (LoadAudit), the configuration checklist over it (audit_rules.go)
// and a sample of each DLQ for messages about to expire. Its findings are
// package finding's, the same type every broker's audit returns.

// DefaultExpiryHorizon is how soon an expiry counts as imminent.
const DefaultExpiryHorizon = 24 * time.Hour

// AuditOptions say what to audit and how.
type AuditOptions struct {
	// Queues are queue references (name, URL or ARN). Empty audits every
	// queue in the region (whose name starts with Prefix).
	Queues []string
	Prefix string
	AuditConfig
	// SampleMax is how many messages to sample per DLQ for the expiry
	// check; 0 skips it.
	SampleMax int
	// SampleVisibility is how long sampled messages stay hidden between
	// heartbeats (they are released when the sample ends).
	SampleVisibility time.Duration
	// ExpiryHorizon is how soon an expiry is reported (default 24 h).
	ExpiryHorizon time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnSample is called before a DLQ is sampled.
	OnSample func(q *Queue, max int)
	// Sample reads up to max messages of a DLQ without consuming them
	// (each held at most hold between heartbeats, all given back): the
	// domain's peek (package inspect), handed down so this package needs
	// none. Nil skips the expiry sample.
	Sample Sampler
}

// Sampler peeks up to max messages of ep and gives them all back.
type Sampler func(ctx context.Context, ep broker.Endpoint, max int, hold time.Duration) ([]record.Record, error)

// RunAudit loads the queues to audit with their DLQs and sources, runs the
// configuration checks and samples DLQs for messages about to expire.
func RunAudit(ctx context.Context, c *Client, opts AuditOptions) (broker.AuditResult, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ExpiryHorizon <= 0 {
		opts.ExpiryHorizon = DefaultExpiryHorizon
	}
	g, err := LoadAudit(ctx, c, opts.Queues, opts.Prefix)
	if err != nil {
		return broker.AuditResult{}, err
	}
	findings, notes := EvaluateAudit(g, opts.AuditConfig)
	if opts.SampleMax > 0 && opts.Sample != nil {
		fs, ns, err := sampleExpiry(ctx, c, g, opts)
		if err != nil {
			return broker.AuditResult{}, err
		}
		findings = append(findings, fs...)
		notes = append(notes, ns...)
	}
	fnd.Sort(findings)
	res := broker.AuditResult{Audited: []string{}, Findings: findings, Notes: notes}
	for _, n := range g.Nodes() {
		res.Audited = append(res.Audited, n.Q.Name)
	}
	return res, nil
}

// LoadAudit builds the graph to audit. With refs, it holds those queues, the
// queues that dead-letter into them, the DLQs they point at and those DLQs'
// other sources (a DLQ's checks need all of them); with none,
// every queue whose name starts with prefix (all of them without a prefix)
// plus the DLQs and sources they link to.
func LoadAudit(ctx context.Context, c *Client, refs []string, prefix string) (*AuditGraph, error) {
	g := NewAuditGraph()
	var seeds []*Queue
	if len(refs) > 0 {
		for _, ref := range refs {
			q, err := c.Resolve(ctx, ref)
			if err != nil {
				return nil, err
			}
			seeds = append(seeds, q)
		}
	} else {
		urls, err := c.ListQueueURLs(ctx, prefix)
		if err != nil {
			return nil, err
		}
		if seeds, err = c.LoadAll(ctx, urls); err != nil {
			return nil, err
		}
	}
	whole := len(refs) == 0 && prefix == ""
	for _, q := range seeds {
		g.Add(q, whole)
	}
	if !whole {
		// Sources outside the selection: ask SQS which queues target each.
		if err := addSources(ctx, c, g, seeds); err != nil {
			return nil, err
		}
	}
	// DLQs outside the selection, following chains (a DLQ with its own
	// RedrivePolicy). A target that cannot be found stays out: missing.
	tried := map[string]bool{}
	for {
		var next []string
		for _, n := range g.Nodes() {
			if n.Policy == nil {
				continue
			}
			arn := n.Policy.DeadLetterTargetARN
			if g.Has(arn) || tried[arn] {
				continue
			}
			tried[arn] = true
			if region, _, ok := arnParts(arn); ok && (c.Region == "" || region == c.Region) {
				next = append(next, arn)
			}
		}
		if len(next) == 0 {
			break
		}
		for _, arn := range next {
			q, err := lookupARN(ctx, c, arn)
			if err != nil {
				return nil, err
			}
			if q != nil {
				g.Add(q, false)
			}
		}
	}
	if !whole {
		// A DLQ's checks (retention, allow policy) need all of its sources.
		var dlqs []*Queue
		for _, n := range g.Nodes() {
			if n.SourcesKnown {
				continue
			}
			for _, s := range g.Nodes() {
				if s.Policy != nil && s.Policy.DeadLetterTargetARN == n.Q.ARN && s != n {
					dlqs = append(dlqs, n.Q)
					break
				}
			}
		}
		if err := addSources(ctx, c, g, dlqs); err != nil {
			return nil, err
		}
	}
	g.Link()
	return g, nil
}

// addSources adds to g every queue whose RedrivePolicy targets one of qs,
// and marks qs as having all their sources known.
func addSources(ctx context.Context, c *Client, g *AuditGraph, qs []*Queue) error {
	srcURLs, err := sourcesOf(ctx, c, qs)
	if err != nil {
		return err
	}
	extra, err := c.LoadAll(ctx, unknownURLs(g, srcURLs))
	if err != nil {
		return err
	}
	for _, q := range extra {
		g.Add(q, false)
	}
	for _, q := range qs {
		g.Add(q, true)
	}
	return nil
}

func unknownURLs(g *AuditGraph, urls []string) []string {
	known := map[string]bool{}
	for _, n := range g.byARN {
		known[n.Q.URL] = true
	}
	var out []string
	for _, u := range urls {
		if !known[u] {
			out = append(out, u)
		}
	}
	return out
}

func sourcesOf(ctx context.Context, c *Client, qs []*Queue) ([]string, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		urls     []string
		firstErr error
		sem      = make(chan struct{}, 8)
	)
	seen := map[string]bool{}
	for _, q := range qs {
		seen[q.URL] = true
	}
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			us, err := c.SourceQueueURLs(ctx, q)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil && !IsNotFound(err) {
					firstErr = err
				}
				return
			}
			for _, u := range us {
				if !seen[u] {
					seen[u] = true
					urls = append(urls, u)
				}
			}
		}()
	}
	wg.Wait()
	return urls, firstErr
}

// lookupARN loads the queue with arn, or returns nil when it does not exist.
func lookupARN(ctx context.Context, c *Client, arn string) (*Queue, error) {
	_, account, _ := arnParts(arn)
	in := &awssqs.GetQueueUrlInput{QueueName: aws.String(NameFromARN(arn))}
	if account != "" {
		in.QueueOwnerAWSAccountId = aws.String(account)
	}
	out, err := c.API.GetQueueUrl(ctx, in)
	if err != nil {
		if IsNotFound(err) {
			return nil, nil
		}
		return nil, WrapAWSError(err)
	}
	q := &Queue{URL: aws.ToString(out.QueueUrl)}
	if err := c.Refresh(ctx, q); err != nil {
		if IsNotFound(err) {
			return nil, nil
		}
		return nil, WrapAWSError(err)
	}
	return q, nil
}

// ExpirySample is what a sample of a DLQ says about upcoming expiries.
type ExpirySample struct {
	Sampled  int
	Expiring int
	// Earliest is the soonest expiry among the sampled messages.
	Earliest time.Time
}

// ExpiringWithin counts the records that expire before now+horizon.
func ExpiringWithin(recs []record.Record, now time.Time, horizon time.Duration) ExpirySample {
	s := ExpirySample{Sampled: len(recs)}
	for _, r := range recs {
		if r.ExpiresAt.IsZero() {
			continue
		}
		if r.ExpiresAt.Before(now.Add(horizon)) {
			s.Expiring++
		}
		if s.Earliest.IsZero() || r.ExpiresAt.Before(s.Earliest) {
			s.Earliest = r.ExpiresAt
		}
	}
	return s
}

func sampleExpiry(ctx context.Context, c *Client, g *AuditGraph, opts AuditOptions) ([]fnd.Finding, []string, error) {
	var (
		out   []fnd.Finding
		notes []string
	)
	for _, n := range g.Nodes() {
		if !n.IsDLQ() {
			continue
		}
		visible := n.Q.Counts().Visible
		switch {
		case visible == 0:
			continue
		case n.Q.FIFO:
			notes = append(notes, fmt.Sprintf("%s: expiry not sampled: a FIFO DLQ restarts the retention clock when a message is dead-lettered, and peeking blocks message groups", n.Q.Name))
			continue
		case n.Policy != nil:
			notes = append(notes, fmt.Sprintf("%s: expiry not sampled: the DLQ has its own RedrivePolicy, so peeking would count toward moving its messages on", n.Q.Name))
			continue
		}
		if opts.OnSample != nil {
			opts.OnSample(n.Q, opts.SampleMax)
		}
		recs, err := opts.Sample(ctx, NewEndpoint(c, n.Q), opts.SampleMax, opts.SampleVisibility)
		if err != nil {
			return nil, nil, err
		}
		now := opts.Now()
		s := ExpiringWithin(recs, now, opts.ExpiryHorizon)
		if s.Expiring == 0 {
			continue
		}
		f := finding(fnd.SevError, "messages-expiring", n,
			fmt.Sprintf("%d of %d sampled messages expire within %s (the first in %s; sampled %d of ~%d visible)",
				s.Expiring, s.Sampled, dur(opts.ExpiryHorizon), dur(max(0, s.Earliest.Sub(now))), s.Sampled, visible),
			"SQS deletes expired messages for good: once gone they cannot be inspected, archived or redriven",
			fnd.Fix{Command: "dlqctl archive " + n.Q.Name,
				Text: "archive or redrive them before they expire; a longer MessageRetentionPeriod on the DLQ gives future messages more time"})
		if n.Q.Retention() < MaxRetention {
			f.Fix.Attribute, f.Fix.Value, f.Fix.Terraform = "MessageRetentionPeriod", secs(MaxRetention), "message_retention_seconds = "+secs(MaxRetention)
		}
		f.Sampled = true
		if len(n.Sources) > 0 {
			names := make([]string, len(n.Sources))
			for i, s := range n.Sources {
				names[i] = s.Q.Name
			}
			f.Related = strings.Join(names, ",")
		}
		out = append(out, f)
	}
	return out, notes, nil
}

// Auditor is what an SQS audit covers: the named queues (with their DLQs
// and sources), or every queue of the region whose name starts with
// Prefix. It is the broker.Auditor of the SQS rules (audit_rules.go).
type Auditor struct {
	Client *Client
	Queues []string
	Prefix string
	// OnSample is called before a DLQ is sampled for the expiry check.
	OnSample func(queue string, max int)
	// Sample peeks a DLQ for the expiry check (nil: no sample).
	Sample Sampler
}

var _ broker.Auditor = (*Auditor)(nil)

// Audit runs the SQS configuration checks and samples DLQs for messages
// about to expire (opt.Sample messages each; 0 skips it).
func (a *Auditor) Audit(ctx context.Context, opt broker.AuditOptions) (broker.AuditResult, error) {
	o := AuditOptions{Queues: a.Queues, Prefix: a.Prefix, AuditConfig: AuditConfig{InvestigationWindow: opt.InvestigationWindow},
		SampleMax: opt.Sample, SampleVisibility: opt.SampleHold, Sample: a.Sample}
	if a.OnSample != nil {
		o.OnSample = func(q *Queue, n int) { a.OnSample(q.Name, n) }
	}
	return RunAudit(ctx, a.Client, o)
}
