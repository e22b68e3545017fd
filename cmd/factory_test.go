package cmd

import (
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Every broker the refusals know opens through the factory's registry,
// and the SQS opener still refuses a malformed queue URL before any call.
func TestEveryBrokerHasAnOpener(t *testing.T) {
	for _, c := range brokerCapabilities() {
		if _, ok := endpointOpeners[c.Broker]; !ok {
			t.Errorf("%s (%s) has no endpoint opener: Factory.Endpoint would call it an unknown broker", c.Broker, c.Label)
		}
	}
	if _, err := checkRef("https://sqs.us-east-1.amazonaws.com/"); err == nil || errs.Code(err) != errs.ExitUsage {
		t.Errorf("a queue URL without account and name: %v, want bad input (exit 2)", err)
	}
}
