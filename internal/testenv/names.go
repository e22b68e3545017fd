package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// MaxUniqueNameLen bounds UniqueName results. SQS allows 80 characters; the
// headroom lets callers append suffixes such as "-dlq" or ".fifo".
const MaxUniqueNameLen = 60

var nameSeq atomic.Uint64

// UniqueName returns a short name that is unique across tests and test
// processes sharing one stack, made only of [A-Za-z0-9_-] (valid for SQS
// queues; lower-case it for S3 buckets). It reads
// PREFIX-<test name tail>-<random><sequence>, e.g. "dlq-TestRedrive-3f9a1c7b2e1".
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var rnd [5]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatalf("testenv.UniqueName: %v", err)
	}
	suffix := hex.EncodeToString(rnd[:]) + base36(nameSeq.Add(1))

	name := t.Name()
	if i := strings.LastIndexByte(name, '/'); i >= 0 && i+1 < len(name) {
		name = name[i+1:] // subtest name is the informative part
	}
	parts := []string{}
	if p := clean(prefix, 24); p != "" {
		parts = append(parts, p)
	}
	room := MaxUniqueNameLen - len(suffix) - 1
	for _, p := range parts {
		room -= len(p) + 1
	}
	if n := clean(name, min(room, 20)); n != "" {
		parts = append(parts, n)
	}
	return strings.Join(append(parts, suffix), "-")
}

// clean keeps [A-Za-z0-9_-], maps everything else to '_' (runs collapsed),
// trims separators at both ends and truncates to max bytes.
func clean(s string, max int) string {
	if max <= 0 {
		return ""
	}
	var b strings.Builder
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			r = '_'
		}
		if r == '_' && strings.HasSuffix(b.String(), "_") {
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
	}
	return strings.Trim(out, "-_")
}

func base36(n uint64) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if n == 0 {
		return "0"
	}
	var buf [13]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = digits[n%36]
		n /= 36
	}
	return string(buf[i:])
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
	buildOut  []byte
)

// BuildBinary builds the dlqctl main package (the repository root) once per
// test process and returns the binary's path. The binary lives in a
// process-wide temporary directory so every test can share it.
func BuildBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "dlqctl-testbin-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "dlqctl")
		if runtime.GOOS == "windows" {
			bin += ".exe"
		}
		// `go test` puts its own GOROOT/bin first on PATH.
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = root
		buildOut, buildErr = cmd.CombinedOutput()
		buildPath = bin
	})
	if buildErr != nil {
		t.Fatalf("building dlqctl: %v\n%s", buildErr, buildOut)
	}
	return buildPath
}
