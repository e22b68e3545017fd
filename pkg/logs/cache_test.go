package logs

import (
	"os"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func TestCacheKeepsFindingsAndForgetsSilenceAfterAnHour(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	open := func(refresh bool) *Cache {
		c := OpenCache(dir, []string{"/g"}, "", refresh)
		c.now = func() time.Time { return now }
		return c
	}
	found := &record.Failure{Format: "logs", Reason: "connection refused", Evidence: []record.Evidence{{Field: "logs.err", Kind: "message", Text: "connection refused"}}}
	silent := &record.Failure{Source: &record.FailureSource{Note: NotFoundNote}}
	if err := open(false).putAll(map[string]*record.Failure{"a": found, "b": silent}); err != nil {
		t.Fatal(err)
	}
	// A crash can leave a line cut short: it is skipped, not fatal.
	fh, err := os.OpenFile(open(false).Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"id":"c","at":"2024-05-01T12:00:00Z","fail`)
	fh.Close()

	c := open(false)
	if f, ok := c.get("a"); !ok || f.Reason != "connection refused" {
		t.Errorf("found failure not cached: %v %v", f, ok)
	}
	if _, ok := c.get("b"); !ok {
		t.Error("'nothing found' not reused within the hour")
	}
	if _, ok := c.get("c"); ok {
		t.Error("a cut-short line was used")
	}
	now = now.Add(NegativeTTL + time.Minute)
	c = open(false)
	if _, ok := c.get("b"); ok {
		t.Error("'nothing found' reused after an hour: late log events would never be seen")
	}
	if _, ok := c.get("a"); !ok {
		t.Error("a finding expired")
	}
	if _, ok := open(true).get("a"); ok {
		t.Error("--logs-refresh used the cache")
	}
	if OpenCache(dir, []string{"/other"}, "", false).Path() == c.Path() || OpenCache(dir, []string{"/g"}, "6h", false).Path() == c.Path() {
		t.Error("other groups or another window share the cache file")
	}
}
