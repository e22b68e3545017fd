package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
)

func TestEnvironmentCheckIsLoudAboutMismatchedWorlds(t *testing.T) {
	real := Credentials{Source: "SSOProvider", AccessKeyID: "ASIAZXCVBNMASDFGHJKL", Session: true}
	local := Credentials{Source: "EnvConfigCredentials", AccessKeyID: "dlqctl-local"}
	stack := []Endpoint{{Name: "AWS_ENDPOINT_URL_SQS", Value: "http://127.0.0.1:4566"}, {Name: "AWS_ENDPOINT_URL_S3", Value: "http://127.0.0.1:4567"}}

	c := EnvironmentCheck("http://127.0.0.1:4566", "http://127.0.0.1:4567", stack, real, true)
	if c.Status != Fail || !strings.Contains(c.Detail, "REAL-LOOKING CREDENTIALS") || !strings.Contains(c.Fix, "unset AWS_ENDPOINT_URL_SQS AWS_ENDPOINT_URL_S3") {
		t.Errorf("real credentials against a local stack: %+v", c)
	}
	c = EnvironmentCheck("", "", nil, local, true)
	if c.Status != Fail || !strings.Contains(c.Detail, "LOCAL-STACK CREDENTIALS") || !strings.Contains(c.Fix, "unset AWS_ACCESS_KEY_ID") {
		t.Errorf("placeholder credentials against AWS: %+v", c)
	}
	if c := EnvironmentCheck("http://127.0.0.1:4566", "http://127.0.0.1:4567", stack, local, true); c.Status != OK {
		t.Errorf("the local stack with its own credentials: %+v", c)
	}
	if c := EnvironmentCheck("", "", nil, real, true); c.Status != OK {
		t.Errorf("AWS with real credentials: %+v", c)
	}
	if c := EnvironmentCheck("https://sqs-fips.us-east-1.amazonaws.com", "", []Endpoint{{Name: "--sqs-endpoint-url", Value: "https://sqs-fips.us-east-1.amazonaws.com"}}, real, true); c.Status != OK {
		t.Errorf("a FIPS endpoint with real credentials: %+v", c)
	}
	c = EnvironmentCheck("http://127.0.0.1:4566", "", stack[:1], local, true)
	if c.Status != Warn || !strings.Contains(c.Detail, "different worlds") {
		t.Errorf("SQS local, S3 AWS: %+v", c)
	}
	// The AWS documentation's example key is a placeholder, not a real one.
	if (Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", Source: "EnvConfigCredentials"}).Look() != "local" {
		t.Error("AKIAIOSFODNN7EXAMPLE looks real")
	}
}

const mountinfo = `22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u
30 22 0:25 / /tmp rw,nosuid - tmpfs tmpfs rw
31 22 8:1 /vol /var/lib/dlqctl rw,relatime - ext4 /dev/sda1 rw
32 22 8:2 / /mnt/my\040disk rw - xfs /dev/sdb rw
`

func TestFsTypeFindsTheLongestMount(t *testing.T) {
	for path, want := range map[string]string{
		"/":                      "overlay",
		"/root/.local/state":     "overlay",
		"/tmp/x":                 "tmpfs",
		"/tmpfoo":                "overlay",
		"/var/lib/dlqctl/state":  "ext4",
		"/var/lib/dlqctl":        "ext4",
		"/mnt/my disk/dlq-state": "xfs",
	} {
		if got := fsType(path, mountinfo); got != want {
			t.Errorf("fsType(%s) = %q, want %q", path, got, want)
		}
	}
}

func TestContainerSigns(t *testing.T) {
	env := map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
	signs := ContainerSigns(func(k string) string { return env[k] }, func(p string) bool { return p == "/.dockerenv" }, "0::/kubepods/besteffort/pod1", mountinfo)
	got := strings.Join(signs, "; ")
	for _, w := range []string{"Kubernetes pod", "/.dockerenv", "cgroup kubepods", "overlay root"} {
		if !strings.Contains(got, w) {
			t.Errorf("signs %q lack %q", got, w)
		}
	}
	if s := ContainerSigns(func(string) string { return "" }, func(string) bool { return false }, "0::/user.slice", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"); len(s) != 0 {
		t.Errorf("a plain host shows container signs: %v", s)
	}
}

// TestStateDirCheckWarnsWhereJournalsDie: a state dir on tmpfs, or on a
// container's own layer, is writable but gone with the pod: a warning with
// the fix; a mounted volume is fine; an unwritable one fails.
func TestStateDirCheckWarnsWhereJournalsDie(t *testing.T) {
	dir := t.TempDir()
	mi := "1 0 8:1 / / rw - overlay overlay rw\n2 1 0:3 / " + dir + " rw - tmpfs tmpfs rw\n"
	c := StateDirCheck(StateDirFacts{Path: filepath.Join(dir, "state"), Source: "default", MountInfo: mi})
	if c.Status != Warn || !strings.Contains(c.Detail, "memory-backed") || !strings.Contains(c.Fix, "--state-dir") {
		t.Errorf("tmpfs: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err != nil {
		t.Errorf("the state dir was not created: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "state"))
	if len(entries) != 0 {
		t.Errorf("the probe file was left behind: %v", entries)
	}
	c = StateDirCheck(StateDirFacts{Path: dir, Source: "default", MountInfo: "1 0 8:1 / / rw - overlay overlay rw\n", Container: []string{"/.dockerenv"}})
	if c.Status != Warn || !strings.Contains(c.Detail, "lost with the container or pod") {
		t.Errorf("container layer: %+v", c)
	}
	c = StateDirCheck(StateDirFacts{Path: dir, Source: "--state-dir", MountInfo: "1 0 8:1 / / rw - overlay overlay rw\n2 1 8:2 / " + dir + " rw - ext4 /dev/sdb rw\n", Container: []string{"/.dockerenv"}})
	if c.Status != OK {
		t.Errorf("a mounted volume in a container: %+v", c)
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		if c := StateDirCheck(StateDirFacts{Path: ro, Source: "--state-dir"}); c.Status != Fail {
			t.Errorf("a read-only dir: %+v", c)
		}
	}
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, nil, 0o600)
	if c := StateDirCheck(StateDirFacts{Path: filepath.Join(file, "sub"), Source: "--state-dir"}); c.Status != Fail {
		t.Errorf("a state dir under a file: %+v", c)
	}
}

func TestRoleARNAndRoles(t *testing.T) {
	if got := roleARN("arn:aws:sts::123456789012:assumed-role/dlqctl-operator/alice"); got != "arn:aws:iam::123456789012:role/dlqctl-operator" {
		t.Errorf("roleARN = %q", got)
	}
	if got := roleARN("arn:aws:iam::123456789012:user/bob"); got != "arn:aws:iam::123456789012:user/bob" {
		t.Errorf("roleARN(user) = %q", got)
	}
	if r, ok := ParseRoles("operator,read-only"); !ok || strings.Join(r, ",") != "read-only,operator" {
		t.Errorf("ParseRoles = %v %v", r, ok)
	}
	if _, ok := ParseRoles("admin"); ok {
		t.Error("ParseRoles accepted admin")
	}
	for _, p := range needed([]string{RoleReadOnly}) {
		switch p.Action {
		case "sqs:DeleteMessage", "sqs:SendMessage", "s3:PutObject", "sqs:StartMessageMoveTask":
			t.Errorf("read-only needs %s", p.Action)
		}
	}
}

// fakeIAM answers SimulatePrincipalPolicy from a table (pure logic: the
// mapping of the simulator's decisions to checks).
type fakeIAM struct {
	decisions map[string]string
	err       error
	asked     *iam.SimulatePrincipalPolicyInput
}

func (f *fakeIAM) SimulatePrincipalPolicy(_ context.Context, in *iam.SimulatePrincipalPolicyInput, _ ...func(*iam.Options)) (*iam.SimulatePrincipalPolicyOutput, error) {
	f.asked = in
	if f.err != nil {
		return nil, f.err
	}
	out := &iam.SimulatePrincipalPolicyOutput{}
	for _, a := range in.ActionNames {
		if d, ok := f.decisions[a]; ok {
			out.EvaluationResults = append(out.EvaluationResults, iamtypes.EvaluationResult{EvalActionName: aws.String(a), EvalDecision: iamtypes.PolicyEvaluationDecisionType(d)})
		}
	}
	return out, nil
}

func TestUnprovenActionsGoToTheSimulatorWhenAllowed(t *testing.T) {
	arn := "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
	actions := []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:StartMessageMoveTask"}
	fake := &fakeIAM{decisions: map[string]string{"sqs:ReceiveMessage": "allowed", "sqs:DeleteMessage": "implicitDeny"}}
	p := &Prober{IAM: fake, Roles: AllRoles, Principal: "arn:aws:sts::123456789012:assumed-role/dlq-operator/alice"}
	var r Report
	p.unproven(t.Context(), &r, "orders-dlq", actions, arn, OnDLQ, "it would change the queue")
	if got := aws.ToString(fake.asked.PolicySourceArn); got != "arn:aws:iam::123456789012:role/dlq-operator" {
		t.Errorf("simulated for %s, want the session's role", got)
	}
	want := map[string]Status{"sqs:ReceiveMessage": OK, "sqs:DeleteMessage": Fail, "sqs:StartMessageMoveTask": NotChecked}
	if len(r.Checks) != 3 {
		t.Fatalf("checks: %+v", r.Checks)
	}
	for _, c := range r.Checks {
		if c.Status != want[c.Name] {
			t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Detail, want[c.Name])
		}
		if c.Status == Fail && !strings.Contains(c.Fix, `"Action": "sqs:DeleteMessage"`) {
			t.Errorf("a denied action's fix lacks the statement: %s", c.Fix)
		}
	}

	// The simulator itself denied: one not-checked line that says so.
	fake = &fakeIAM{err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform: iam:SimulatePrincipalPolicy"}}
	p.IAM = fake
	r = Report{}
	p.unproven(t.Context(), &r, "orders-dlq", actions, arn, OnDLQ, "it would change the queue")
	if len(r.Checks) != 1 || r.Checks[0].Status != NotChecked || !strings.Contains(r.Checks[0].Detail, "iam:SimulatePrincipalPolicy is not allowed") {
		t.Errorf("simulator denied: %+v", r.Checks)
	}
	// No principal (the local stack, where STS is not asked): not asked.
	p.Principal = ""
	fake.asked = nil
	r = Report{}
	p.unproven(t.Context(), &r, "orders-dlq", actions, arn, OnDLQ, "it would change the queue")
	if fake.asked != nil || len(r.Checks) != 1 || r.Checks[0].Status != NotChecked {
		t.Errorf("without a principal: asked=%v checks=%+v", fake.asked != nil, r.Checks)
	}
}

func TestPlainRef(t *testing.T) {
	for ref, want := range map[string]QueueRef{
		"orders-dlq": {Name: "orders-dlq"},
		"https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq": {Name: "orders-dlq", URL: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"},
		"arn:aws:sqs:eu-west-1:123456789012:orders-dlq.fifo":          {Name: "orders-dlq.fifo", Account: "123456789012", Region: "eu-west-1"},
	} {
		if got, err := plainRef(ref); err != nil || got != want {
			t.Errorf("plainRef(%s) = %+v, %v; want %+v", ref, got, err, want)
		}
	}
	for _, bad := range []string{"", "arn:aws:s3:::bucket", "arn:aws:sqs:eu-west-1:1"} {
		if _, err := plainRef(bad); err == nil {
			t.Errorf("plainRef(%q) accepted", bad)
		}
	}
}
