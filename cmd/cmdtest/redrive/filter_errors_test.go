package redrive

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/amqpseed"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/kafkaseed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/redrive"
)

// Filters that fail are loud: a --filter or a rule that raises an error on
// the messages ('.body | tonumber' on text bodies) never reads as an empty
// selection. On every message: exit 2 before anything moves. On some: the
// errored messages stay where they are and the summary counts them.

const numberFilter = ".body | tonumber > 0"

// refusalID checks that stderr refuses expr the way the user is told
// (expression, error, message id, fix) and returns the message id named.
func refusalID(t *testing.T, r clitest.Result, expr string) string {
	t.Helper()
	if r.Code != 2 {
		t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	want := fmt.Sprintf("--filter '%s' failed on every message read", expr)
	if !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, fmt.Sprintf("(%s)?", expr)) || !strings.Contains(r.Stderr, "nothing was changed") {
		t.Fatalf("stderr does not refuse the filter (want %q, the fix and 'nothing was changed'):\n%s", want, r.Stderr)
	}
	m := regexp.MustCompile(`first: message (\S+): (.+?)\); fix the filter`).FindStringSubmatch(r.Stderr)
	if m == nil || m[2] == "" {
		t.Fatalf("stderr names no message id and error:\n%s", r.Stderr)
	}
	return m[1]
}

// dlqIDs returns the message ids in a queue (read with sample: nothing
// consumed).
func dlqIDs(t *testing.T, env testenv.Env, queue string) map[string]bool {
	t.Helper()
	r := clitest.Run(t, env, "", "sample", queue, "-n", "500", "-o", "json")
	var recs []record.Record
	if err := json.Unmarshal([]byte(r.Stdout), &recs); r.Code != 0 || err != nil {
		t.Fatalf("sample: exit %d, %v: %s", r.Code, err, r.Stderr)
	}
	ids := map[string]bool{}
	for _, rec := range recs {
		ids[rec.MessageID] = true
	}
	return ids
}

func textBodies(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("payment %d failed: card declined", i)
	}
	return out
}

// mixedBodies alternates numbers and text: n of each.
func mixedBodies(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprint(i+1), fmt.Sprintf("text %d", i))
	}
	return out
}

func TestRedriveFilterFailingOnEveryMessageMovesNothing(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	p := deadLettered(t, env, textBodies(12))
	ids := dlqIDs(t, env, p.dlqURL)
	for _, mode := range [][]string{
		{"--yes"},
		{"--dry-run"},
		{"--canary", "2", "--yes"},
		{"--yes", "-o", "json"},
	} {
		args := append([]string{"redrive", p.dlqURL, "--to", "source", "--filter", ".body | tonumber", "--state-dir", t.TempDir()}, mode...)
		r := clitest.Run(t, env, "", args...)
		if id := refusalID(t, r, ".body | tonumber"); !ids[id] {
			t.Fatalf("%v: the refusal names message %q, not one of the DLQ's", mode, id)
		}
		if !strings.Contains(r.Stderr, `cannot be applied to "payment`) {
			t.Fatalf("%v: the refusal does not carry the expression's error:\n%s", mode, r.Stderr)
		}
		if v, inflight := clitest.SettledDepth(t, c, p.dlqURL); v != 12 || inflight != 0 {
			t.Fatalf("%v: the DLQ has %d visible, %d in flight; want all 12 back", mode, v, inflight)
		}
		if v, inflight := clitest.QueueDepth(t, c, p.srcURL); v+inflight != 0 {
			t.Fatalf("%v: %d message(s) reached the source queue", mode, v+inflight)
		}
		if mode[len(mode)-1] == "json" {
			s := clitest.SummaryOf(t, r)
			if s.Moved != 0 || s.FilterErrors == nil || s.FilterErrors.Count != 12 || !ids[s.FilterErrors.FirstID] || s.Skipped[redrive.SkipFilterError] != 12 {
				t.Fatalf("summary %+v (filter errors %+v); want 12 filter errors, nothing moved", s.Result, s.FilterErrors)
			}
		}
	}
}

// More messages than it takes to refuse: the run stops on its first
// batches, before its end, and still nothing moved.
func TestRedriveFilterRefusedOnTheFirstBatches(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	n := classify.RefuseAfter + 30
	p := deadLettered(t, env, textBodies(n))
	r := clitest.Run(t, env, "", "redrive", p.dlqURL, "--to", "source", "--filter", ".body | tonumber", "--yes", "-o", "json", "--state-dir", t.TempDir())
	refusalID(t, r, ".body | tonumber")
	s := clitest.SummaryOf(t, r)
	if s.Moved != 0 || s.FilterErrors == nil || s.FilterErrors.Count < classify.RefuseAfter || s.Status != redrive.StatusFailed {
		t.Fatalf("summary status %q moved %d filter errors %+v; want failed, nothing moved, at least %d errors", s.Status, s.Moved, s.FilterErrors, classify.RefuseAfter)
	}
	if v, inflight := clitest.SettledDepth(t, c, p.dlqURL); v != n || inflight != 0 {
		t.Fatalf("the DLQ has %d visible, %d in flight; want all %d back", v, inflight, n)
	}
	if v, inflight := clitest.QueueDepth(t, c, p.srcURL); v+inflight != 0 {
		t.Fatalf("%d message(s) reached the source queue", v+inflight)
	}
}

func TestRedriveMixedQueueMovesTheGoodOnesAndLeavesTheErroredOnes(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	p := deadLettered(t, env, mixedBodies(10))
	r := clitest.Run(t, env, "", "redrive", p.dlqURL, "--to", "source", "--filter", numberFilter, "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	s := clitest.SummaryOf(t, r)
	if s.Moved != 10 || s.Skipped[redrive.SkipFilterError] != 10 || s.FilterErrors == nil || s.FilterErrors.Count != 10 ||
		s.FilterErrors.Expression != "--filter '"+numberFilter+"'" || !strings.Contains(s.FilterErrors.FirstError, "tonumber cannot be applied") {
		t.Fatalf("summary moved %d skipped %v filter errors %+v; want 10 moved, 10 filter errors", s.Moved, s.Skipped, s.FilterErrors)
	}
	if !strings.Contains(r.Stderr, "raised an error on 10 message(s)") || !strings.Contains(r.Stderr, "stay in the DLQ") {
		t.Fatalf("stderr does not warn about the 10 messages left in the DLQ:\n%s", r.Stderr)
	}
	left := bodiesIn(t, c, p.dlqURL)
	moved := bodiesIn(t, c, p.srcURL)
	for i := 0; i < 10; i++ {
		if left[fmt.Sprintf("text %d", i)] != 1 || moved[fmt.Sprint(i+1)] != 1 {
			t.Fatalf("text %d / number %d: %d in the DLQ, %d moved; want the text left, the number moved\nDLQ: %v\nsource: %v", i, i+1, left[fmt.Sprintf("text %d", i)], moved[fmt.Sprint(i+1)], left, moved)
		}
	}
	if len(left) != 10 || len(moved) != 10 {
		t.Fatalf("DLQ %v, source %v", left, moved)
	}
	// The table says so too.
	p2 := deadLettered(t, env, mixedBodies(3))
	r = clitest.Run(t, env, "", "redrive", p2.dlqURL, "--to", "source", "--filter", numberFilter, "--yes", "--state-dir", t.TempDir())
	if r.Code != 0 || !regexp.MustCompile(`filter errors\s+3 not selected, left where they are: --filter '\.body \| tonumber > 0' raised an error \(first: message \S+: tonumber cannot be applied`).MatchString(r.Stdout) {
		t.Fatalf("table summary: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestArchiveDeleteWithAFailingFilterDeletesAndWritesNothing(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	s3c, bucket := env.S3(t), clitest.Bucket(t, env, "fe")
	p := deadLettered(t, env, textBodies(8))
	const expr = ".json.amount | ascii_downcase"
	for _, mode := range [][]string{{"--delete", "--yes"}, {"--delete", "--dry-run"}} {
		r := clitest.Run(t, env, "", append([]string{"archive", p.dlqURL, "--to", "s3://" + bucket + "/dlq", "--filter", expr}, mode...)...)
		refusalID(t, r, expr)
		if !strings.Contains(r.Stderr, "ascii_downcase cannot be applied to: null") {
			t.Fatalf("%v: the refusal does not carry the error:\n%s", mode, r.Stderr)
		}
		if v, inflight := clitest.SettledDepth(t, c, p.dlqURL); v != 8 || inflight != 0 {
			t.Fatalf("%v: the DLQ has %d visible, %d in flight; want all 8 kept", mode, v, inflight)
		}
		out, err := s3c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != 0 {
			t.Fatalf("%v: %d object(s) written to the bucket, first %s", mode, len(out.Contents), aws.ToString(out.Contents[0].Key))
		}
	}
}

func TestSampleGroupClassifyCountFilterErrors(t *testing.T) {
	env := testenv.Require(t)
	p := deadLettered(t, env, mixedBodies(10))
	q := p.dlqURL

	// sample: the errored messages are not shown, stderr says how many.
	r := clitest.Run(t, env, "", "sample", q, "-n", "50", "--filter", numberFilter, "-o", "json")
	var recs []record.Record
	if err := json.Unmarshal([]byte(r.Stdout), &recs); r.Code != 0 || err != nil || len(recs) != 10 {
		t.Fatalf("sample: exit %d, %v, %d records: %s", r.Code, err, len(recs), r.Stderr)
	}
	if !strings.Contains(r.Stderr, "raised an error on 10 message(s)") {
		t.Fatalf("sample does not count the errors:\n%s", r.Stderr)
	}

	// group: -o json carries filter_errors; -v prints the errors.
	r = clitest.Run(t, env, "", "group", q, "--by", "source", "--all", "--filter", numberFilter, "-o", "json", "-v")
	var g cmd.GroupReport
	if err := json.Unmarshal([]byte(r.Stdout), &g); r.Code != 0 || err != nil {
		t.Fatalf("group: exit %d, %v: %s", r.Code, err, r.Stderr)
	}
	if g.Matched != 10 || g.FilterErrors == nil || g.FilterErrors.Count != 10 {
		t.Fatalf("group matched %d, filter errors %+v; want 10 and 10", g.Matched, g.FilterErrors)
	}
	if n := strings.Count(r.Stderr, "raised an error on message"); n != 10 {
		t.Fatalf("-v printed %d errors, want the 10:\n%s", n, r.Stderr)
	}

	// classify: a rule that raises on text bodies.
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - name: big-number\n    when: '.body | tonumber > 100'\n    class: big\n    action: investigate\n  - include: builtin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(t, env, "", "classify", q, "--all", "--summary", "--rules", rules, "-o", "json")
	var cs cmd.ClassifyReport
	if err := json.Unmarshal([]byte(r.Stdout), &cs); r.Code != 0 || err != nil {
		t.Fatalf("classify: exit %d, %v: %s", r.Code, err, r.Stderr)
	}
	if cs.Matched != 10 || cs.FilterErrors == nil || cs.FilterErrors.Count != 10 || cs.FilterErrors.Expression != fmt.Sprintf("rule %q (%s:2)", "big-number", rules) {
		t.Fatalf("classify matched %d, filter errors %+v", cs.Matched, cs.FilterErrors)
	}

	// Every message failing: exit 2 on the read-only commands too.
	const bad = ".json.amount | ascii_downcase"
	for _, args := range [][]string{
		{"sample", q, "--filter", bad},
		{"group", q, "--by", "source", "--all", "--filter", bad},
		{"classify", q, "--all", "--filter", bad},
	} {
		refusalID(t, clitest.Run(t, env, "", args...), bad)
	}

	// Offline input (--from) goes through the same selection.
	r = clitest.Run(t, env, "", "sample", q, "-n", "50", "-o", "ndjson")
	file := filepath.Join(t.TempDir(), "dlq.ndjson")
	if err := os.WriteFile(file, []byte(r.Stdout), 0o600); r.Code != 0 || err != nil {
		t.Fatalf("sample -o ndjson: exit %d, %v", r.Code, err)
	}
	r = clitest.Run(t, env, "", "group", "--from", file, "--by", "source", "--filter", numberFilter, "-o", "json")
	var off cmd.GroupReport
	if err := json.Unmarshal([]byte(r.Stdout), &off); r.Code != 0 || err != nil || off.FilterErrors == nil || off.FilterErrors.Count != 10 || off.Matched != 10 {
		t.Fatalf("group --from: exit %d, %v, %+v: %s", r.Code, err, off.FilterErrors, r.Stderr)
	}
	refusalID(t, clitest.Run(t, env, "", "classify", "--from", file, "--filter", bad), bad)
}

func TestAMQPRedriveRefusesAFilterFailingOnEveryMessage(t *testing.T) {
	o := amqpseed.Default(clitest.RabbitPrefix(t))
	env, n := clitest.SeedRabbit(t, o)
	t.Setenv("DLQCTL_STATE_DIR", t.TempDir())
	q := env.QueueRef(n.DLQ)
	const expr = ".json.amount | ascii_downcase"
	for _, args := range [][]string{
		{"redrive", q, "--to", "source", "--filter", expr, "--yes"},
		{"redrive", q, "--to", "source", "--filter", expr, "--dry-run"},
		{"redrive", q, "--to", "source", "--filter", expr, "--canary", "1", "--verify-for", "2s", "--yes"},
	} {
		refusalID(t, clitest.Run(t, testenv.Env{}, "", args...), expr)
		clitest.WaitNoUnacked(t, env, n.DLQ)
		if got := clitest.ReadyOf(t, env, n.DLQ); got != o.Total() {
			t.Fatalf("%v: the DLQ has %d ready, want all %d kept", args, got, o.Total())
		}
	}
	// A filter that fails on some messages only: they stay, the summary
	// counts them.
	sel := `if .system.amqp.last_death.reason == "rejected" then (.body | tonumber) else true end`
	r := clitest.Run(t, testenv.Env{}, "", "redrive", q, "--to", "source", "--filter", sel, "--dry-run", "-o", "json")
	var plan cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(r.Stdout), &plan); r.Code != 0 || err != nil {
		t.Fatalf("dry run: exit %d, %v: %s", r.Code, err, r.Stderr)
	}
	if plan.FilterErrors == nil || plan.FilterErrors.Count != o.Rejected || plan.Skipped[redrive.SkipFilterError] != o.Rejected || plan.WouldMove != o.Total()-o.Rejected {
		t.Fatalf("plan would move %d, skipped %v, filter errors %+v; want the %d rejected ones counted", plan.WouldMove, plan.Skipped, plan.FilterErrors, o.Rejected)
	}
}

func TestKafkaRedriveRefusesAFilterFailingOnEveryRecord(t *testing.T) {
	brokers, prefix, res, _ := clitest.KafkaIncident(t, kafkaseed.Options{})
	orders, _, _, _, dlq, _, _, _, _ := kafkaseed.Topics(prefix)
	ref := "kafka://" + brokers + "/" + dlq
	total := res.DeadLetters[dlq]
	const expr = ".attributes.no_such_header.value | ascii_downcase"
	refusalID(t, clitest.Run(t, testenv.Env{}, "", "redrive", ref, "--filter", expr, "--dry-run"), expr)
	r := clitest.Run(t, testenv.Env{}, "", "redrive", ref, "--filter", expr, "--yes", "-o", "json")
	refusalID(t, r, expr)
	var rep cmd.RedriveSummary
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("report: %v: %s", err, r.Stdout)
	}
	if rep.Result == nil || rep.Moved != 0 || rep.Status != "failed" || pendingAfter(rep) != int64(total) || rep.FilterErrors == nil || rep.FilterErrors.Count == 0 {
		t.Fatalf("report %s; want nothing moved, all %d pending", r.Stdout, total)
	}
	if n := len(clitest.CopiesIn(t, brokers, orders)); n != 0 {
		t.Fatalf("a refused run produced %d copies", n)
	}
	// The records are all still there for a corrected filter.
	r = clitest.Run(t, testenv.Env{}, "", "redrive", ref, "--filter", "("+expr+")?", "--dry-run", "-o", "json")
	var plan cmd.RedrivePlanOutput
	if err := json.Unmarshal([]byte(r.Stdout), &plan); r.Code != 0 || err != nil || plan.Scanned != total || plan.FilterErrors != nil {
		t.Fatalf("dry run with the fix: exit %d, %v, %+v: %s", r.Code, err, plan, r.Stderr)
	}
}

func TestRestoreSelectionFailingOnSomeOrEveryRecord(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	bucket := clitest.Bucket(t, env, "fe")
	p := deadLettered(t, env, mixedBodies(5))
	r := clitest.Run(t, env, "", "archive", p.dlqURL, "--to", "s3://"+bucket+"/dlq", "-o", "json")
	var sum cmd.ArchiveSummary
	if err := json.Unmarshal([]byte(r.Stdout), &sum); r.Code != 0 || err != nil || sum.Manifest == "" || sum.FilterErrors != nil {
		t.Fatalf("archive: exit %d, %v: %s", r.Code, err, r.Stderr)
	}
	destURL, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "restored"), nil)
	state := t.TempDir()
	const bad = ".json.amount | ascii_downcase"
	for _, mode := range [][]string{{"--dry-run"}, {"--yes"}} {
		r = clitest.Run(t, env, "", append([]string{"--state-dir", state, "restore", sum.Manifest, "--to", destURL, "--filter", bad}, mode...)...)
		refusalID(t, r, bad)
		if v, inflight := clitest.QueueDepth(t, c, destURL); v+inflight != 0 {
			t.Fatalf("restore %v refused but sent %d message(s)", mode, v+inflight)
		}
	}
	// The refused run left nothing to resume or to refuse as done: the
	// mixed selection restores the numbers, counting the text records.
	r = clitest.Run(t, env, "", "--state-dir", state, "restore", sum.Manifest, "--to", destURL, "--filter", numberFilter, "--yes", "-o", "json")
	var rs cmd.RestoreSummary
	if err := json.Unmarshal([]byte(r.Stdout), &rs); r.Code != 0 || err != nil {
		t.Fatalf("restore: exit %d, %v: %s", r.Code, err, r.Stderr)
	}
	if rs.Moved != 5 || rs.FilterErrors == nil || rs.FilterErrors.Count != 5 || rs.Skipped[redrive.SkipFilterError] != 5 {
		t.Fatalf("restore moved %d, skipped %v, filter errors %+v; want 5 and 5", rs.Moved, rs.Skipped, rs.FilterErrors)
	}
	got := bodiesIn(t, c, destURL)
	for i := 1; i <= 5; i++ {
		if got[fmt.Sprint(i)] != 1 {
			t.Fatalf("restored %v, want the numbers 1..5 once each", got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("restored %v, want the 5 numbers only", got)
	}
}
