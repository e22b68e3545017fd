package testenv

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvKafkaBrokers is the bootstrap address list ("HOST:PORT[,HOST:PORT…]")
// of the stack's Kafka-protocol server (franz-go's kfake, run as its own
// process by scripts/stack.sh).
const EnvKafkaBrokers = "DLQCTL_KAFKA_BROKERS"

var (
	kafkaOnce sync.Once
	kafkaAddr string
	kafkaErr  error
)

// LookupKafka finds the Kafka bootstrap brokers without probing them:
// DLQCTL_KAFKA_BROKERS from the process environment, else from the stack
// env file.
func LookupKafka() (string, error) {
	if v := os.Getenv(EnvKafkaBrokers); v != "" {
		return v, nil
	}
	path, err := EnvFile()
	if err != nil {
		return "", err
	}
	vars, err := readEnvFile(path)
	if err != nil {
		return "", err
	}
	if v := vars[EnvKafkaBrokers]; v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s does not set %s (a stack started by an older scripts/stack.sh: run it again)", path, EnvKafkaBrokers)
}

// RequireKafka returns the stack's Kafka bootstrap address list or stops
// the test exactly as Require does (t.Skip normally, t.Fatal when
// Strict()). The lookup and a TCP probe run once per test process.
func RequireKafka(t testing.TB) string {
	t.Helper()
	kafkaOnce.Do(func() {
		kafkaAddr, kafkaErr = LookupKafka()
		if kafkaErr == nil {
			kafkaErr = probeTCP(strings.Split(kafkaAddr, ",")[0], 2*time.Second)
		}
	})
	if kafkaErr != nil {
		msg := fmt.Sprintf("Kafka test server (kfake) not available: %v (start the stack with `scripts/stack.sh start`)", kafkaErr)
		if Strict() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return kafkaAddr
}

func probeTCP(hostport string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", hostport, timeout)
	if err != nil {
		return fmt.Errorf("%s does not answer: %w", hostport, err)
	}
	return c.Close()
}

var (
	kfakeBuildOnce sync.Once
	kfakeBuildPath string
	kfakeBuildErr  error
)

// KfakeBinary builds scripts/dlqctl-kfake once per test process (into a
// per-checkout temp dir, like BuildBinary) and returns its path.
func KfakeBinary(t testing.TB) string {
	t.Helper()
	kfakeBuildOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			kfakeBuildErr = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(os.TempDir(), "dlqctl-testbin-"+hex.EncodeToString(sum[:6]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			kfakeBuildErr = err
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf("dlqctl-kfake.%d.tmp", os.Getpid()))
		cmd := exec.Command("go", "build", "-o", tmp, "./scripts/dlqctl-kfake")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			kfakeBuildErr = fmt.Errorf("go build ./scripts/dlqctl-kfake: %v\n%s", err, out)
			return
		}
		kfakeBuildPath = filepath.Join(dir, "dlqctl-kfake")
		if kfakeBuildErr = os.Rename(tmp, kfakeBuildPath); kfakeBuildErr != nil {
			os.Remove(tmp)
		}
	})
	if kfakeBuildErr != nil {
		t.Fatalf("testenv.KfakeBinary: %v", kfakeBuildErr)
	}
	return kfakeBuildPath
}

// StartKfake runs a private kfake process (its own cluster, for a test that
// needs SASL, TLS, or to kill the broker) with `serve --port 0` plus args,
// waits until it listens and returns its bootstrap address. The process is
// stopped when the test ends.
func StartKfake(t testing.TB, args ...string) string {
	t.Helper()
	bin := KfakeBinary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--port", "0", "--log-level", "none"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = bufio.NewReader(stdout).WriteTo(io.Discard)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case addr, ok := <-lines:
		if !ok || addr == "" {
			t.Fatal("kfake exited before listening")
		}
		return addr
	case <-ctx.Done():
		t.Fatal("kfake did not start within 30s")
	}
	return ""
}
