package scripts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalHelpersRefuseAWS: dlqctl-seed and dlqctl-worker create queues
// and send, receive and delete messages; with a shell pointed at AWS (no
// endpoint override, or an AWS/remote endpoint) they must refuse with exit
// 2 before any call, so `go install ./...` cannot put a production
// consumer on the PATH.
func TestLocalHelpersRefuseAWS(t *testing.T) {
	dir := t.TempDir()
	bins := map[string]string{}
	for _, name := range []string{"dlqctl-seed", "dlqctl-worker"} {
		bin := filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", bin, "./"+name).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
		bins[name] = bin
	}
	// An environment that looks like a real AWS shell: credentials, a
	// region, no local endpoints; the stack's env file is out of reach.
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DLQCTL_STACK_DIR=" + filepath.Join(dir, "nostack"),
		"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true"}
	cases := []struct {
		name string
		bin  string
		env  []string
		args []string
		says string
	}{
		{"worker, no endpoint (AWS)", "dlqctl-worker", nil, []string{"--queue", "orders"}, "means AWS itself"},
		{"worker, AWS endpoint", "dlqctl-worker", []string{"AWS_ENDPOINT_URL_SQS=https://sqs.us-east-1.amazonaws.com"}, []string{"--queue", "orders"}, "is not local"},
		{"worker, AWS_ENDPOINT_URL elsewhere", "dlqctl-worker", []string{"AWS_ENDPOINT_URL=http://10.1.2.3:4566"}, []string{"--queue", "orders"}, "is not local"},
		{"worker, local SQS but AWS logs", "dlqctl-worker", []string{"AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1"}, []string{"--queue", "orders", "--log-group", "/aws/lambda/orders"}, "CloudWatch Logs endpoint"},
		{"seed, AWS endpoint flag", "dlqctl-seed", nil, []string{"--endpoint-url", "https://sqs.eu-west-1.amazonaws.com"}, "is not local"},
		{"seed, AWS endpoint in the env", "dlqctl-seed", []string{"AWS_ENDPOINT_URL_SQS=https://sqs.us-east-1.amazonaws.com", "AWS_ENDPOINT_URL_S3=https://s3.us-east-1.amazonaws.com"}, nil, "is not local"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), bins[c.bin], c.args...)
			cmd.Env = append(append([]string{}, base...), c.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("%s %v: %v, want exit 2; stderr: %s", c.bin, c.args, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.says) {
				t.Fatalf("stderr does not say %q:\n%s", c.says, stderr.String())
			}
		})
	}
}

// TestStackUnenvUndoesEnv: `eval "$(scripts/stack.sh unenv)"` unsets
// every variable `env` exported, so the shell is back to its own AWS
// configuration.
func TestStackUnenvUndoesEnv(t *testing.T) {
	dir := t.TempDir()
	env := "export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1\nexport AWS_ACCESS_KEY_ID=dlqctl-local\nexport SOME_LOCAL_VAR=1\n# a comment\nunset AWS_PROFILE\n"
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	script := "eval \"$(DLQCTL_STACK_DIR=" + dir + " ./stack.sh env 2>/dev/null || cat " + filepath.Join(dir, "env") + ")\"\n" +
		"eval \"$(DLQCTL_STACK_DIR=" + dir + " ./stack.sh unenv)\"\n" +
		"echo \"${AWS_ENDPOINT_URL_SQS-unset} ${AWS_ACCESS_KEY_ID-unset} ${SOME_LOCAL_VAR-unset}\"\n"
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "unset unset unset" {
		t.Fatalf("after unenv: %q, want every variable unset", got)
	}
}
