package runbooks

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/iampolicy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// The role policies of docs/iam.md, by the role names its "Roles per
// runbook" table uses.
var roleHeadings = map[string]string{
	"read-only": "Read-only triage",
	"operator":  "Redrive operator",
	"archivist": "Archivist",
}

// recording routes one runbook's dlqctl invocations through recording
// proxies (SQS, S3, and CloudWatch Logs on moto) and tags each
// invocation's calls with its own SDK app id (a dlqctl shim first on PATH
// sets AWS_SDK_UA_APP_ID and logs the command line), so every command's
// calls can be judged against the roles of its runbook.
type recording struct {
	sqs, s3, logs *faultproxy.Proxy
	shimDir, log  string
	vars          map[string]string
}

func startRecording(t *testing.T, env testenv.Env, inc *incident, bin, dir string) *recording {
	t.Helper()
	r := &recording{shimDir: filepath.Join(dir, "shim"), log: filepath.Join(dir, "invocations.tsv")}
	var err error
	if r.sqs, err = faultproxy.New(env.SQSEndpoint); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.sqs.Close)
	if r.s3, err = faultproxy.New(env.S3Endpoint); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.s3.Close)
	if r.logs, err = faultproxy.New(inc.vars[testenv.EnvLogsEndpoint]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.logs.Close)
	if err := os.MkdirAll(r.shimDir, 0o755); err != nil {
		t.Fatal(err)
	}
	shim := "#!/usr/bin/env bash\n" +
		"id=\"rb$$\"\n" +
		"printf '%s\\t%s\\n' \"$id\" \"$*\" >> " + shellQuote(r.log) + "\n" +
		"AWS_SDK_UA_APP_ID=\"$id\" exec " + shellQuote(bin) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(r.shimDir, "dlqctl"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	r.vars = map[string]string{"REGION": env.Region, "ACCOUNT": "123456789012", "BUCKET": inc.bucket, "TEAM": inc.vars["QUEUE_PREFIX"], "KEY-ID": "test-key"}
	return r
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (r *recording) environ() []string {
	return []string{
		"AWS_ENDPOINT_URL_SQS=" + r.sqs.URL,
		"AWS_ENDPOINT_URL_S3=" + r.s3.URL,
		testenv.EnvLogsEndpoint + "=" + r.logs.URL,
	}
}

// rolePolicies parses docs/iam.md: the policy of each role, instantiated
// with vars, and the roles of each runbook.
func rolePolicies(t *testing.T, vars map[string]string) (map[string]iampolicy.Policy, map[string][]string) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "iam.md"))
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]iampolicy.Policy{}
	for _, sec := range iampolicy.FromMarkdown(string(md)) {
		for role, heading := range roleHeadings {
			if strings.HasPrefix(sec.Heading, heading) {
				p, err := iampolicy.Parse([]byte(iampolicy.Instantiate(sec.JSON, vars)))
				if err != nil {
					t.Fatalf("docs/iam.md, %s: %v", sec.Heading, err)
				}
				policies[role] = p
			}
		}
	}
	for role := range roleHeadings {
		if _, ok := policies[role]; !ok {
			t.Fatalf("docs/iam.md has no JSON policy under a heading %q", roleHeadings[role])
		}
	}
	row := regexp.MustCompile(`^\| \[([a-z-]+)\]\(runbooks/[a-z-]+\.md\) \| (.*) \|$`)
	roles := map[string][]string{}
	for _, line := range strings.Split(string(md), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if strings.HasPrefix(m[2], "none") {
			// A runbook that calls no AWS API (Kafka only): its row says
			// so, and the recording must then hold no AWS call.
			roles[m[1]+".md"] = []string{}
			continue
		}
		for _, role := range []string{"read-only", "operator", "archivist"} {
			if strings.Contains(m[2], role) {
				roles[m[1]+".md"] = append(roles[m[1]+".md"], role)
			}
		}
	}
	return policies, roles
}

// check judges every recorded invocation: one of the runbook's roles must
// allow all of its calls (actions and resources).
func (r *recording) check(t *testing.T, runbook string) {
	t.Helper()
	if t.Failed() {
		return
	}
	policies, roles := rolePolicies(t, r.vars)
	mine, ok := roles[runbook]
	if !ok {
		t.Errorf("docs/iam.md's \"Roles per runbook\" table has no row for %s", runbook)
		return
	}
	if len(mine) == 0 {
		for service, p := range map[string]*faultproxy.Proxy{"sqs": r.sqs, "s3": r.s3, "logs": r.logs} {
			for _, c := range p.Calls() {
				t.Errorf("%s: its row in docs/iam.md says it needs no AWS role, but dlqctl made a %s %s call", runbook, service, c.Action)
			}
		}
		return
	}
	commands := map[string]string{}
	f, err := os.Open(r.log)
	if err != nil {
		t.Fatalf("no dlqctl invocation was recorded: %v", err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, args, _ := strings.Cut(sc.Text(), "\t")
		commands[id] = args
	}
	f.Close()
	byID := map[string][]iampolicy.Request{}
	for service, p := range map[string]*faultproxy.Proxy{"sqs": r.sqs, "s3": r.s3, "logs": r.logs} {
		for _, c := range p.Calls() {
			if c.AppID == "" {
				t.Errorf("a %s %s call without the shim's app id: a dlqctl that bypassed the recording?", service, c.Action)
				continue
			}
			req, err := iampolicy.FromCall(service, c.Action, c.Resource, r.vars["REGION"], r.vars["ACCOUNT"])
			if err != nil {
				t.Errorf("dlqctl %s: %v", commands[c.AppID], err)
				continue
			}
			byID[c.AppID] = append(byID[c.AppID], req)
		}
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		var why []string
		allowed := false
		for _, role := range mine {
			var denied []string
			seen := map[iampolicy.Request]bool{}
			for _, req := range byID[id] {
				if seen[req] {
					continue
				}
				seen[req] = true
				if d := policies[role].Evaluate(req.Action, req.Resource); !d.Allowed {
					denied = append(denied, req.String())
				}
			}
			if len(denied) == 0 {
				allowed = true
				break
			}
			why = append(why, role+" denies "+strings.Join(denied, ", "))
		}
		if !allowed {
			t.Errorf("%s: `dlqctl %s` is not allowed by any of its roles in docs/iam.md (%s): %s", runbook, commands[id], strings.Join(mine, ", "), strings.Join(why, "; "))
		}
	}
	if len(ids) == 0 {
		t.Errorf("%s: no AWS call was recorded", runbook)
	}
}
