package inspect

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestHelpShowsTheBuiltInDocs: someone with only the binary reads the IAM
// policies and the runbooks with `dlqctl help`, and a command's help still
// wins over a document of the same name.
func TestHelpShowsTheBuiltInDocs(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		stdout   []string
		unwanted []string
	}{
		{args: []string{"help", "iam"}, stdout: []string{"# IAM: what each dlqctl command calls", `"sqs:ReceiveMessage"`}},
		{args: []string{"help", "runbooks"}, stdout: []string{"# On-call runbooks", "(dlqctl help canary-redrive)"}, unwanted: []string{"](canary-redrive.md)"}},
		{args: []string{"help", "canary-redrive"}, stdout: []string{"# Canary redrive"}},
		{args: []string{"help", "topics"}, stdout: []string{"iam ", "big-incident ", "Runbooks"}},
		{args: []string{"help", "redrive"}, stdout: []string{"Usage:", "dlqctl redrive", "dlqctl help redrive.md"}},
		{args: []string{"help", "redrive.md"}, stdout: []string{"# Redrive: moving messages"}},
		{args: []string{"help", "redrive", "resume"}, stdout: []string{"redrive resume"}},
		{args: []string{"help"}, stdout: []string{"Available Commands:", "dlqctl help topics"}},
		{args: []string{"help", "no-such-topic"}, code: 2},
	}
	for _, c := range cases {
		r := clitest.Run(t, testenv.Env{}, "", c.args...)
		if r.Code != c.code {
			t.Fatalf("dlqctl %s: exit %d, want %d: %s", strings.Join(c.args, " "), r.Code, c.code, r.Stderr)
		}
		for _, w := range c.stdout {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("dlqctl %s: stdout lacks %q:\n%s", strings.Join(c.args, " "), w, clitest.Clip(r.Stdout))
			}
		}
		for _, w := range c.unwanted {
			if strings.Contains(r.Stdout, w) {
				t.Errorf("dlqctl %s: stdout has %q", strings.Join(c.args, " "), w)
			}
		}
		if c.code == 2 && !strings.Contains(r.Stderr, "dlqctl help topics") {
			t.Errorf("an unknown topic does not point to 'dlqctl help topics': %s", r.Stderr)
		}
	}
}
