package origins

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// A canary on a Lambda async DLQ whose function still fails: the copy is
// accepted (202), the function fails it again, Lambda dead-letters it back
// into the same DLQ, and the canary says FAIL (exit 3) within the window
// computed from the function's configuration (1 attempt × timeout 1s,
// + 30s), stated on stderr. The messages it did not take stay.
func TestCanaryFailsWhenTheFunctionFailsAgain(t *testing.T) {
	s := newStack(t)
	dlqURL, dlqARN := s.queue(t, "canary-dlq", nil)
	fn, _ := s.function(t, "still-broken", dlqARN, 1, map[string]string{"LAMBDAFAKE_FAIL": "true"})
	if _, err := s.lambda.PutFunctionEventInvokeConfig(t.Context(), &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String(fn), MaximumRetryAttempts: aws.Int32(0)}); err != nil {
		t.Fatal(err)
	}
	evs := events("canary", 4)
	for i, e := range evs {
		s.send(t, dlqURL, e, lambdaAsyncAttrs(i))
	}
	r := s.run(t, "redrive", dlqURL, "--canary", "1", "--verify-poll", "500ms", "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 3 {
		t.Fatalf("canary exit %d, want 3 (FAIL):\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	sum := summary(t, r)
	c, _ := sum["canary"].(map[string]any)
	// returned counts DLQ messages: a dead-letter send the emulator's SDK
	// retried can put the copy back twice.
	returned, _ := c["returned"].(float64)
	if c == nil || c["pass"] != false || returned < 1 {
		t.Fatalf("canary verdict %v, want pass=false, returned ≥ 1; invocations %+v\n%s", c, s.fake.Invocations(), r.Stderr)
	}
	reason, _ := c["window_reason"].(string)
	if !strings.Contains(reason, "function "+fn+": 1 attempt(s) × timeout 1s") || c["window_seconds"] != float64(31) {
		t.Fatalf("window %v s (%q), want 31 s from the function's timeout and retries", c["window_seconds"], reason)
	}
	if !strings.Contains(r.Stderr, "canary: watching") {
		t.Errorf("stderr does not state the computed window:\n%s", r.Stderr)
	}
	if n := len(s.invokedWith(fn)); n != 1 {
		t.Fatalf("the canary invoked %d distinct events, want 1", n)
	}
	if errs := s.fake.DeliveryErrors(); len(errs) > 0 {
		t.Fatalf("lambdafake could not dead-letter: %v", errs)
	}
	// The returned copy plus the 3 the canary did not take; the emulator's
	// retried dead-letter send can add the second copy after the verdict
	// counted the first (at most two in all).
	if d := s.depth(t, dlqURL); d < 3+int(returned) || d > 5 {
		t.Fatalf("DLQ holds %d, want %d (or 5: the returned copy twice)", d, 3+int(returned))
	}
}
