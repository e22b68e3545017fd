package localonly

import (
	"strings"
	"testing"
)

func TestCheckAcceptsOnlyLoopback(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:4566", "http://localhost:9324", "http://[::1]:8080", "https://127.0.0.2", "http://sqs.localhost:1"} {
		if err := Check("SQS endpoint", ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []struct{ url, says string }{
		{"", "means AWS itself"},
		{"https://sqs.us-east-1.amazonaws.com", "is not local"},
		{"https://vpce-0a1b-sqs.sqs.eu-west-1.vpce.amazonaws.com", "is not local"},
		{"http://10.0.0.7:4566", "is not local"},
		{"http://localstack.internal:4566", "is not local"},
		{"http://localhost.evil.example:4566", "is not local"},
		{"127.0.0.1:4566", "not an http(s) URL"},
	} {
		err := Check("SQS endpoint", bad.url)
		if err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%q: got %v, want an error saying %q", bad.url, err, bad.says)
		}
	}
}

func TestServiceEndpointFollowsTheSDKOrder(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	if got := ServiceEndpoint("SQS"); got != "http://127.0.0.1:1" {
		t.Fatalf("got %q", got)
	}
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:2")
	if got := ServiceEndpoint("SQS"); got != "http://127.0.0.1:2" {
		t.Fatalf("got %q", got)
	}
}
