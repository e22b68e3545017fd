package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/doctor"
	"github.com/dlqctl/dlqctl/pkg/output"
)

func TestShortResource(t *testing.T) {
	for in, want := range map[string]string{
		"arn:aws:sqs:us-east-1:123456789012:orders-dlq":                      "orders-dlq",
		"arn:aws:s3:::acme-archive":                                          "acme-archive",
		"arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/orders:*": "/aws/lambda/orders",
		"amqp://ops@rabbit:5672/%2f/orders.dlq":                              "orders.dlq",
		"kafka://k1:9092/orders.DLT":                                         "orders.DLT",
		"amqp://rabbit:5672/%2F/":                                            "vhost /",
		"amqps://rabbit:5671/prod/":                                          "vhost prod",
		"kafka://k1:9092,k2:9092":                                            "k1:9092,k2:9092",
	} {
		if got := shortResource(in); got != want {
			t.Errorf("shortResource(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWriteDoctorPiped: piped, a check is one tab-separated line with "-"
// for empty cells and no tab or newline inside a cell.
func TestWriteDoctorPiped(t *testing.T) {
	rep := &doctor.Report{Checks: []doctor.Check{
		{Name: "region", Status: doctor.OK, Detail: "eu-west-1 (from AWS_REGION)"},
		{Name: "sqs:ReceiveMessage", Status: doctor.Fail, Resource: "arn:aws:sqs:eu-west-1:1:orders-dlq", Detail: "denied\tby policy\nX", Fix: "grant it"},
	}}
	var out bytes.Buffer
	if err := WriteDoctor(output.Test(nil, &out, &bytes.Buffer{}, false), output.Table, rep); err != nil {
		t.Fatal(err)
	}
	want := "region\tok\t-\teu-west-1 (from AWS_REGION)\t-\n" +
		"sqs:ReceiveMessage\tfail\tarn:aws:sqs:eu-west-1:1:orders-dlq\tdenied by policy X\tgrant it\n"
	if out.String() != want {
		t.Fatalf("piped doctor:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	if err := WriteDoctor(output.Test(nil, &out, &bytes.Buffer{}, true), output.Table, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "To fix (fail, warn) or verify (not-checked):\n  fail sqs:ReceiveMessage orders-dlq: grant it") {
		t.Fatalf("terminal doctor has no fix line:\n%s", out.String())
	}
}
