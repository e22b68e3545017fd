package iampolicy

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true},
		{"*", "arn:aws:sqs:us-east-1:1:q", true},
		{"arn:aws:sqs:*:*:*-dlq*", "arn:aws:sqs:us-east-1:123:orders-dlq", true},
		{"arn:aws:sqs:*:*:*-dlq*", "arn:aws:sqs:us-east-1:123:orders-dlq.fifo", true},
		{"arn:aws:sqs:*:*:*-dlq*", "arn:aws:sqs:us-east-1:123:orders", false},
		{"arn:aws:s3:::bucket/*", "arn:aws:s3:::bucket/a/b/c.gz", true},
		{"arn:aws:s3:::bucket/*", "arn:aws:s3:::bucket", false},
		{"arn:aws:s3:::bucket", "arn:aws:s3:::bucket2", false},
		{"q?", "q1", true},
		{"q?", "q", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"arn:aws:logs:r:a:log-group:/aws/lambda/*:*", "arn:aws:logs:r:a:log-group:/ecs/orders:*", false},
		{"arn:aws:logs:r:a:log-group:/ecs/*:*", "arn:aws:logs:r:a:log-group:/ecs/orders:*", true},
	} {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

const policy = `{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "Read", "Effect": "Allow", "Action": ["sqs:Get*", "sqs:ReceiveMessage"], "Resource": "arn:aws:sqs:us-east-1:123:*"},
    {"Sid": "SendToSources", "Effect": "Allow", "Action": "SQS:SendMessage", "Resource": ["arn:aws:sqs:us-east-1:123:orders*", "arn:aws:sqs:us-east-1:123:*-recovery"]},
    {"Sid": "NoProdDeletes", "Effect": "Deny", "Action": "sqs:DeleteMessage", "Resource": "arn:aws:sqs:*:*:prod-*"},
    {"Sid": "DeleteElsewhere", "Effect": "Allow", "Action": "sqs:DeleteMessage", "Resource": "*"},
    {"Sid": "AllButS3", "Effect": "Allow", "NotAction": ["s3:*", "sqs:*"], "NotResource": "arn:aws:logs:*:*:log-group:/secret/*"}
  ]
}`

func TestEvaluate(t *testing.T) {
	p, err := Parse([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		action, resource string
		allowed          bool
		by               string
	}{
		{"sqs:GetQueueAttributes", "arn:aws:sqs:us-east-1:123:orders-dlq", true, "Read"},
		{"sqs:getqueueurl", "arn:aws:sqs:us-east-1:123:orders-dlq", true, "Read"},     // actions ignore case
		{"sqs:GetQueueAttributes", "arn:aws:sqs:eu-west-1:123:orders-dlq", false, ""}, // another region
		{"sqs:SendMessage", "arn:aws:sqs:us-east-1:123:orders", true, "SendToSources"},
		{"sqs:SendMessage", "arn:aws:sqs:us-east-1:123:payments", false, ""},
		{"sqs:SendMessage", "arn:aws:sqs:us-east-1:123:ORDERS", false, ""}, // resources do not
		{"sqs:DeleteMessage", "arn:aws:sqs:us-east-1:123:prod-orders-dlq", false, "NoProdDeletes"},
		{"sqs:DeleteMessage", "arn:aws:sqs:us-east-1:123:dev-orders-dlq", true, "DeleteElsewhere"},
		{"logs:FilterLogEvents", "arn:aws:logs:us-east-1:123:log-group:/ecs/x:*", true, "AllButS3"},
		{"logs:FilterLogEvents", "arn:aws:logs:us-east-1:123:log-group:/secret/x:*", false, ""},
		{"s3:GetObject", "arn:aws:s3:::b/k", false, ""},
	} {
		d := p.Evaluate(c.action, c.resource)
		if d.Allowed != c.allowed || d.By != c.by {
			t.Errorf("%s on %s: %s, want allowed=%v by %q", c.action, c.resource, d, c.allowed, c.by)
		}
	}
}

func TestParseRejectsWhatItCannotJudge(t *testing.T) {
	for _, c := range []struct{ doc, says string }{
		{`{"Version":"2008-10-17","Statement":[{"Effect":"Allow","Action":"sqs:*","Resource":"*"}]}`, "Version"},
		{`{"Version":"2012-10-17","Statement":[]}`, "no statements"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Maybe","Action":"sqs:*","Resource":"*"}]}`, "Effect"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Resource":"*"}]}`, "Action and NotAction"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:*"}]}`, "Resource and NotResource"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"true"}}}]}`, "Condition"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ReceiveMessage","Resource":"*"}]}`, "service:Action"},
		{`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Actions":"sqs:*","Resource":"*"}]}`, "unknown field"},
	} {
		if _, err := Parse([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.doc, err, c.says)
		}
	}
}

func TestFromCall(t *testing.T) {
	for _, c := range []struct {
		service, op, res string
		want             Request
	}{
		{"sqs", "ListQueues", "", Request{"sqs:ListQueues", "*"}},
		{"sqs", "GetQueueUrl", "orders-dlq", Request{"sqs:GetQueueUrl", "arn:aws:sqs:us-east-1:123:orders-dlq"}},
		{"sqs", "DeleteMessageBatch", "http://127.0.0.1:4566/000000000000/orders-dlq", Request{"sqs:DeleteMessage", "arn:aws:sqs:us-east-1:000000000000:orders-dlq"}},
		{"sqs", "ListMessageMoveTasks", "arn:aws:sqs:us-east-1:123:orders-dlq", Request{"sqs:ListMessageMoveTasks", "arn:aws:sqs:us-east-1:123:orders-dlq"}},
		{"s3", "ListObjectsV2", "bucket", Request{"s3:ListBucket", "arn:aws:s3:::bucket"}},
		{"s3", "HeadObject", "bucket/a/b.gz", Request{"s3:GetObject", "arn:aws:s3:::bucket/a/b.gz"}},
		{"s3", "UploadPart", "bucket/a/b.gz", Request{"s3:PutObject", "arn:aws:s3:::bucket/a/b.gz"}},
		{"logs", "FilterLogEvents", "/ecs/orders", Request{"logs:FilterLogEvents", "arn:aws:logs:us-east-1:123:log-group:/ecs/orders:*"}},
	} {
		got, err := FromCall(c.service, c.op, c.res, "us-east-1", "123")
		if err != nil || got != c.want {
			t.Errorf("FromCall(%s %s %s) = %v, %v; want %v", c.service, c.op, c.res, got, err, c.want)
		}
	}
	if _, err := FromCall("sqs", "SendMessage", "", "r", "a"); err == nil {
		t.Error("a SendMessage naming no queue was mapped")
	}
}

func TestFromMarkdownAndInstantiate(t *testing.T) {
	md := "# IAM\n\n### Read-only (x)\n\ntext\n\n```json\n{\"Resource\": \"arn:aws:sqs:REGION:ACCOUNT:TEAM-*\"}\n```\n\n### Operator\n```json\n{}\n```\n```sh\nnot json\n```\n"
	secs := FromMarkdown(md)
	if len(secs) != 2 || secs[0].Heading != "Read-only (x)" || secs[1].Heading != "Operator" {
		t.Fatalf("sections: %+v", secs)
	}
	got := Instantiate(secs[0].JSON, map[string]string{"REGION": "us-east-1", "ACCOUNT": "123", "TEAM": "rb-x"})
	if got != `{"Resource": "arn:aws:sqs:us-east-1:123:rb-x-*"}` {
		t.Fatalf("Instantiate = %s", got)
	}
}
