package sqs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/humantime"
	fnd "github.com/dlqctl/dlqctl/pkg/finding"
)

// SQS limits and the thresholds of the checklist.
const (
	MaxRetention         = 14 * 24 * time.Hour
	minRetention         = time.Minute
	lowMaxReceiveCount   = 2
	highMaxReceiveCount  = 10
	goodMaxReceiveCount  = 5
	tinyVisibility       = 5 * time.Second
	goodVisibility       = 30 * time.Second
	minRetryWindow       = time.Minute
	maxAllowPolicySource = 10
)

// AuditNode is one queue of the audited setup with its links.
type AuditNode struct {
	Q      *Queue
	Policy *RedrivePolicy // nil without a RedrivePolicy
	// Target is the DLQ the policy points at (nil when it has no policy or
	// the target does not exist).
	Target *AuditNode
	// Sources are the queues whose RedrivePolicy targets this queue.
	Sources []*AuditNode
	// SourcesKnown says every source of this queue is in the graph (so
	// "nobody targets it" is a fact, not a gap in what was loaded).
	SourcesKnown bool
}

// IsDLQ reports whether some queue's RedrivePolicy targets n.
func (n *AuditNode) IsDLQ() bool { return len(n.Sources) > 0 }

// AuditGraph is a set of queues linked by their RedrivePolicies.
type AuditGraph struct {
	byARN map[string]*AuditNode
}

// NewAuditGraph returns an empty graph.
func NewAuditGraph() *AuditGraph { return &AuditGraph{byARN: map[string]*AuditNode{}} }

// Add puts q in the graph (once per ARN); sourcesKnown says all queues
// targeting q are (or will be) in the graph too.
func (g *AuditGraph) Add(q *Queue, sourcesKnown bool) *AuditNode {
	if n, ok := g.byARN[q.ARN]; ok {
		n.SourcesKnown = n.SourcesKnown || sourcesKnown
		return n
	}
	n := &AuditNode{Q: q, Policy: q.RedrivePolicy(), SourcesKnown: sourcesKnown}
	g.byARN[q.ARN] = n
	return n
}

// Has reports whether the queue with arn is in the graph.
func (g *AuditGraph) Has(arn string) bool { _, ok := g.byARN[arn]; return ok }

// Nodes returns the queues sorted by name.
func (g *AuditGraph) Nodes() []*AuditNode {
	out := make([]*AuditNode, 0, len(g.byARN))
	for _, n := range g.byARN {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Q.Name < out[j].Q.Name })
	return out
}

// Link resolves every RedrivePolicy target among the queues in the graph.
// A target that is not in the graph counts as missing, so callers load
// every target they can find before linking.
func (g *AuditGraph) Link() {
	for _, n := range g.byARN {
		n.Sources, n.Target = nil, nil
	}
	for _, n := range g.Nodes() {
		if n.Policy == nil {
			continue
		}
		if t, ok := g.byARN[n.Policy.DeadLetterTargetARN]; ok {
			n.Target = t
			if t != n { // a self-loop is reported as dlq-self, not as a DLQ
				t.Sources = append(t.Sources, n)
			}
		}
	}
}

// AuditConfig holds the audit's tunables.
type AuditConfig struct {
	// InvestigationWindow is how long a message must stay in the DLQ after
	// its source would have expired it: time to notice, triage and redrive.
	InvestigationWindow time.Duration
}

// EvaluateAudit runs the configuration checks over the graph and returns the
// findings (most severe first) and notes about checks it could not run.
func EvaluateAudit(g *AuditGraph, cfg AuditConfig) ([]fnd.Finding, []string) {
	var (
		out   []fnd.Finding
		notes []string
	)
	encUnknown := 0
	for _, n := range g.Nodes() {
		out = append(out, sourceFindings(n)...)
		if n.IsDLQ() {
			out = append(out, dlqFindings(n, cfg)...)
		}
		if !n.IsDLQ() && n.Policy == nil && n.SourcesKnown {
			out = append(out, missingPolicyFinding(n))
		}
		f, known := encryptionFinding(n)
		if !known {
			encUnknown++
		} else if f != nil {
			out = append(out, *f)
		}
	}
	if encUnknown > 0 {
		notes = append(notes, fmt.Sprintf("encryption at rest not checked on %d queue(s): the endpoint reports neither SqsManagedSseEnabled nor KmsMasterKeyId", encUnknown))
	}
	fnd.Sort(out)
	return out, notes
}

func finding(sev fnd.Severity, check string, n *AuditNode, problem, why string, fix fnd.Fix) fnd.Finding {
	if fix.Queue == "" {
		fix.Queue = n.Q.Name
	}
	return fnd.Finding{Severity: sev, Check: check, Queue: n.Q.Name, QueueURL: n.Q.URL, Problem: problem, Why: why, Fix: fix}
}

func arnParts(arn string) (region, account string, ok bool) {
	p := strings.Split(arn, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" {
		return "", "", false
	}
	return p[3], p[4], true
}

func redrivePolicyJSON(target string, mrc int) string {
	b, _ := json.Marshal(map[string]any{"deadLetterTargetArn": target, "maxReceiveCount": mrc})
	return string(b)
}

func redrivePolicyTF(target string, mrc int) string {
	return fmt.Sprintf("redrive_policy = jsonencode({ deadLetterTargetArn = %q, maxReceiveCount = %d })", target, mrc)
}

func secs(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

func dur(d time.Duration) string { return humantime.Duration(d) }

// suggestedDLQName is where a new DLQ for n would go.
func suggestedDLQName(n *AuditNode) string {
	name := strings.TrimSuffix(n.Q.Name, ".fifo") + "-dlq"
	if n.Q.FIFO {
		name += ".fifo"
	}
	return name
}

func suggestedDLQARN(n *AuditNode) string {
	if i := strings.LastIndexByte(n.Q.ARN, ':'); i >= 0 {
		return n.Q.ARN[:i+1] + suggestedDLQName(n)
	}
	return suggestedDLQName(n)
}

func looksLikeDLQ(name string) bool {
	l := strings.ToLower(strings.TrimSuffix(name, ".fifo"))
	for _, s := range []string{"dlq", "deadletter", "dead-letter", "dead_letter"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return strings.HasSuffix(l, "-dl") || strings.HasSuffix(l, "_dl")
}

func missingPolicyFinding(n *AuditNode) fnd.Finding {
	if looksLikeDLQ(n.Q.Name) {
		return finding(fnd.SevWarn, "orphan-dlq", n,
			"looks like a dead-letter queue, but no queue's RedrivePolicy targets it",
			"the source it was made for dead-letters nowhere (or somewhere else), so this queue gives a false sense of safety and alarms on it never fire",
			fnd.Fix{Text: fmt.Sprintf("set a RedrivePolicy with deadLetterTargetArn %s on the source queue it belongs to, or delete it if it is unused", n.Q.ARN)})
	}
	target := suggestedDLQARN(n)
	return finding(fnd.SevError, "no-redrive-policy", n,
		"source queue has no RedrivePolicy",
		"a poison message is received again and again, burning consumer capacity, until retention expires it and it is lost without a trace",
		fnd.Fix{Attribute: "RedrivePolicy", Value: redrivePolicyJSON(target, goodMaxReceiveCount), Terraform: redrivePolicyTF(target, goodMaxReceiveCount),
			Text: fmt.Sprintf("create %s (same type, retention ≥ this queue's + the investigation window) and point a RedrivePolicy at it", suggestedDLQName(n))})
}

func sourceFindings(n *AuditNode) []fnd.Finding {
	p := n.Policy
	if p == nil {
		return nil
	}
	var out []fnd.Finding
	targetName := NameFromARN(p.DeadLetterTargetARN)
	policyFix := func(mrc int, text string) fnd.Fix {
		return fnd.Fix{Attribute: "RedrivePolicy", Value: redrivePolicyJSON(p.DeadLetterTargetARN, mrc), Terraform: redrivePolicyTF(p.DeadLetterTargetARN, mrc), Text: text}
	}
	region, account, _ := arnParts(n.Q.ARN)
	tRegion, tAccount, ok := arnParts(p.DeadLetterTargetARN)
	switch {
	case p.DeadLetterTargetARN == n.Q.ARN:
		f := finding(fnd.SevError, "dlq-self", n, "RedrivePolicy targets the queue itself",
			"messages that exceed maxReceiveCount are moved back into the same queue and retried forever; nothing ever reaches a DLQ",
			policyFix(p.MaxReceiveCount, fmt.Sprintf("point deadLetterTargetArn at a separate DLQ such as %s", suggestedDLQName(n))))
		f.Fix.Value, f.Fix.Terraform = redrivePolicyJSON(suggestedDLQARN(n), p.MaxReceiveCount), redrivePolicyTF(suggestedDLQARN(n), p.MaxReceiveCount)
		out = append(out, f)
	case ok && (tRegion != region || tAccount != account):
		f := finding(fnd.SevError, "dlq-other-region", n,
			fmt.Sprintf("RedrivePolicy targets %s in %s/%s, but the queue is in %s/%s", targetName, tAccount, tRegion, account, region),
			"SQS dead-letters only into a queue of the same account and region: failed messages are never moved and expire in the source",
			policyFix(p.MaxReceiveCount, fmt.Sprintf("create a DLQ in %s/%s and point deadLetterTargetArn at it", account, region)))
		f.Related = targetName
		f.Fix.Value, f.Fix.Terraform = redrivePolicyJSON(suggestedDLQARN(n), p.MaxReceiveCount), redrivePolicyTF(suggestedDLQARN(n), p.MaxReceiveCount)
		out = append(out, f)
	case n.Target == nil:
		f := finding(fnd.SevError, "dlq-missing", n,
			fmt.Sprintf("RedrivePolicy targets %s, which does not exist", orUnknown(targetName, p.DeadLetterTargetARN)),
			"messages that exceed maxReceiveCount have nowhere to go: they keep being retried until retention expires them, and are lost",
			policyFix(p.MaxReceiveCount, fmt.Sprintf("re-create %s (same type as this queue) or point deadLetterTargetArn at an existing DLQ", orUnknown(targetName, p.DeadLetterTargetARN))))
		f.Related = targetName
		f.Fix.Attribute, f.Fix.Value, f.Fix.Terraform = "", "", ""
		out = append(out, f)
	case n.Target.Q.FIFO != n.Q.FIFO:
		kind := map[bool]string{true: "FIFO", false: "standard"}
		f := finding(fnd.SevError, "dlq-type-mismatch", n,
			fmt.Sprintf("%s queue dead-letters into %s queue %s", kind[n.Q.FIFO], kind[n.Target.Q.FIFO], targetName),
			"SQS requires the DLQ to be the same type as its source; moves fail and failed messages stay in the source until they expire",
			policyFix(p.MaxReceiveCount, fmt.Sprintf("create %s (%s) and point deadLetterTargetArn at it", suggestedDLQName(n), kind[n.Q.FIFO])))
		f.Related = targetName
		f.Fix.Value, f.Fix.Terraform = redrivePolicyJSON(suggestedDLQARN(n), p.MaxReceiveCount), redrivePolicyTF(suggestedDLQARN(n), p.MaxReceiveCount)
		out = append(out, f)
	}

	lowMRC := p.MaxReceiveCount >= 1 && p.MaxReceiveCount <= lowMaxReceiveCount
	switch {
	case lowMRC:
		f := finding(fnd.SevWarn, "max-receive-low", n,
			fmt.Sprintf("maxReceiveCount is %d", p.MaxReceiveCount),
			"one or two transient blips (a timeout, a throttled call, a deploy) dead-letter a good message, so the DLQ fills with noise that hides the real poison messages",
			policyFix(goodMaxReceiveCount, fmt.Sprintf("raise maxReceiveCount to %d (3–10 covers transient failures)", goodMaxReceiveCount)))
		f.Related = targetName
		out = append(out, f)
	case p.MaxReceiveCount > highMaxReceiveCount:
		f := finding(fnd.SevWarn, "max-receive-high", n,
			fmt.Sprintf("maxReceiveCount is %d", p.MaxReceiveCount),
			fmt.Sprintf("a poison message is retried %d times before it is set aside, burning consumer capacity and delaying the messages behind it", p.MaxReceiveCount),
			policyFix(highMaxReceiveCount, fmt.Sprintf("lower maxReceiveCount to %d or less", highMaxReceiveCount)))
		f.Related = targetName
		out = append(out, f)
	}

	vis := n.Q.VisibilityTimeout()
	_, hasVis := n.Q.Attrs[string(types.QueueAttributeNameVisibilityTimeout)]
	tiny := hasVis && vis < tinyVisibility
	switch {
	case tiny:
		out = append(out, finding(fnd.SevWarn, "visibility-tiny", n,
			fmt.Sprintf("visibility timeout is %s", dur(vis)),
			"a message becomes visible again before a normal consumer finishes it, so it is processed twice and its receive count climbs until it is dead-lettered while healthy",
			fnd.Fix{Attribute: "VisibilityTimeout", Value: secs(goodVisibility), Terraform: "visibility_timeout_seconds = " + secs(goodVisibility),
				Text: "set the visibility timeout above the consumer's p99 processing time (30 s is the SQS default)"}))
	case vis >= MaxVisibility:
		out = append(out, finding(fnd.SevWarn, "visibility-max", n,
			"visibility timeout is the 12 h maximum",
			"a consumer that crashes holds its messages hidden for 12 hours, so a stuck worker looks like an empty queue and every retry (and dead-lettering) is delayed by half a day",
			fnd.Fix{Attribute: "VisibilityTimeout", Value: "300", Terraform: "visibility_timeout_seconds = 300",
				Text: "set it to the p99 processing time plus a margin (300 s shown) and extend long jobs with ChangeMessageVisibility heartbeats"}))
	}
	if !lowMRC && !tiny && hasVis && p.MaxReceiveCount > 0 && time.Duration(p.MaxReceiveCount)*vis < minRetryWindow {
		want := max(goodVisibility, (minRetryWindow+time.Duration(p.MaxReceiveCount)*time.Second-time.Second)/time.Duration(p.MaxReceiveCount))
		out = append(out, finding(fnd.SevInfo, "retry-window-short", n,
			fmt.Sprintf("maxReceiveCount %d × visibility %s = %s of retries", p.MaxReceiveCount, dur(vis), dur(time.Duration(p.MaxReceiveCount)*vis)),
			"a dependency outage shorter than a minute is enough to dead-letter every message that arrives during it",
			fnd.Fix{Attribute: "VisibilityTimeout", Value: secs(want), Terraform: "visibility_timeout_seconds = " + secs(want),
				Text: "make maxReceiveCount × VisibilityTimeout cover a short outage (at least a minute)"}))
	}
	return out
}

func orUnknown(name, arn string) string {
	if name != "" {
		return name
	}
	return arn
}

func dlqFindings(d *AuditNode, cfg AuditConfig) []fnd.Finding {
	var out []fnd.Finding
	// Retention: standard queues keep the original enqueue time, so the DLQ
	// must outlast the source's retention plus the investigation window;
	// FIFO resets it, so the window alone must fit.
	ret := d.Q.Retention()
	if ret > 0 {
		var (
			need   time.Duration
			worst  *AuditNode
			hard   bool
			reason string
		)
		for _, s := range d.Sources {
			if s.Q.FIFO != d.Q.FIFO {
				continue // reported as a type mismatch
			}
			n := cfg.InvestigationWindow
			if !d.Q.FIFO {
				n += s.Q.Retention()
			}
			if n > need {
				need, worst = n, s
			}
			if !d.Q.FIFO && ret < s.Q.Retention() {
				hard = true
			}
		}
		if worst != nil && ret < need {
			if d.Q.FIFO {
				reason = fmt.Sprintf("retention %s is shorter than the %s investigation window", dur(ret), dur(cfg.InvestigationWindow))
			} else {
				reason = fmt.Sprintf("retention %s is shorter than source %s's %s + %s investigation window", dur(ret), worst.Q.Name, dur(worst.Q.Retention()), dur(cfg.InvestigationWindow))
			}
			why := "on a standard queue a dead-lettered message keeps its original enqueue time, so a message that failed late in its life expires from the DLQ before anyone investigates it"
			if d.Q.FIFO {
				why = "messages expire from the DLQ before the team can triage and redrive them"
			}
			sev := fnd.SevWarn
			if hard {
				sev = fnd.SevError
				why += "; with a DLQ shorter than its source, some messages arrive already about to expire"
			}
			switch {
			case ret >= MaxRetention:
				srcRet := MaxRetention - cfg.InvestigationWindow
				f := finding(fnd.SevWarn, "dlq-retention-capped", d,
					fmt.Sprintf("retention is at the 14-day maximum but still shorter than source %s's %s + %s investigation window", worst.Q.Name, dur(worst.Q.Retention()), dur(cfg.InvestigationWindow)),
					why+"; the DLQ cannot be raised further",
					fnd.Fix{Queue: worst.Q.Name, Text: fmt.Sprintf("lower the source's retention or archive the DLQ regularly (dlqctl archive %s) so nothing expires unseen", d.Q.Name), Command: "dlqctl archive " + d.Q.Name})
				if srcRet >= minRetention {
					f.Fix.Attribute, f.Fix.Value, f.Fix.Terraform = "MessageRetentionPeriod", secs(srcRet), "message_retention_seconds = "+secs(srcRet)
					f.Fix.Text = fmt.Sprintf("lower %s's retention to %s so 14 days cover it plus the investigation window, or archive the DLQ regularly (dlqctl archive %s)", worst.Q.Name, dur(srcRet), d.Q.Name)
				}
				f.Related = worst.Q.Name
				out = append(out, f)
			default:
				want := min(need, MaxRetention)
				text := fmt.Sprintf("raise the DLQ's retention to %s", dur(want))
				if need > MaxRetention {
					text += fmt.Sprintf(" (the SQS maximum) and lower %s's retention to %s", worst.Q.Name, dur(max(minRetention, MaxRetention-cfg.InvestigationWindow)))
				}
				f := finding(sev, "dlq-retention-short", d, reason, why,
					fnd.Fix{Attribute: "MessageRetentionPeriod", Value: secs(want), Terraform: "message_retention_seconds = " + secs(want), Text: text})
				f.Related = worst.Q.Name
				out = append(out, f)
			}
		}
	}

	if p := d.Policy; p != nil {
		out = append(out, finding(fnd.SevWarn, "dlq-has-redrive-policy", d,
			fmt.Sprintf("the DLQ itself has a RedrivePolicy (maxReceiveCount %d into %s)", p.MaxReceiveCount, orUnknown(NameFromARN(p.DeadLetterTargetARN), p.DeadLetterTargetARN)),
			"every receive while triaging (peek, sample, a failed redrive) counts toward moving messages on to yet another queue, where nobody looks for them",
			fnd.Fix{Attribute: "RedrivePolicy", Value: "", Terraform: "remove the redrive_policy argument", Text: "remove the DLQ's RedrivePolicy"}))
	}

	if f := allowPolicyFinding(d); f != nil {
		out = append(out, *f)
	}
	return out
}

// allowPolicy is a queue's RedriveAllowPolicy.
type allowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"`
	SourceQueueArns   []string `json:"sourceQueueArns"`
}

func allowPolicyFinding(d *AuditNode) *fnd.Finding {
	raw := d.Q.Attrs[string(types.QueueAttributeNameRedriveAllowPolicy)]
	if raw == "" {
		return nil
	}
	var ap allowPolicy
	if err := json.Unmarshal([]byte(raw), &ap); err != nil {
		return nil
	}
	allowed := map[string]bool{}
	for _, a := range ap.SourceQueueArns {
		allowed[a] = true
	}
	var denied []string
	for _, s := range d.Sources {
		switch ap.RedrivePermission {
		case "denyAll":
			denied = append(denied, s.Q.Name)
		case "byQueue":
			if !allowed[s.Q.ARN] {
				denied = append(denied, s.Q.Name)
			}
		}
	}
	if len(denied) == 0 {
		return nil
	}
	sources := make([]string, 0, len(d.Sources))
	for _, s := range d.Sources {
		sources = append(sources, s.Q.ARN)
	}
	sort.Strings(sources)
	fixPolicy := map[string]any{"redrivePermission": "byQueue", "sourceQueueArns": sources}
	tf := fmt.Sprintf("redrive_allow_policy = jsonencode({ redrivePermission = \"byQueue\", sourceQueueArns = [%s] })", quoteJoin(sources))
	if len(sources) > maxAllowPolicySource {
		fixPolicy = map[string]any{"redrivePermission": "allowAll"}
		tf = `redrive_allow_policy = jsonencode({ redrivePermission = "allowAll" })`
	}
	b, _ := json.Marshal(fixPolicy)
	f := finding(fnd.SevError, "redrive-allow-denied", d,
		fmt.Sprintf("RedriveAllowPolicy (%s) denies its source(s) %s", ap.RedrivePermission, strings.Join(denied, ", ")),
		"SQS will not dead-letter from a source the DLQ does not allow: failed messages stay in the source and are retried until they expire",
		fnd.Fix{Attribute: "RedriveAllowPolicy", Value: string(b), Terraform: tf, Text: "allow every actual source queue in the DLQ's RedriveAllowPolicy"})
	f.Related = strings.Join(denied, ",")
	return &f
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// encryptionFinding reports a queue without encryption at rest; known is
// false when the endpoint reports neither encryption attribute.
func encryptionFinding(n *AuditNode) (f *fnd.Finding, known bool) {
	sse, hasSSE := n.Q.Attrs[string(types.QueueAttributeNameSqsManagedSseEnabled)]
	kms := n.Q.Attrs[string(types.QueueAttributeNameKmsMasterKeyId)]
	if !hasSSE && kms == "" {
		return nil, false
	}
	if sse == "true" || kms != "" {
		return nil, true
	}
	why := "message bodies are stored unencrypted"
	if n.IsDLQ() {
		why = "a DLQ keeps the payloads that failed, often the most sensitive ones, for up to 14 days, unencrypted"
	}
	v := finding(fnd.SevWarn, "no-encryption", n, "no encryption at rest (neither SQS-managed SSE nor a KMS key)", why,
		fnd.Fix{Attribute: "SqsManagedSseEnabled", Value: "true", Terraform: "sqs_managed_sse_enabled = true",
			Text: "enable SQS-managed SSE (or set KmsMasterKeyId / kms_master_key_id to a KMS key)"})
	return &v, true
}
