package iampolicy

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Request is what IAM authorizes for one API call: an action on a
// resource ARN ("*" for account-wide actions such as sqs:ListQueues).
type Request struct {
	Action   string
	Resource string
}

func (r Request) String() string { return r.Action + " on " + r.Resource }

// s3Actions maps S3 REST operations to the IAM action that authorizes
// them (HeadBucket and ListObjects(V2) are s3:ListBucket, HeadObject is
// s3:GetObject, the multipart calls are s3:PutObject).
var s3Actions = map[string]string{
	"HeadBucket": "s3:ListBucket", "ListObjectsV2": "s3:ListBucket", "ListObjects": "s3:ListBucket",
	"HeadObject": "s3:GetObject", "GetObject": "s3:GetObject",
	"PutObject": "s3:PutObject", "CreateMultipartUpload": "s3:PutObject", "UploadPart": "s3:PutObject", "CompleteMultipartUpload": "s3:PutObject",
	"AbortMultipartUpload": "s3:AbortMultipartUpload", "GetBucketLocation": "s3:GetBucketLocation",
	"DeleteObject": "s3:DeleteObject", "DeleteObjects": "s3:DeleteObject", "CopyObject": "s3:PutObject",
	"CreateBucket": "s3:CreateBucket", "DeleteBucket": "s3:DeleteBucket", "ListBuckets": "s3:ListAllMyBuckets",
}

var sqsARN = regexp.MustCompile(`arn:aws:sqs:[a-z0-9-]+:[0-9]+:[A-Za-z0-9_.-]+`)

// FromCall maps one recorded call (the operation and the resource it
// named, as internal/faultproxy logs them) of service "sqs", "s3" or
// "logs" to the IAM request, in region and account.
func FromCall(service, op, resource, region, account string) (Request, error) {
	switch service {
	case "sqs":
		action := "sqs:" + strings.TrimSuffix(op, "Batch")
		switch {
		case op == "ListQueues":
			return Request{action, "*"}, nil
		case strings.HasPrefix(resource, "arn:"):
			return Request{action, resource}, nil
		case strings.Contains(resource, "://"):
			u, err := url.Parse(resource)
			if err != nil {
				return Request{}, err
			}
			parts := strings.Split(strings.Trim(u.Path, "/"), "/")
			if len(parts) != 2 {
				return Request{}, fmt.Errorf("queue URL %s has no /ACCOUNT/NAME path", resource)
			}
			return Request{action, fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, parts[0], parts[1])}, nil
		case op == "CancelMessageMoveTask":
			// The task handle names the source queue (base64 JSON on AWS).
			if b, err := base64.StdEncoding.DecodeString(resource); err == nil {
				if m := sqsARN.FindString(string(b)); m != "" {
					return Request{action, m}, nil
				}
			}
			if m := sqsARN.FindString(resource); m != "" {
				return Request{action, m}, nil
			}
			return Request{}, fmt.Errorf("cannot tell the queue of task handle %q", resource)
		case resource != "": // GetQueueUrl's QueueName
			return Request{action, fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, account, resource)}, nil
		}
		return Request{}, fmt.Errorf("sqs %s names no queue", op)
	case "s3":
		action, ok := s3Actions[op]
		if !ok {
			return Request{}, fmt.Errorf("unknown S3 operation %q", op)
		}
		bucket, key, _ := strings.Cut(resource, "/")
		if action == "s3:ListBucket" || key == "" {
			return Request{action, "arn:aws:s3:::" + bucket}, nil
		}
		return Request{action, "arn:aws:s3:::" + bucket + "/" + key}, nil
	case "logs":
		group := resource
		if strings.HasPrefix(group, "arn:") { // logGroupIdentifier may be an ARN
			return Request{"logs:" + op, strings.TrimSuffix(group, ":*") + ":*"}, nil
		}
		return Request{"logs:" + op, fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:*", region, account, group)}, nil
	}
	return Request{}, fmt.Errorf("unknown service %q", service)
}

// Section is a JSON policy block of a Markdown document and the heading
// above it.
type Section struct {
	Heading string
	JSON    string
}

// FromMarkdown returns every ```json block of a Markdown document with the
// nearest heading above it.
func FromMarkdown(md string) []Section {
	var out []Section
	heading, in := "", false
	var buf []string
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case !in && strings.HasPrefix(t, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(t, "#"))
		case !in && t == "```json":
			in, buf = true, nil
		case in && t == "```":
			in = false
			out = append(out, Section{Heading: heading, JSON: strings.Join(buf, "\n")})
		case in:
			buf = append(buf, line)
		}
	}
	return out
}

var placeholder = regexp.MustCompile(`\b(REGION|ACCOUNT|BUCKET|TEAM|KEY-ID)\b`)

// Instantiate replaces the placeholders of a documented policy (REGION,
// ACCOUNT, BUCKET, TEAM, KEY-ID) with values; a placeholder without a value
// is left as it is.
func Instantiate(doc string, values map[string]string) string {
	return placeholder.ReplaceAllStringFunc(doc, func(p string) string {
		if v, ok := values[p]; ok {
			return v
		}
		return p
	})
}
