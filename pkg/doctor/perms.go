package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

// SQSAPI is the part of SQS doctor calls: reads only.
type SQSAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ListDeadLetterSourceQueues(context.Context, *sqs.ListDeadLetterSourceQueuesInput, ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	ListQueues(context.Context, *sqs.ListQueuesInput, ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
}

// S3API is the part of S3 doctor calls: reads only.
type S3API interface {
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// LogsAPI is the CloudWatch Logs call of --logs.
type LogsAPI interface {
	FilterLogEvents(context.Context, *cloudwatchlogs.FilterLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
}

// STSAPI tells who the credentials are.
type STSAPI interface {
	GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// Identity asks STS who the credentials belong to.
func Identity(ctx context.Context, api STSAPI, r *Report) Check {
	c := Check{Name: "identity", Action: "sts:GetCallerIdentity"}
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		c.Status = Fail
		c.Detail = "STS GetCallerIdentity failed: " + short(err)
		c.Fix = "the credentials are not accepted by AWS: refresh them (aws sso login --profile P, assume the role again) or check AWS_PROFILE / --profile"
		return c
	}
	r.Account, r.Principal = aws.ToString(out.Account), aws.ToString(out.Arn)
	c.Status = OK
	c.Detail = fmt.Sprintf("account %s, %s", r.Account, r.Principal)
	return c
}

// QueueRef is a parsed queue reference (name, URL or ARN), from the
// caller's parser (cmd uses the SQS package's, which knows every AWS URL
// form).
type QueueRef struct {
	Name    string
	URL     string // set when the reference is a URL
	Account string // when the reference says it
	Region  string // when the reference says it
}

// Targets are the resources to check permissions on.
type Targets struct {
	Queues    []string // DLQ references: name, URL or ARN
	To        string   // destination for redrive/restore ("" = the DLQs' sources)
	Bucket    string   // archive bucket ("" = no S3 check)
	Prefix    string   // key prefix in it
	LogGroups []string // --logs groups
}

// Prober checks permissions with calls that change nothing.
type Prober struct {
	SQS  SQSAPI
	S3   S3API   // nil: no bucket to check
	Logs LogsAPI // nil: no log group to check
	// IAM, when set, is asked (SimulatePrincipalPolicy) about the actions
	// no harmless call proves; its own refusal leaves them not checked.
	IAM    IAMAPI
	Region string
	Roles  []string
	// Parse parses a queue reference (required when Targets has queues).
	Parse func(ref string) (QueueRef, error)
	// Principal is the caller's ARN (for the simulate-principal-policy
	// command in fixes); "" when unknown.
	Principal string

	account string // from the first queue ARN, when STS was not asked
}

// denied reports whether err is AWS refusing the call for lack of
// permission.
func denied(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDenied", "AccessDeniedException", "AuthorizationError", "Forbidden", "UnauthorizedOperation", "KMS.AccessDeniedException":
			return true
		}
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusForbidden
}

func notFound(err error) bool {
	var nf *types.QueueDoesNotExist
	if errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue",
			"NoSuchBucket", "NotFound", "NoSuchKey", "ResourceNotFoundException":
			return true
		}
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

func short(err error) string {
	var ae smithy.APIError
	s := err.Error()
	if errors.As(err, &ae) {
		s = ae.ErrorCode()
		if m := ae.ErrorMessage(); m != "" {
			s += ": " + m
		}
	}
	// doctor never receives, so no receipt handle can be in these texts.
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// statement is the policy statement that grants actions on resources.
func statement(actions []string, resources ...string) string {
	q := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = `"` + s + `"`
		}
		if len(out) == 1 {
			return out[0]
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	return fmt.Sprintf(`{"Effect": "Allow", "Action": %s, "Resource": %s}`, q(actions), q(resources))
}

// verifyHint is how to check a permission doctor does not prove: the
// statement, and the IAM policy simulator command for the caller.
func (p *Prober) verifyHint(actions []string, resource string) string {
	h := "make sure the role's policy has " + statement(actions, resource)
	if role := roleARN(p.Principal); role != "" {
		h += fmt.Sprintf("; or ask IAM: aws iam simulate-principal-policy --policy-source-arn %s --action-names %s --resource-arns %s", role, strings.Join(actions, " "), resource)
	}
	return h + " ('dlqctl help iam' has the policy per role)"
}

// roleARN turns a caller ARN into the principal the IAM simulator takes:
// an assumed-role session becomes its role (path unknown: without one).
func roleARN(principal string) string {
	if principal == "" {
		return ""
	}
	parts := strings.SplitN(principal, ":", 6)
	if len(parts) != 6 {
		return ""
	}
	if parts[2] == "sts" && strings.HasPrefix(parts[5], "assumed-role/") {
		segs := strings.Split(parts[5], "/")
		if len(segs) >= 2 {
			return fmt.Sprintf("arn:%s:iam::%s:role/%s", parts[1], parts[4], segs[1])
		}
	}
	if parts[2] == "iam" {
		return principal
	}
	return ""
}

func (p *Prober) rolesNeeding(action, on string) []string {
	for _, perm := range needed(p.Roles) {
		if perm.Action == action && perm.On == on {
			return perm.Roles
		}
	}
	return nil
}

// result turns one probe's error into a check.
func (p *Prober) result(action, on, resource, call string, err error, fix string) Check {
	c := Check{Name: action, Action: action, Resource: resource, Roles: p.rolesNeeding(action, on)}
	switch {
	case err == nil:
		c.Status = OK
		c.Detail = "allowed (" + call + " answered)"
	case denied(err):
		c.Status = Fail
		c.Detail = "DENIED: " + call + ": " + short(err)
		c.Fix = "grant " + action + " on " + resource + ": " + statement([]string{action}, resource) + " ('dlqctl help iam')"
	default:
		c.Status = Warn
		c.Detail = call + " failed, so the permission is unproven: " + short(err)
		c.Fix = fix
	}
	return c
}

// Run adds the permission checks for t to r.
func (p *Prober) Run(ctx context.Context, t Targets, r *Report) {
	if p.Parse == nil {
		p.Parse = plainRef
	}
	perms := needed(p.Roles)
	has := func(action, on string) bool {
		for _, x := range perms {
			if x.Action == action && x.On == on {
				return true
			}
		}
		return false
	}
	callCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 20*time.Second) }

	if p.SQS == nil {
		// No SQS queue to check (a RabbitMQ or Kafka reference with
		// --archive or --logs): only the bucket and the log groups.
		t.Queues, t.To = nil, ""
	}
	if p.SQS != nil && has("sqs:ListQueues", OnAccount) {
		cctx, cancel := callCtx()
		_, err := p.SQS.ListQueues(cctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)})
		cancel()
		r.Add(p.result("sqs:ListQueues", OnAccount, "*", "ListQueues", err, ""))
	}
	dests := map[string]bool{}
	for _, ref := range t.Queues {
		for _, d := range p.queue(ctx, ref, has, r) {
			dests[d] = true
		}
	}
	if t.To != "" {
		dests = map[string]bool{t.To: true}
	}
	if len(t.Queues) > 0 && (has("sqs:SendMessage", OnDest) || has("sqs:GetQueueAttributes", OnDest)) {
		if len(dests) == 0 {
			r.Add(Check{Name: "destinations", Status: Warn, Roles: p.rolesNeeding("sqs:SendMessage", OnDest),
				Detail: "no destination to check: no source queue names these DLQs in its RedrivePolicy and no --to was given",
				Fix:    "pass --to QUEUE, the queue a redrive or restore will send to"})
		}
		for _, d := range sortedKeys(dests) {
			p.dest(ctx, d, has, r)
		}
	}
	if t.Bucket != "" && p.S3 != nil {
		p.bucket(ctx, t.Bucket, t.Prefix, has, r)
	}
	if p.Logs != nil {
		for _, g := range t.LogGroups {
			cctx, cancel := callCtx()
			_, err := p.Logs.FilterLogEvents(cctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String(g), Limit: aws.Int32(1),
				StartTime: aws.Int64(time.Now().Add(-time.Minute).UnixMilli())})
			cancel()
			acct := accountOf(p.Principal)
			if acct == "ACCOUNT" && p.account != "" {
				acct = p.account
			}
			res := "arn:aws:logs:" + p.Region + ":" + acct + ":log-group:" + g + ":*"
			c := p.result("logs:FilterLogEvents", OnLogs, res, "FilterLogEvents on "+g, err, "")
			if err != nil && notFound(err) {
				c.Status, c.Detail, c.Fix = Fail, "log group "+g+" does not exist in "+p.Region, "check the --logs group name and --region"
			}
			r.Add(c)
		}
	}
}

func accountOf(principal string) string {
	parts := strings.SplitN(principal, ":", 6)
	if len(parts) == 6 && parts[4] != "" {
		return parts[4]
	}
	return "ACCOUNT"
}

// queue checks one DLQ and returns its source queues' URLs.
func (p *Prober) queue(ctx context.Context, ref string, has func(string, string) bool, r *Report) []string {
	pr, err := p.Parse(ref)
	if err != nil {
		r.Add(Check{Name: "queue " + ref, Status: Fail, Detail: err.Error()})
		return nil
	}
	if pr.Region != "" && p.Region != "" && pr.Region != p.Region {
		r.Add(Check{Name: "queue " + ref, Status: Fail, Detail: fmt.Sprintf("the queue is in %s but this shell uses %s", pr.Region, p.Region), Fix: "pass --region " + pr.Region + " (or export AWS_REGION=" + pr.Region + ")"})
		return nil
	}
	arnGuess := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", p.Region, firstNonEmpty(pr.Account, accountOf(p.Principal)), pr.Name)
	url := pr.URL
	urlChecked := false
	if pr.URL == "" {
		in := &sqs.GetQueueUrlInput{QueueName: aws.String(pr.Name)}
		if pr.Account != "" {
			in.QueueOwnerAWSAccountId = aws.String(pr.Account)
		}
		out, err := p.SQS.GetQueueUrl(ctx, in)
		if err != nil && notFound(err) {
			r.Add(Check{Name: "queue " + pr.Name, Status: Fail, Detail: fmt.Sprintf("%s does not exist in %s (or this principal may not see it)", pr.Name, p.Region),
				Fix: "check the name, --region and the SQS endpoint; `dlqctl queues` lists the DLQs"})
			return nil
		}
		if err != nil {
			r.Add(p.result("sqs:GetQueueUrl", OnDLQ, arnGuess, "GetQueueUrl", err, ""))
			return nil
		}
		url = aws.ToString(out.QueueUrl)
		urlChecked = has("sqs:GetQueueUrl", OnDLQ)
	}
	out, err := p.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil && notFound(err) {
		r.Add(Check{Name: "queue " + ref, Status: Fail, Detail: "no such queue: " + url, Fix: "check the URL and --region"})
		return nil
	}
	arn := arnGuess
	if err == nil && out.Attributes["QueueArn"] != "" {
		arn = out.Attributes["QueueArn"]
	}
	if urlChecked {
		r.Add(p.result("sqs:GetQueueUrl", OnDLQ, arn, "GetQueueUrl", nil, ""))
	}
	r.Add(p.result("sqs:GetQueueAttributes", OnDLQ, arn, "GetQueueAttributes", err, ""))
	if p.account == "" {
		p.account = accountOf(arn)
	}

	var sources []string
	if has("sqs:ListDeadLetterSourceQueues", OnDLQ) || has("sqs:SendMessage", OnDest) {
		var lerr error
		pager := sqs.NewListDeadLetterSourceQueuesPaginator(p.SQS, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(url), MaxResults: aws.Int32(1000)})
		for pager.HasMorePages() && len(sources) < 10000 {
			page, err := pager.NextPage(ctx)
			if err != nil {
				lerr = err
				break
			}
			sources = append(sources, page.QueueUrls...)
		}
		if has("sqs:ListDeadLetterSourceQueues", OnDLQ) || lerr != nil {
			c := p.result("sqs:ListDeadLetterSourceQueues", OnDLQ, arn, "ListDeadLetterSourceQueues", lerr, "")
			if lerr == nil && len(sources) == 0 {
				c.Status = Warn
				c.Detail = "allowed, but no queue names " + pr.Name + " as its dead-letter queue: is it a DLQ?"
				c.Fix = "check the queue name; a redrive to the sources needs --to QUEUE here"
			} else if lerr == nil {
				c.Detail = fmt.Sprintf("allowed; %d source queue(s)", len(sources))
			}
			r.Add(c)
		}
	}
	if has("sqs:ListMessageMoveTasks", OnDLQ) {
		_, err := p.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(1)})
		c := p.result("sqs:ListMessageMoveTasks", OnDLQ, arn, "ListMessageMoveTasks", err, "")
		if err != nil && !denied(err) {
			// AWS answers a queue that is no DLQ with an error after
			// authorizing the call.
			c.Status, c.Detail, c.Fix = OK, "allowed (ListMessageMoveTasks answered: "+short(err)+")", ""
		}
		r.Add(c)
	}
	var unproven []string
	for _, a := range []string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:StartMessageMoveTask", "sqs:CancelMessageMoveTask"} {
		if has(a, OnDLQ) {
			unproven = append(unproven, a)
		}
	}
	if len(unproven) > 0 {
		p.unproven(ctx, r, pr.Name, unproven, arn, OnDLQ, "proving them would change the queue (every receive increments ApproximateReceiveCount and can push a message on to the next DLQ)")
	}
	return sources
}

func (p *Prober) rolesFor(actions []string, on string) []string {
	seen := map[string]bool{}
	for _, a := range actions {
		for _, r := range p.rolesNeeding(a, on) {
			seen[r] = true
		}
	}
	var out []string
	for _, r := range AllRoles {
		if seen[r] {
			out = append(out, r)
		}
	}
	return out
}

func (p *Prober) dest(ctx context.Context, ref string, has func(string, string) bool, r *Report) {
	pr, err := p.Parse(ref)
	if err != nil {
		r.Add(Check{Name: "destination " + ref, Status: Fail, Detail: err.Error()})
		return
	}
	url := pr.URL
	arn := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", p.Region, firstNonEmpty(pr.Account, accountOf(p.Principal)), pr.Name)
	if pr.URL == "" {
		out, err := p.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(pr.Name)})
		if err != nil {
			c := p.result("sqs:GetQueueUrl", OnDest, arn, "GetQueueUrl", err, "")
			if notFound(err) {
				c.Status, c.Detail, c.Fix = Fail, "destination "+pr.Name+" does not exist in "+p.Region, "check --to"
			}
			r.Add(c)
			return
		}
		url = aws.ToString(out.QueueUrl)
	}
	out, err := p.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err == nil && out.Attributes["QueueArn"] != "" {
		arn = out.Attributes["QueueArn"]
	}
	if has("sqs:GetQueueAttributes", OnDest) {
		r.Add(p.result("sqs:GetQueueAttributes", OnDest, arn, "GetQueueAttributes", err, ""))
	}
	if has("sqs:ListMessageMoveTasks", OnDest) {
		_, err := p.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(1)})
		c := p.result("sqs:ListMessageMoveTasks", OnDest, arn, "ListMessageMoveTasks", err, "")
		if err != nil && !denied(err) {
			c.Status, c.Detail, c.Fix = OK, "allowed (ListMessageMoveTasks answered: "+short(err)+")", ""
		}
		r.Add(c)
	}
	if has("sqs:SendMessage", OnDest) {
		p.unproven(ctx, r, pr.Name, []string{"sqs:SendMessage"}, arn, OnDest, "proving it would send a message to "+pr.Name)
	}
}

func (p *Prober) bucket(ctx context.Context, bucket, prefix string, has func(string, string) bool, r *Report) {
	bucketARN := "arn:aws:s3:::" + bucket
	objARN := bucketARN + "/" + prefix + "*"
	out, lerr := p.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(1)})
	c := p.result("s3:ListBucket", OnBucket, bucketARN, "ListObjectsV2 on "+bucket, lerr, "")
	if lerr != nil && notFound(lerr) {
		c.Status, c.Detail, c.Fix = Fail, "bucket "+bucket+" does not exist", "check the bucket name (and --s3-endpoint-url)"
	}
	r.Add(c)
	if has("s3:GetObject", OnObjects) && lerr != nil && !denied(lerr) {
		r.Add(Check{Name: "s3:GetObject", Status: NotChecked, Action: "s3:GetObject", Resource: objARN, Roles: p.rolesNeeding("s3:GetObject", OnObjects),
			Detail: "not checked: the bucket could not be listed", Fix: p.verifyHint([]string{"s3:GetObject"}, objARN)})
	} else if has("s3:GetObject", OnObjects) {
		key := prefix + "dlqctl-doctor-probe-does-not-exist"
		exists := false
		if lerr == nil && len(out.Contents) > 0 {
			key, exists = aws.ToString(out.Contents[0].Key), true
		}
		_, err := p.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		c := p.result("s3:GetObject", OnObjects, objARN, "HeadObject", err, "")
		switch {
		case err != nil && !exists && notFound(err):
			c.Status, c.Detail, c.Fix = OK, "allowed (HeadObject of a missing key answered 404, which S3 only says to a caller with s3:GetObject)", ""
		case err != nil && !exists && denied(err) && lerr == nil:
			c.Detail = "DENIED: HeadObject answered 403 although s3:ListBucket is allowed"
		case err != nil && !exists && denied(err):
			c.Status = NotChecked
			c.Detail = "not proven: without s3:ListBucket S3 answers 403 for a missing key whether or not s3:GetObject is allowed"
			c.Fix = p.verifyHint([]string{"s3:GetObject"}, objARN)
		}
		r.Add(c)
	}
	if has("s3:PutObject", OnObjects) {
		p.unproven(ctx, r, bucket, []string{"s3:PutObject"}, objARN, OnObjects, "proving it would write an object")
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// plainRef reads a reference without the SQS package's knowledge of AWS
// URL forms: a URL (its last path segment names the queue), an ARN
// (arn:PARTITION:sqs:REGION:ACCOUNT:NAME) or a name.
func plainRef(ref string) (QueueRef, error) {
	switch {
	case strings.Contains(ref, "://"):
		return QueueRef{Name: ref[strings.LastIndex(strings.TrimRight(ref, "/"), "/")+1:], URL: ref}, nil
	case strings.HasPrefix(ref, "arn:"):
		parts := strings.Split(ref, ":")
		if len(parts) != 6 || parts[2] != "sqs" || parts[5] == "" {
			return QueueRef{}, fmt.Errorf("%q is not an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)", ref)
		}
		return QueueRef{Name: parts[5], Account: parts[4], Region: parts[3]}, nil
	case ref == "":
		return QueueRef{}, fmt.Errorf("empty queue reference")
	}
	return QueueRef{Name: ref}, nil
}
