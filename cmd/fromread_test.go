package cmd_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/benchdata"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// TestFromReadMatchesReference: classify and group --from print exactly
// what they printed with the sequential encoding/json reader (the reader
// before the parallel one), on real-format records (every corpus format,
// the seeded incident's messages, records as `sample -o ndjson` writes
// them and bare ones), odd lines (escapes, invalid UTF-8, CRLF, blank
// lines), gzip input, and a file with a bad line in the middle (same
// records printed before the same error).
func TestFromReadMatchesReference(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	tpl, err := benchdata.Templates(corpus.Dir(".."), now)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	// Every template from every source queue the benchmark file uses (it
	// cycles through the templates, five sources in turn): the whole of
	// what `make bench` reads, up to message ids and times.
	if err := benchdata.Write(&buf, tpl, 5*len(tpl), now); err != nil {
		t.Fatal(err)
	}
	// Bare records (no decoded fields), as a hand-written file has them.
	for i, r := range tpl {
		r.MessageID = fmt.Sprintf("bare-%d", i)
		line, err := inspect.MarshalRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteString("\r\n\n")
	}
	buf.WriteString(`  {"message_id":"esc-1","body":"{\"error\":\"timeout after 30s \u00e9 \ud83d\ude00 \ud800\",\"n\":1e3}","attributes":{"tenant":{"type":"String","value":"t-\u00e9"}},"system":{"receive_count":2,"sent_at":"2026-11-30T03:15:00Z"}}` + "\n")
	buf.WriteString("{\"message_id\":\"utf8-1\",\"body\":\"{\\\"reason\\\":\\\"bad \xff\xfe bytes: connection reset\\\"}\",\"Class\":\"x\"}\n")
	buf.WriteString(`{"message_id":"dup-1","body":"plain text","body":"{\"failure_reason\":\"429 Too Many Requests\"}","age_seconds":7}` + "\n")
	good := buf.Bytes()
	file := filepath.Join(dir, "records.ndjson")
	writeFile(t, file, good)
	gz := filepath.Join(dir, "records.ndjson.gz")
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(good)
	zw.Close()
	writeFile(t, gz, zb.Bytes())
	lines := strings.SplitAfter(string(good), "\n")
	half := len(lines) / 2
	bad := filepath.Join(dir, "bad.ndjson")
	writeFile(t, bad, []byte(strings.Join(lines[:half], "")+`{"message_id":"broken","body":`+"\n"+strings.Join(lines[half:], "")))

	runs := [][]string{
		{"classify", "--from", file, "--summary", "-o", "json"},
		{"classify", "--from", file, "-o", "ndjson"},
		{"classify", "--from", file, "-o", "json", "--class", "transient", "--no-redact"},
		{"classify", "--from", file, "-o", "ndjson", "--filter", `.system.receive_count > 2`},
		{"group", "--from", file, "--by", "source,error,format,shape,event_type,tenant", "-o", "json"},
		{"group", "--from", file, "--by", "class,.envelope.tenant_id", "-o", "json"},
		{"sample", "--from", file, "-n", "50", "--filter", `.failure != null`, "-o", "ndjson"},
		{"classify", "--from", gz, "--summary", "-o", "json"},
		{"group", "--from", gz, "--by", "error", "-o", "json", "--sample", "100"},
		{"classify", "--from", bad, "-o", "ndjson", "--no-redact"},
		{"group", "--from", bad, "--by", "source", "-o", "json"},
	}
	for i, args := range runs {
		t.Run(fmt.Sprintf("%d-%s", i, args[0]), func(t *testing.T) {
			cmd.SetReferenceReader(true)
			want := clitest.Run(t, testenv.Env{}, "", args...)
			cmd.SetReferenceReader(false)
			got := clitest.Run(t, testenv.Env{}, "", args...)
			if got.Code != want.Code || got.Stderr != want.Stderr {
				t.Fatalf("exit %d, stderr %q; the reference reader: exit %d, stderr %q", got.Code, got.Stderr, want.Code, want.Stderr)
			}
			if got.Stdout != want.Stdout {
				t.Fatalf("stdout differs from the reference reader's (%d vs %d bytes)\n got: %.600s\nwant: %.600s", len(got.Stdout), len(want.Stdout), got.Stdout, want.Stdout)
			}
			switch {
			case args[2] == bad && (got.Code != 2 || !strings.Contains(got.Stderr, fmt.Sprintf("bad.ndjson:%d: not a message record", half+1))):
				t.Fatalf("bad line %d: exit %d, stderr %q", half+1, got.Code, got.Stderr)
			case args[2] == bad && args[0] == "classify" && strings.Count(got.Stdout, "\n") < half/2:
				t.Fatalf("only %d records printed before the bad line %d", strings.Count(got.Stdout, "\n"), half+1)
			case args[2] != bad && (got.Code != 0 || len(got.Stdout) < 100):
				t.Fatalf("exit %d, output %q (stderr %q)", got.Code, got.Stdout, got.Stderr)
			}
		})
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
