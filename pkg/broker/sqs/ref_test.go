package sqs

import (
	"context"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

func TestURLRegion(t *testing.T) {
	for host, want := range map[string]string{
		"sqs.eu-west-1.amazonaws.com":                                      "eu-west-1",
		"SQS.EU-WEST-1.AMAZONAWS.COM":                                      "eu-west-1",
		"sqs.cn-north-1.amazonaws.com.cn":                                  "cn-north-1",
		"sqs-fips.us-gov-west-1.amazonaws.com":                             "us-gov-west-1",
		"sqs-fips.us-east-2.amazonaws.com":                                 "us-east-2",
		"sqs.ap-southeast-2.api.aws":                                       "ap-southeast-2",
		"eu-central-1.queue.amazonaws.com":                                 "eu-central-1",
		"queue.amazonaws.com":                                              "us-east-1",
		"vpce-0a1b2c3d4e5f6a7b8-abcdefgh.sqs.us-west-2.vpce.amazonaws.com": "us-west-2",
		"vpce-0a1b2c3d-abc-us-west-2a.sqs.us-west-2.vpce.amazonaws.com":    "us-west-2",
		"sqs.eu-west-1.amazonaws.com.":                                     "eu-west-1",
		"127.0.0.1":                                                        "",
		"localhost":                                                        "",
		"sqs.eu-west-1.amazonaws.com.evil.example":                         "",
		"sqs.amazonaws.com":                                                "",
		"sqs.eu-west-1.example.com":                                        "",
	} {
		if got := URLRegion(host); got != want {
			t.Errorf("URLRegion(%q) = %q, want %q", host, got, want)
		}
	}
}

// A queue URL in another region than the client's is refused like an ARN
// in another region: one sentence naming both regions and the fix, exit 2,
// before any call to SQS (the nil API would panic).
func TestResolveRefusesAnotherRegion(t *testing.T) {
	c := &Client{Region: "us-east-1"}
	for _, ref := range []string{
		"arn:aws:sqs:eu-west-1:123456789012:orders-dlq",
		"https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq",
		"https://eu-west-1.queue.amazonaws.com/123456789012/orders-dlq",
		"https://sqs-fips.eu-west-1.amazonaws.com/123456789012/orders-dlq",
		"https://vpce-0a1b2c3d4e5f6a7b8-abcdefgh.sqs.eu-west-1.vpce.amazonaws.com/123456789012/orders-dlq",
	} {
		_, err := c.Resolve(context.Background(), ref)
		want := "queue " + ref + " is in region eu-west-1 but dlqctl is using us-east-1; pass --region eu-west-1"
		if errs.Code(err) != errs.ExitUsage || err.Error() != want {
			t.Errorf("Resolve(%s) = %v (exit %d), want %q", ref, err, errs.Code(err), want)
		}
	}
	// No region in the host (a local emulator): nothing to check.
	for _, ref := range []string{"http://127.0.0.1:4566/000000000000/orders-dlq", "https://queue.amazonaws.com/123456789012/orders-dlq"} {
		r, err := ParseRef(ref)
		if err != nil || r.Kind != RefURL || r.Name != "orders-dlq" || r.Account == "" {
			t.Errorf("ParseRef(%s) = %+v, %v", ref, r, err)
		}
	}
	if _, err := ParseRef("https://sqs.eu-west-1.amazonaws.com/"); errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "is not a queue URL") {
		t.Errorf("a URL without a queue: %v", err)
	}
}
