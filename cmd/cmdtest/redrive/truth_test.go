package redrive

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// TestVerifyForHasOneTruth: --verify-for has no fixed default of its own
// (cobra's "(default 2m0s)" contradicted the computed window).
func TestVerifyForHasOneTruth(t *testing.T) {
	for _, cmd := range []string{"redrive", "restore"} {
		r := clitest.Run(t, testenv.Env{}, "", cmd, "--help")
		if r.Code != 0 {
			t.Fatalf("%s --help: exit %d", cmd, r.Code)
		}
		if strings.Contains(r.Stdout, "default 2m") || !strings.Contains(r.Stdout, "when not given it is computed") {
			t.Errorf("%s --help describes --verify-for with two defaults, or none:\n%s", cmd, r.Stdout)
		}
	}
	// The exit codes the issue found missing are in each command's help.
	for _, c := range []struct{ cmd, says string }{
		{"classify", "Exit 4 with --all"},
		{"redrive", "Exit 1 is an error"},
		{"check", "Exit 2 means check could not look"},
	} {
		if r := clitest.Run(t, testenv.Env{}, "", c.cmd, "--help"); !strings.Contains(strings.Join(strings.Fields(r.Stdout), " "), c.says) {
			t.Errorf("%s --help does not say %q", c.cmd, c.says)
		}
	}
}

// TestPipedColumnsAreDocumented: the column count each --help states for
// piped output is the count the command prints.
func TestPipedColumnsAreDocumented(t *testing.T) {
	env, inc := clitest.SharedIncident(t)
	state := t.TempDir()
	// One run in the state dir, so runs prints a line.
	if j, err := redrive.CreateJournal(state, redrive.RunMeta{ID: redrive.NewRunID(time.Now()), Kind: "redrive", Source: "arn:aws:sqs:us-east-1:123456789012:x-dlq", Destination: "x", Created: time.Now()}); err != nil {
		t.Fatal(err)
	} else {
		j.Close()
	}
	stated := regexp.MustCompile(`no header, (\d+) columns`)
	for _, args := range [][]string{
		{"audit", inc.DLQ.Name, "--sample", "0", "--fail-on", "never-fails-here"},
		{"check", inc.DLQ.Name, "--max-visible", "100000"},
		{"queues", "--prefix", strings.TrimSuffix(inc.DLQ.Name, "-dlq")},
		{"sample", inc.DLQ.Name, "-n", "3"},
		{"classify", inc.DLQ.Name, "--sample", "20"},
		{"runs", "--state-dir", state},
	} {
		help := clitest.Run(t, testenv.Env{}, "", args[0], "--help")
		m := stated.FindStringSubmatch(strings.Join(strings.Fields(help.Stdout), " "))
		if m == nil {
			t.Errorf("%s --help does not state its piped columns", args[0])
			continue
		}
		want, _ := strconv.Atoi(m[1])
		if args[0] == "audit" {
			args = args[:len(args)-2] // --fail-on is validated; keep the default
		}
		r := clitest.Run(t, env, "", args...)
		if r.Code != 0 && r.Code != 3 {
			t.Fatalf("%v: exit %d: %s", args, r.Code, r.Stderr)
		}
		lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
		if len(lines) == 0 || lines[0] == "" {
			t.Errorf("%v printed nothing to check", args)
			continue
		}
		for _, l := range lines {
			if n := len(strings.Split(l, "\t")); n != want {
				t.Errorf("%v: a piped line has %d columns, --help says %d: %q", args, n, want, l)
				break
			}
		}
	}
}

// TestRunsShowKindAndHowToFinish and resume --dlq: a partial redrive of
// one DLQ, and a newer unfinished run of another; runs names the kind and
// the resume command, and `redrive resume --dlq` picks the run of that DLQ,
// finishing it with nothing lost or sent twice.
func TestResumeByDLQPicksThatDLQsRun(t *testing.T) {
	env := testenv.Require(t)
	p := deadLettered(t, env, orderBodies(30, 0))
	state := t.TempDir()

	// A newer unfinished run of another DLQ: must not be picked.
	other := redrive.RunMeta{ID: redrive.NewRunID(time.Now().Add(time.Hour)), Kind: "redrive", Source: "arn:aws:sqs:us-east-1:123456789012:other-dlq", Destination: "other", Created: time.Now()}
	j, err := redrive.CreateJournal(state, other)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.SetStatus(redrive.StatusInterrupted, "test"); err != nil {
		t.Fatal(err)
	}
	j.Close()

	// A partial run of ours: the destination refuses every 3rd entry.
	sqsP, err := faultproxy.New(env.SQSEndpoint, faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.EntryFail, EntryEvery: 3, EntryCode: "InvalidMessageContents", EntrySenderFault: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sqsP.Close()
	via := env
	via.SQSEndpoint = sqsP.URL
	r := clitest.Run(t, via, "", "redrive", p.dlqName, "--to", p.srcName, "--yes", "--state-dir", state)
	if r.Code != 4 {
		t.Fatalf("redrive through refusals: exit %d, want 4: %s", r.Code, r.Stderr)
	}

	runs := clitest.Run(t, env, "", "runs", "--state-dir", state, "-o", "json")
	var rows []struct {
		ID, Kind, Status, Source, Resume string
	}
	if err := json.Unmarshal([]byte(runs.Stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("runs: %v\n%s", err, runs.Stdout)
	}
	mine := rows[1]
	if mine.Kind != "redrive" || mine.Status != redrive.StatusPartial || mine.Resume != "dlqctl redrive resume "+mine.ID {
		t.Errorf("our run: %+v", mine)
	}
	table := clitest.Run(t, env, "", "runs", "--state-dir", state)
	if !strings.Contains(table.Stdout, "\tredrive\tpartial\t") {
		t.Errorf("piped runs lacks the kind column:\n%s", table.Stdout)
	}

	res := clitest.Run(t, env, "", "redrive", "resume", "--dlq", p.dlqName, "--yes", "--state-dir", state)
	if res.Code != 0 || !strings.Contains(res.Stderr, "resuming run "+mine.ID) {
		t.Fatalf("resume --dlq: exit %d: %s", res.Code, res.Stderr)
	}
	c := env.SQS(t)
	if v, f := clitest.SettledDepth(t, c, p.dlqURL); v+f != 0 {
		t.Errorf("the DLQ still holds %d+%d", v, f)
	}
	if v, f := clitest.SettledDepth(t, c, p.srcURL); v+f != 30 {
		t.Errorf("the source holds %d+%d, want all 30 once", v, f)
	}
	after := clitest.Run(t, env, "", "runs", "--state-dir", state, "-o", "json")
	if !strings.Contains(after.Stdout, `"status":"interrupted"`) && !strings.Contains(after.Stdout, `"status": "interrupted"`) {
		t.Errorf("the other DLQ's run was touched:\n%s", after.Stdout)
	}
	// Nothing left of that DLQ: resume --dlq says so and exits 0.
	again := clitest.Run(t, env, "", "redrive", "resume", "--dlq", p.dlqName, "--yes", "--state-dir", state)
	if again.Code != 0 || !strings.Contains(again.Stderr, "nothing to resume") {
		t.Errorf("second resume --dlq: exit %d: %s", again.Code, again.Stderr)
	}
	if bad := clitest.Run(t, env, "", "redrive", "resume", mine.ID, "--dlq", p.dlqName, "--state-dir", state); bad.Code != 2 {
		t.Errorf("RUN_ID and --dlq together: exit %d", bad.Code)
	}
}
