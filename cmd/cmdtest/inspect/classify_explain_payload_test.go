package inspect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestExplainSaysWhatTheBodyIs: --explain names the payload encoding, says
// that nothing says the consumer expects JSON, and marks hints found by
// their look (issue 20).
func TestExplainSaysWhatTheBodyIs(t *testing.T) {
	var b strings.Builder
	for id, body := range map[string]string{
		"xml":  `<Order id="o-1"><Total>5</Total></Order>`,
		"hint": `{"eventType":"BuildFinished","payload":{"log":"java.lang.NullPointerException: boom\n\tat a.B.c(B.java:1)\n\tat a.B.d(B.java:2)"}}`,
	} {
		line, _ := json.Marshal(map[string]any{"message_id": id, "body": body, "system": map[string]any{"receive_count": 1}})
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "in.ndjson")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, testenv.Env{}, "", "classify", "--from", path, "--explain", "xml")
	for _, want := range []string{"payload: xml — an XML document (root element <Order>)", "nothing says its consumer expects JSON", "=> class unknown, action investigate"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("explain lacks %q:\n%s%s", want, r.Stdout, r.Stderr)
		}
	}
	r = clitest.Run(t, testenv.Env{}, "", "classify", "--from", path, "--explain", "hint")
	for _, want := range []string{"[type, by its look]", "hints never decide", "=> class unknown"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("explain lacks %q:\n%s%s", want, r.Stdout, r.Stderr)
		}
	}
	j := clitest.Run(t, testenv.Env{}, "", "classify", "--from", path, "--explain", "xml", "-o", "json")
	var rep map[string]any
	if err := json.Unmarshal([]byte(j.Stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, j.Stdout)
	}
	if p, _ := rep["payload"].(map[string]any); p["encoding"] != "xml" {
		t.Errorf("explain JSON payload = %v", rep["payload"])
	}
}
