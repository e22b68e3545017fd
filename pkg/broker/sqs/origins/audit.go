package origins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	fnd "github.com/dlqctl/dlqctl/pkg/finding"
)

// Audit check ids (docs/health.md).
const (
	CheckLambdaNoRetries  = "lambda-dlq-no-retries"
	CheckSNSDLQUnwritable = "sns-dlq-unwritable"
	CheckEventBridgeNoDLQ = "eventbridge-target-no-dlq"
)

// Auditor checks the traps of the SQS DLQs that Lambda asynchronous
// invocations, SNS subscriptions and EventBridge rule targets feed: a
// function that dead-letters on its first error, a subscription DLQ SNS may
// not write to, a rule target with no DLQ. Its scope is the SQS audit's:
// the named queues (and the DLQs their RedrivePolicy names), the queues
// whose name starts with Prefix, or (neither) the whole region, where every
// rule target without a DLQ is reported. It is a broker.Auditor next to
// sqs.Auditor; it names no queue as audited (the SQS audit does).
type Auditor struct {
	// Clients: SQS, Lambda, SNS and Events are used; a nil service client
	// skips that service's check with the note in Skipped.
	Clients Clients
	Queues  []string
	Prefix  string
	// Skipped says why a service is not checked (by kind), e.g. no
	// endpoint for it next to a local SQS endpoint.
	Skipped map[Kind]string
}

var _ broker.Auditor = (*Auditor)(nil)

// auditScope is the set of queues whose feeders are checked.
type auditScope struct {
	all    bool
	prefix string
	arns   map[string]bool
}

func (s auditScope) has(arn string) bool {
	if service(arn) != "sqs" {
		return false
	}
	switch {
	case s.all:
		return true
	case s.prefix != "":
		return strings.HasPrefix(sqs.NameFromARN(arn), s.prefix)
	}
	return s.arns[arn]
}

// Audit runs the three checks; a listing the caller may not do (or a
// service that does not answer) becomes a note, not a failure.
func (a *Auditor) Audit(ctx context.Context, _ broker.AuditOptions) (broker.AuditResult, error) {
	res := broker.AuditResult{}
	sc := auditScope{all: len(a.Queues) == 0 && a.Prefix == "", prefix: a.Prefix, arns: map[string]bool{}}
	if len(a.Queues) > 0 {
		sc.prefix = ""
		for _, ref := range a.Queues {
			q, err := a.Clients.SQS.Resolve(ctx, ref)
			if err != nil {
				return res, err
			}
			sc.arns[q.ARN] = true
			if p := q.RedrivePolicy(); p != nil && p.DeadLetterTargetARN != "" {
				sc.arns[p.DeadLetterTargetARN] = true
			}
		}
	}
	// Functions whose DLQ is audited: EventBridge targets that invoke them
	// are in scope too.
	audited := map[string]bool{}
	if why := a.Skipped[KindFunction]; why != "" || a.Clients.Lambda == nil {
		res.Notes = append(res.Notes, "Lambda DLQ checks ("+CheckLambdaNoRetries+") not run: "+orText(why, "no Lambda client"))
	} else {
		fs, fns, err := a.lambdaFindings(ctx, sc)
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Notes = append(res.Notes, unchecked("Lambda DLQ checks ("+CheckLambdaNoRetries+")", err))
		}
		res.Findings = append(res.Findings, fs...)
		audited = fns
	}
	if why := a.Skipped[KindSubscription]; why != "" || a.Clients.SNS == nil {
		res.Notes = append(res.Notes, "SNS subscription DLQ checks ("+CheckSNSDLQUnwritable+") not run: "+orText(why, "no SNS client"))
	} else {
		fs, ns, err := a.snsFindings(ctx, sc)
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Notes = append(res.Notes, unchecked("SNS subscription DLQ checks ("+CheckSNSDLQUnwritable+")", err))
		}
		res.Findings = append(res.Findings, fs...)
		res.Notes = append(res.Notes, ns...)
	}
	if why := a.Skipped[KindTarget]; why != "" || a.Clients.Events == nil {
		res.Notes = append(res.Notes, "EventBridge target checks ("+CheckEventBridgeNoDLQ+") not run: "+orText(why, "no EventBridge client"))
	} else {
		fs, err := a.eventBridgeFindings(ctx, sc, audited)
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Notes = append(res.Notes, unchecked("EventBridge target checks ("+CheckEventBridgeNoDLQ+")", err))
		}
		res.Findings = append(res.Findings, fs...)
	}
	fnd.Sort(res.Findings)
	return res, nil
}

func orText(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// unchecked is the note for a check that could not list what it needs.
func unchecked(what string, err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDenied", "AccessDeniedException", "AuthorizationError", "AuthorizationErrorException":
			// The listing errors start with the action ("lambda:ListFunctions: …").
			action := err.Error()
			if c := strings.Index(action, ": "); c > 0 {
				action = action[:c]
			}
			return fmt.Sprintf("%s not run: access denied to %s (%s); grant the actions of the `dlqctl audit (Lambda, SNS, EventBridge DLQ checks)` row of dlqctl help iam", what, action, ae.ErrorMessage())
		}
	}
	return fmt.Sprintf("%s not run: %v", what, err)
}

// lambdaFindings reports the audited queues that are a function's DLQ or
// on-failure destination while its asynchronous invocations are not
// retried (MaximumRetryAttempts 0 on the unqualified function). It returns
// the ARNs of the functions whose DLQ is audited.
func (a *Auditor) lambdaFindings(ctx context.Context, sc auditScope) ([]fnd.Finding, map[string]bool, error) {
	type fn struct{ arn, name, dlc string }
	var fns []fn
	p := lambda.NewListFunctionsPaginator(a.Clients.Lambda, &lambda.ListFunctionsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("lambda:ListFunctions: %w", err)
		}
		for _, f := range page.Functions {
			x := fn{arn: aws.ToString(f.FunctionArn), name: aws.ToString(f.FunctionName)}
			if f.DeadLetterConfig != nil {
				x.dlc = aws.ToString(f.DeadLetterConfig.TargetArn)
			}
			fns = append(fns, x)
		}
	}
	var (
		mu       sync.Mutex
		out      []fnd.Finding
		firstErr error
		wg       sync.WaitGroup
		audited  = map[string]bool{}
	)
	sem := make(chan struct{}, 8)
	for _, f := range fns {
		wg.Add(1)
		sem <- struct{}{}
		go func(f fn) {
			defer func() { <-sem; wg.Done() }()
			retries, onFailure := int32(2), ""
			eic, err := a.Clients.Lambda.GetFunctionEventInvokeConfig(ctx, &lambda.GetFunctionEventInvokeConfigInput{FunctionName: aws.String(f.name)})
			switch {
			case err == nil:
				if eic.MaximumRetryAttempts != nil {
					retries = *eic.MaximumRetryAttempts
				}
				if eic.DestinationConfig != nil && eic.DestinationConfig.OnFailure != nil {
					onFailure = aws.ToString(eic.DestinationConfig.OnFailure.Destination)
				}
			case isNotFound(err):
			default:
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("lambda:GetFunctionEventInvokeConfig on %s: %w", f.name, err)
				}
				mu.Unlock()
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, dest := range []struct{ arn, how string }{{f.dlc, "DeadLetterConfig"}, {onFailure, "on-failure destination"}} {
				if dest.arn == "" || !sc.has(dest.arn) {
					continue
				}
				audited[f.arn] = true
				if retries != 0 {
					continue
				}
				q := sqs.NameFromARN(dest.arn)
				out = append(out, fnd.Finding{Severity: fnd.SevWarn, Check: CheckLambdaNoRetries, Queue: q, Related: f.name,
					Problem: fmt.Sprintf("the %s of Lambda function %s, whose asynchronous invocations have MaximumRetryAttempts 0", dest.how, f.name),
					Why:     "every failed asynchronous invocation lands here on its first error, a passing timeout or throttle included (Lambda's default is 2 retries); checked on the unqualified function's event invoke configuration",
					Fix: fnd.Fix{Queue: f.name,
						Command:   fmt.Sprintf("aws lambda put-function-event-invoke-config --function-name %s --maximum-retry-attempts 2", f.name),
						Terraform: "aws_lambda_function_event_invoke_config.maximum_retry_attempts = 2",
						Text:      fmt.Sprintf("let Lambda retry %s's asynchronous invocations (1 or 2) before dead-lettering, unless the function must never run twice", f.name)}})
			}
		}(f)
	}
	wg.Wait()
	return out, audited, firstErr
}

// snsFindings reports subscriptions whose RedrivePolicy names an audited
// queue SNS cannot write to: a queue policy that does not allow
// sns.amazonaws.com sqs:SendMessage from the subscription's topic, a queue
// in another account or region (SNS requires the same), or no queue.
func (a *Auditor) snsFindings(ctx context.Context, sc auditScope) ([]fnd.Finding, []string, error) {
	subs, err := subscriptionDLQs(ctx, a.Clients.SNS, sc.has, func(action, resource string, err error) error {
		if resource == "*" {
			return fmt.Errorf("%s: %w", action, err)
		}
		return fmt.Errorf("%s on %s: %w", action, resource, err)
	})
	if err != nil {
		return nil, nil, err
	}
	var out []fnd.Finding
	var notes []string
	for _, s := range subs {
		name := sqs.NameFromARN(s.dlq)
		problem := ""
		fix := fnd.Fix{Queue: name, Attribute: "Policy", Value: SNSDLQPolicy(s.dlq, s.topic),
			Terraform: "aws_sqs_queue_policy.policy (Allow sns.amazonaws.com sqs:SendMessage with ArnEquals aws:SourceArn = the topic)",
			Text:      fmt.Sprintf("add a statement to %s's queue policy allowing sns.amazonaws.com sqs:SendMessage with aws:SourceArn %s (keep its other statements)", name, s.topic)}
		if arnPart(s.dlq, 3) != arnPart(s.topic, 3) || arnPart(s.dlq, 4) != arnPart(s.topic, 4) {
			problem = fmt.Sprintf("the DLQ of SNS subscription %s, in another account or region than its topic %s", s.arn, s.topic)
			fix = fnd.Fix{Queue: name, Terraform: "aws_sns_topic_subscription.redrive_policy",
				Text: "point the subscription's RedrivePolicy at a queue in the topic's own account and region (SNS requires it)"}
		} else {
			q, err := a.Clients.SQS.Resolve(ctx, s.dlq)
			switch {
			case err != nil && sqs.IsNotFound(err):
				problem = fmt.Sprintf("named by SNS subscription %s's RedrivePolicy but does not exist", s.arn)
				fix = fnd.Fix{Queue: name, Terraform: "aws_sns_topic_subscription.redrive_policy",
					Text: fmt.Sprintf("create %s with a queue policy allowing sns.amazonaws.com sqs:SendMessage from %s, or point the RedrivePolicy at an existing DLQ", name, s.topic)}
			case err != nil:
				notes = append(notes, fmt.Sprintf("%s (DLQ of SNS subscription %s): queue policy not checked: %v", name, s.arn, err))
				continue
			default:
				switch allowsSNS(q.Attrs["Policy"], s.dlq, s.topic) {
				case policyAllows:
					continue
				case policyUnknown:
					notes = append(notes, fmt.Sprintf("%s (DLQ of SNS subscription %s): its queue policy's conditions are beyond what audit evaluates; make sure it lets sns.amazonaws.com sqs:SendMessage from %s", name, s.arn, s.topic))
					continue
				}
				problem = fmt.Sprintf("the DLQ of SNS subscription %s, but its queue policy does not let sns.amazonaws.com sqs:SendMessage from topic %s", s.arn, s.topic)
			}
		}
		out = append(out, fnd.Finding{Severity: fnd.SevError, Check: CheckSNSDLQUnwritable, Queue: name, Related: s.arn,
			Problem: problem,
			Why:     "when delivery to the subscriber fails, SNS cannot move the message into this DLQ and the message is lost (https://docs.aws.amazon.com/sns/latest/dg/sns-configure-dead-letter-queue.html)",
			Fix:     fix})
	}
	return out, notes, nil
}

// SNSDLQPolicy is a queue policy letting topic's SNS write to queue (the
// Fix of sns-dlq-unwritable).
func SNSDLQPolicy(queue, topic string) string {
	b, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Effect": "Allow", "Principal": map[string]string{"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage", "Resource": queue,
		"Condition": map[string]any{"ArnEquals": map[string]string{"aws:SourceArn": topic}}}}})
	return string(b)
}

type policyVerdict int

const (
	policyDenies policyVerdict = iota
	policyAllows
	policyUnknown
)

type policyStatement struct {
	Effect    string
	Principal json.RawMessage
	Action    json.RawMessage
	Resource  json.RawMessage
	Condition map[string]map[string]json.RawMessage
}

// stringsOf reads an IAM "string or list of strings" value.
func stringsOf(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

// globMatch matches IAM wildcards (* and ?), case-sensitively.
func globMatch(pattern, s string) bool {
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00"))
	return err == nil && ok
}

func anyMatch(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			p, s = strings.ToLower(p), strings.ToLower(s)
		}
		if globMatch(p, s) {
			return true
		}
	}
	return false
}

// allowsSNS evaluates a queue policy for sns.amazonaws.com calling
// sqs:SendMessage on queue from topic: the Principal, Action, Resource and
// the aws:SourceArn / aws:SourceAccount conditions are evaluated; a
// statement with any other condition makes the answer unknown (unless a
// plain statement decides it).
func allowsSNS(policy, queue, topic string) policyVerdict {
	if strings.TrimSpace(policy) == "" {
		return policyDenies
	}
	var doc struct {
		Statement json.RawMessage
	}
	if json.Unmarshal([]byte(policy), &doc) != nil {
		return policyUnknown
	}
	var stmts []policyStatement
	if json.Unmarshal(doc.Statement, &stmts) != nil {
		var one policyStatement
		if json.Unmarshal(doc.Statement, &one) != nil {
			return policyUnknown
		}
		stmts = []policyStatement{one}
	}
	allowed, unknown := false, false
	for _, s := range stmts {
		if !principalIsSNS(s.Principal) || !anyMatch(stringsOf(s.Action), "sqs:SendMessage", true) {
			continue
		}
		if s.Resource != nil && !anyMatch(stringsOf(s.Resource), queue, false) {
			continue
		}
		v := conditionsMatch(s.Condition, topic)
		switch {
		case strings.EqualFold(s.Effect, "Deny") && v == policyAllows:
			return policyDenies
		case strings.EqualFold(s.Effect, "Allow") && v == policyAllows:
			allowed = true
		case v == policyUnknown:
			unknown = true
		}
	}
	switch {
	case allowed && !unknown:
		return policyAllows
	case unknown:
		return policyUnknown
	}
	return policyDenies
}

func principalIsSNS(raw json.RawMessage) bool {
	var star string
	if json.Unmarshal(raw, &star) == nil {
		return star == "*"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k, v := range m {
		for _, p := range stringsOf(v) {
			if (k == "Service" && p == "sns.amazonaws.com") || (k == "AWS" && p == "*") {
				return true
			}
		}
	}
	return false
}

// conditionsMatch says whether a statement's conditions hold for a
// delivery from topic (policyUnknown for keys it does not evaluate).
func conditionsMatch(cond map[string]map[string]json.RawMessage, topic string) policyVerdict {
	for op, kv := range cond {
		base := strings.TrimSuffix(op, "IfExists")
		for key, raw := range kv {
			vals := stringsOf(raw)
			var subject string
			switch strings.ToLower(key) {
			case "aws:sourcearn":
				subject = topic
			case "aws:sourceaccount":
				subject = arnPart(topic, 4)
			default:
				return policyUnknown
			}
			switch base {
			case "ArnEquals", "ArnLike", "StringLike":
				if !anyMatch(vals, subject, false) {
					return policyDenies
				}
			case "StringEquals":
				match := false
				for _, v := range vals {
					match = match || v == subject
				}
				if !match {
					return policyDenies
				}
			default:
				return policyUnknown
			}
		}
	}
	return policyAllows
}

// eventBridgeFindings reports rule targets without a DeadLetterConfig:
// every target when the whole region is audited, otherwise the targets
// that are an audited queue or a function whose DLQ is audited.
func (a *Auditor) eventBridgeFindings(ctx context.Context, sc auditScope, functions map[string]bool) ([]fnd.Finding, error) {
	buses := []string{"default"}
	var next *string
	for {
		page, err := a.Clients.Events.ListEventBuses(ctx, &eventbridge.ListEventBusesInput{NextToken: next})
		if err != nil {
			return nil, fmt.Errorf("events:ListEventBuses: %w", err)
		}
		for _, b := range page.EventBuses {
			if n := aws.ToString(b.Name); n != "default" {
				buses = append(buses, n)
			}
		}
		if next = page.NextToken; next == nil {
			break
		}
	}
	r := &Resolver{c: a.Clients}
	var out []fnd.Finding
	for _, bus := range buses {
		var next *string
		for {
			page, err := a.Clients.Events.ListRules(ctx, &eventbridge.ListRulesInput{EventBusName: aws.String(bus), NextToken: next})
			if err != nil && isNotFound(err) {
				break // the bus was deleted since it was listed
			}
			if err != nil {
				return out, fmt.Errorf("events:ListRules on bus %s: %w", bus, err)
			}
			for _, rule := range page.Rules {
				targets, err := r.listTargets(ctx, &eventbridge.ListTargetsByRuleInput{Rule: rule.Name, EventBusName: aws.String(bus)})
				if err != nil {
					if isNotFound(err) {
						continue
					}
					return out, fmt.Errorf("events:ListTargetsByRule on %s: %w", aws.ToString(rule.Arn), err)
				}
				for _, t := range targets {
					if t.DeadLetterConfig != nil && aws.ToString(t.DeadLetterConfig.Arn) != "" {
						continue
					}
					tarn, id, rn := aws.ToString(t.Arn), aws.ToString(t.Id), aws.ToString(rule.Name)
					if !sc.all && !sc.has(tarn) && !functions[arn7(tarn)] && !functions[tarn] {
						continue
					}
					busFlag := ""
					if bus != "default" {
						busFlag = " --event-bus-name " + bus
					}
					out = append(out, fnd.Finding{Severity: fnd.SevWarn, Check: CheckEventBridgeNoDLQ, Queue: lastPart(tarn), Related: aws.ToString(rule.Arn),
						Problem: fmt.Sprintf("target %s (%s) of EventBridge rule %s on bus %s has no DeadLetterConfig", id, tarn, rn, bus),
						Why:     "an event EventBridge cannot deliver to this target (throttled, deleted, not permitted) is retried per the target's RetryPolicy (up to 24 h, 185 attempts) and then dropped: nothing keeps it to redrive",
						Fix: fnd.Fix{Queue: rn,
							Command:   fmt.Sprintf("aws events put-targets --rule %s%s --targets 'Id=%s,Arn=%s,DeadLetterConfig={Arn=QUEUE_ARN}' (repeat the target's other settings: put-targets replaces it)", rn, busFlag, id, tarn),
							Terraform: "aws_cloudwatch_event_target.dead_letter_config { arn = QUEUE_ARN }",
							Text:      fmt.Sprintf("give target %s of rule %s an SQS DLQ whose queue policy lets events.amazonaws.com sqs:SendMessage from the rule", id, rn)}})
				}
			}
			if next = page.NextToken; next == nil {
				break
			}
		}
	}
	return out, nil
}
