package clitest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// The JSON Schemas of docs/schema are the contract of dlqctl's -o json and
// -o ndjson output for scripts. Run checks every such output the command
// tests produce against them (CheckOutputContract), so a renamed field, a
// type change or a missing core field fails the test that printed it.

const schemaBase = "https://github.com/dlqctl/dlqctl/docs/schema/"

var (
	schemaOnce sync.Once
	schemas    map[string]*jsonschema.Schema
	schemaErr  error
)

// schemaRefs are the schemas (and subschemas) outputs are checked against.
var schemaRefs = []string{
	"message-record.schema.json",
	"redrive-summary.schema.json",
	"restore-summary.schema.json",
	"archive-summary.schema.json",
	"progress-event.schema.json",
	"group-report.schema.json",
	"group-report.schema.json#/$defs/group",
	"classify-summary.schema.json",
	"classify-summary.schema.json#/$defs/class",
	"native-task.schema.json",
	"dry-run-plan.schema.json#/$defs/redrive",
	"dry-run-plan.schema.json#/$defs/restore",
	"dry-run-plan.schema.json#/$defs/archive",
	"health.schema.json#/$defs/queues",
	"health.schema.json#/$defs/dlq",
	"health.schema.json#/$defs/kafka_topics",
	"health.schema.json#/$defs/kafka_topic",
	"health.schema.json#/$defs/audit",
	"health.schema.json#/$defs/finding",
	"health.schema.json#/$defs/check",
	"health.schema.json#/$defs/tick",
	"health.schema.json#/$defs/runs",
	"health.schema.json#/$defs/run",
	"archive-verify.schema.json",
	"archive-verify.schema.json#/$defs/event",
	"doctor.schema.json",
	"doctor.schema.json#/$defs/check",
}

func loadSchemas(t testing.TB) map[string]*jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		root, err := testenv.RepoRoot()
		if err != nil {
			schemaErr = err
			return
		}
		files, err := filepath.Glob(filepath.Join(root, "docs", "schema", "*.schema.json"))
		if err != nil || len(files) == 0 {
			schemaErr = err
			if schemaErr == nil {
				schemaErr = os.ErrNotExist
			}
			return
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				schemaErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				schemaErr = err
				return
			}
			if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
				schemaErr = err
				return
			}
		}
		schemas = map[string]*jsonschema.Schema{}
		for _, ref := range schemaRefs {
			s, err := c.Compile(schemaBase + ref)
			if err != nil {
				schemaErr = err
				return
			}
			schemas[ref] = s
		}
	})
	if schemaErr != nil {
		t.Fatalf("docs/schema: %v", schemaErr)
	}
	return schemas
}

// outputContract says which schema an invocation's stdout follows: json
// is the schema of the whole document ("[]"+ref: an array of them),
// ndjson the schema of each line; "" means no schema (only well-formed
// JSON is checked). summary is the schema of the NDJSON summary event.
type outputContract struct {
	format                string
	json, ndjson, summary string
}

// contractFor reads the command, subcommand, -o and modes from args.
func contractFor(args []string) outputContract {
	valueFlags := map[string]bool{"-o": true, "--output": true, "--region": true, "--profile": true, "--endpoint-url": true,
		"--sqs-endpoint-url": true, "--s3-endpoint-url": true, "--state-dir": true, "--bucket-owner": true}
	commands := map[string]bool{"sample": true, "group": true, "classify": true, "redrive": true, "restore": true, "archive": true,
		"queues": true, "audit": true, "check": true, "watch": true, "runs": true, "doctor": true}
	var c outputContract
	c.format = "table"
	cmd, sub, engine := "", "", ""
	has := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" || a == "--output":
			if i+1 < len(args) {
				c.format = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--output="):
			c.format = strings.TrimPrefix(a, "--output=")
		case strings.HasPrefix(a, "-o") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			c.format = strings.TrimPrefix(a[2:], "=")
		case strings.HasPrefix(a, "-"):
			name, val, eq := strings.Cut(a, "=")
			has[name] = true
			if name == "--engine" {
				if !eq && i+1 < len(args) {
					val = args[i+1]
					i++
				}
				engine = val
			}
			if valueFlags[a] {
				i++
			}
		case cmd == "" && commands[a]:
			cmd = a
		case cmd != "" && sub == "":
			sub = a
		}
	}
	if has["--explain"] {
		return c // explanations: well-formed JSON only
	}
	if has["--dry-run"] {
		switch cmd {
		case "redrive", "restore", "archive":
			plan := "dry-run-plan.schema.json#/$defs/" + cmd
			c.json, c.ndjson, c.summary = plan, "progress-event.schema.json", plan
		}
		return c
	}
	switch cmd {
	case "sample":
		c.json, c.ndjson = "[]message-record.schema.json", "message-record.schema.json"
	case "classify":
		if has["--summary"] {
			c.json, c.ndjson = "classify-summary.schema.json", "classify-summary.schema.json#/$defs/class"
		} else {
			c.json, c.ndjson = "[]message-record.schema.json", "message-record.schema.json"
		}
	case "group":
		c.json, c.ndjson = "group-report.schema.json", "group-report.schema.json#/$defs/group"
	case "redrive":
		if sub == "status" || sub == "cancel" || sub == "resume" {
			return c
		}
		if has["--engine"] && engine == "native" {
			c.json, c.ndjson, c.summary = "native-task.schema.json", "progress-event.schema.json", "native-task.schema.json"
			return c
		}
		c.json, c.ndjson, c.summary = "redrive-summary.schema.json", "progress-event.schema.json", "redrive-summary.schema.json"
	case "restore":
		c.json, c.ndjson, c.summary = "restore-summary.schema.json", "progress-event.schema.json", "restore-summary.schema.json"
	case "queues":
		c.json, c.ndjson = "health.schema.json#/$defs/queues", "health.schema.json#/$defs/queue_entry"
		if strings.HasPrefix(sub, "kafka://") {
			c.json, c.ndjson = "health.schema.json#/$defs/kafka_topics", "health.schema.json#/$defs/kafka_topic"
		}
	case "audit":
		c.json, c.ndjson = "health.schema.json#/$defs/audit", "health.schema.json#/$defs/finding"
	case "check":
		c.json, c.ndjson = "health.schema.json#/$defs/check", "health.schema.json#/$defs/check"
	case "watch":
		// one tick per line in both formats
		c.json, c.ndjson = "health.schema.json#/$defs/tick", "health.schema.json#/$defs/tick"
		if c.format == "json" {
			c.format = "ndjson"
		}
	case "runs":
		c.json, c.ndjson = "health.schema.json#/$defs/runs", "health.schema.json#/$defs/run"
	case "doctor":
		c.json, c.ndjson = "doctor.schema.json", "doctor.schema.json#/$defs/check"
	case "archive":
		if sub == "verify" {
			c.json, c.ndjson = "archive-verify.schema.json", "archive-verify.schema.json#/$defs/event"
			return c
		}
		c.json, c.ndjson, c.summary = "archive-summary.schema.json", "progress-event.schema.json", "archive-summary.schema.json"
	}
	return c
}

// CheckOutputContract validates the stdout of one dlqctl invocation
// against its schema (see contractFor). Table output is not checked.
func CheckOutputContract(t testing.TB, args []string, res Result) {
	t.Helper()
	c := contractFor(args)
	out := strings.TrimSpace(res.Stdout)
	if out == "" || (c.format != "json" && c.format != "ndjson") {
		return
	}
	s := loadSchemas(t)
	check := func(ref, doc, where string) {
		t.Helper()
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Errorf("dlqctl %s: %s is not JSON (%v):\n%s", strings.Join(args, " "), where, err, Clip(doc))
			return
		}
		if ref == "" {
			return
		}
		if strings.HasPrefix(ref, "[]") {
			arr, ok := inst.([]any)
			if !ok {
				t.Errorf("dlqctl %s: %s is not an array (%s):\n%s", strings.Join(args, " "), where, ref, Clip(doc))
				return
			}
			for i, el := range arr {
				if err := s[ref[2:]].Validate(el); err != nil {
					t.Errorf("dlqctl %s: %s element %d breaks docs/schema/%s: %v", strings.Join(args, " "), where, i, ref[2:], err)
				}
			}
			return
		}
		if err := s[ref].Validate(inst); err != nil {
			t.Errorf("dlqctl %s: %s breaks docs/schema/%s: %v\n%s", strings.Join(args, " "), where, ref, err, Clip(doc))
		}
	}
	if c.format == "json" {
		check(c.json, out, "stdout")
		return
	}
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		where := "stdout line " + strconv.Itoa(i+1)
		check(c.ndjson, line, where)
		if c.summary != "" && strings.HasPrefix(line, `{"type":"summary"`) {
			check(c.summary, line, where+" (summary event)")
		}
	}
}

// Clip shortens s to 2000 bytes for a failure message.
func Clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}
