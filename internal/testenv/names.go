package testenv

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// BucketName returns a unique S3 bucket name (3-63 characters of [a-z0-9-],
// starting and ending with a letter or digit) built like UniqueName.
// versitygw starts without buckets; create it with CreateBucket.
func BucketName(t testing.TB, prefix string) string {
	t.Helper()
	n := strings.ToLower(UniqueName(t, prefix))
	n = strings.ReplaceAll(n, "_", "-")
	for strings.Contains(n, "--") {
		n = strings.ReplaceAll(n, "--", "-")
	}
	n = strings.Trim(n, "-")
	if len(n) < 3 {
		n = "b-" + n
	}
	return n
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
// test process and returns the binary's path. Every build of a checkout goes
// to the same place, <tmp>/dlqctl-testbin-<hash of repo root>/dlqctl, via an
// atomic rename, so parallel test packages share it safely and nothing piles
// up in the temp dir.
//
// make test builds the binary once before the test packages start and names
// it in DLQCTL_TEST_BINARY (each of the dozen packages that run dlqctl as a
// process would otherwise link its own copy): when that file exists it is
// used as it is.
func BuildBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("DLQCTL_TEST_BINARY"); p != "" {
			if _, err := os.Stat(p); err == nil {
				buildPath = p
				return
			}
		}
		root, err := RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(os.TempDir(), "dlqctl-testbin-"+hex.EncodeToString(sum[:6]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		exe := ""
		if runtime.GOOS == "windows" {
			exe = ".exe"
		}
		tmp := filepath.Join(dir, fmt.Sprintf("dlqctl.%d.tmp%s", os.Getpid(), exe))
		// `go test` puts its own GOROOT/bin first on PATH.
		cmd := exec.Command("go", "build", "-o", tmp, ".")
		cmd.Dir = root
		if buildOut, buildErr = cmd.CombinedOutput(); buildErr != nil {
			os.Remove(tmp)
			return
		}
		buildPath = filepath.Join(dir, "dlqctl"+exe)
		if buildErr = os.Rename(tmp, buildPath); buildErr != nil {
			os.Remove(tmp)
		}
	})
	if buildErr != nil {
		t.Fatalf("building dlqctl: %v\n%s", buildErr, buildOut)
	}
	return buildPath
}
