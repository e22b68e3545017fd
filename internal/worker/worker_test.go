package worker

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFailsByMode(t *testing.T) {
	null := `{"eventType":"OrderPaid","payload":{"order":"o1","amount":null}}`
	fine := `{"eventType":"OrderPaid","payload":{"order":"o1","amount":12.5}}`
	cases := []struct {
		mode, body string
		want       bool
	}{
		{ModeBug, null, true}, {ModeBug, fine, false}, {ModeBug, "plain text", false},
		{ModeBug, `{"items":[{"amount":null}]}`, true},
		{ModeOK, null, false}, {ModeDown, fine, true},
	}
	for _, c := range cases {
		if got := Fails(c.mode, c.body); got != c.want {
			t.Errorf("Fails(%s, %s) = %v, want %v", c.mode, c.body, got, c.want)
		}
	}
}

func TestModeFileShipsTheFix(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mode")
	if got := ReadMode(p, ModeBug); got != ModeBug {
		t.Fatalf("missing file: %s, want default bug", got)
	}
	os.WriteFile(p, []byte("ok\n"), 0o600)
	if got := ReadMode(p, ModeBug); got != ModeOK {
		t.Fatalf("after writing ok: %s", got)
	}
	os.WriteFile(p, []byte("nonsense"), 0o600)
	if got := ReadMode(p, ModeDown); got != ModeDown {
		t.Fatalf("unknown content must fall back to the default, got %s", got)
	}
}
