package procbench_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

func init() {
	// The in-process proxies (faultproxy and the recorder) forward through
	// http.DefaultTransport, which keeps only 2 idle connections per host:
	// with 32 workers most forwarded calls would open a new connection (and
	// leave TIME_WAIT sockets behind). Keep enough for every worker, but
	// close idle ones before local-aws-sqs does (Node's keep-alive timeout
	// is 5 s): reusing a connection the server is closing answers
	// "connection reset by peer", a 502 the programs would have to retry.
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.MaxIdleConns = 512
		t.MaxIdleConnsPerHost = 256
		t.IdleConnTimeout = 3 * time.Second
	}
}

// envInt reads a positive integer from the environment.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(strings.ReplaceAll(os.Getenv(name), "_", "")); err == nil && n > 0 {
		return n
	}
	return def
}

// envList reads a comma-separated list from the environment.
func envList(name, def string) []string {
	v := os.Getenv(name)
	if strings.TrimSpace(v) == "" {
		v = def
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// dlqctlBinary is $DLQCTL_BENCH_BIN, else the working tree built once per
// test process (testenv.BuildBinary).
func dlqctlBinary(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("DLQCTL_BENCH_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("DLQCTL_BENCH_BIN: %v", err)
		}
		return p
	}
	return testenv.BuildBinary(b)
}

var (
	toolsOnce sync.Once
	toolsDir  string
	toolsErr  error
	toolsOut  []byte
)

// benchTools builds ./bareloop and ./launch once per test process, to a
// fixed directory per checkout (atomic renames, like testenv.BuildBinary),
// and returns their paths.
func benchTools(b *testing.B) (bareloop, launch string) {
	b.Helper()
	toolsOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			toolsErr = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		toolsDir = filepath.Join(os.TempDir(), "dlqctl-procbench-"+hex.EncodeToString(sum[:6]))
		tmp := filepath.Join(toolsDir, fmt.Sprintf("build.%d.tmp", os.Getpid()))
		if toolsErr = os.MkdirAll(tmp, 0o755); toolsErr != nil {
			return
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("go", "build", "-o", tmp+string(filepath.Separator), "./internal/procbench/bareloop", "./internal/procbench/launch")
		cmd.Dir = root
		if toolsOut, toolsErr = cmd.CombinedOutput(); toolsErr != nil {
			return
		}
		for _, name := range []string{"bareloop", "launch"} {
			if toolsErr = os.Rename(filepath.Join(tmp, name), filepath.Join(toolsDir, name)); toolsErr != nil {
				return
			}
		}
	})
	if toolsErr != nil {
		b.Fatalf("building the benchmark tools: %v\n%s", toolsErr, toolsOut)
	}
	return filepath.Join(toolsDir, "bareloop"), filepath.Join(toolsDir, "launch")
}

// procResult is one finished subprocess.
type procResult struct {
	Start, End     time.Time // as seen by the benchmark process
	Wall           float64   // seconds from fork to exit (measured by the launcher)
	CPU            float64   // user+system seconds of the program
	PeakRSSMB      float64   // ru_maxrss of the program
	Exit           int
	Stdout, Stderr string
}

// runProc runs argv under ./launch, which reports the program's own
// ru_maxrss (see launch's doc for why the test process cannot read it).
func runProc(b *testing.B, launcher string, environ []string, argv ...string) procResult {
	b.Helper()
	ru := filepath.Join(b.TempDir(), "rusage.json")
	cmd := exec.Command(launcher, append([]string{"-rusage", ru, "--"}, argv...)...)
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := procResult{Start: time.Now()}
	err := cmd.Run()
	r.End = time.Now()
	r.Stdout, r.Stderr = stdout.String(), stderr.String()
	raw, rerr := os.ReadFile(ru)
	if rerr != nil {
		b.Fatalf("%s: %v (no rusage: %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), err, rerr, r.Stdout, tail(r.Stderr, 4000))
	}
	var u struct {
		MaxRSSKB int64   `json:"maxrss_kb"`
		Wall     float64 `json:"wall_s"`
		CPU      float64 `json:"cpu_s"`
		Exit     int     `json:"exit"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		b.Fatalf("rusage %s: %v", raw, err)
	}
	r.Wall, r.CPU, r.PeakRSSMB, r.Exit = u.Wall, u.CPU, float64(u.MaxRSSKB)/1024, u.Exit
	return r
}

// mustSucceed fails the benchmark when the program did not exit 0.
func (r procResult) mustSucceed(b *testing.B, what string) {
	b.Helper()
	if r.Exit != 0 {
		b.Fatalf("%s exited %d\nstdout:\n%s\nstderr:\n%s", what, r.Exit, tail(r.Stdout, 4000), tail(r.Stderr, 4000))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// recorder is a reverse proxy in front of the SQS emulator that counts
// calls by action and notes when calls happened, so a run can be split
// into start-up (process start → first call), work, and tail (last
// DeleteMessageBatch → process exit).
type recorder struct {
	URL string
	srv *httptest.Server

	mu         sync.Mutex
	first      time.Time
	lastDelete time.Time
	lastCall   time.Time
	calls      map[string]int
	inflight   atomic.Int64
}

func newRecorder(target string) (*recorder, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	r := &recorder{calls: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		action := req.Header.Get("X-Amz-Target")
		if i := strings.LastIndexByte(action, '.'); i >= 0 {
			action = action[i+1:]
		}
		now := time.Now()
		r.mu.Lock()
		if r.first.IsZero() {
			r.first = now
		}
		r.calls[action]++
		r.mu.Unlock()
		rp.ServeHTTP(w, req)
		done := time.Now()
		r.mu.Lock()
		r.lastCall = done
		if action == "DeleteMessageBatch" || action == "DeleteMessage" {
			r.lastDelete = done
		}
		r.mu.Unlock()
	}))
	r.URL = r.srv.URL
	return r, nil
}

func (r *recorder) Close() { r.srv.CloseClientConnections(); r.srv.Close() }

// recording is what the recorder saw since the last reset.
type recording struct {
	First, LastDelete, LastCall time.Time
	Calls                       map[string]int
}

func (r *recorder) reset() recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := recording{First: r.first, LastDelete: r.lastDelete, LastCall: r.lastCall, Calls: r.calls}
	r.first, r.lastDelete, r.lastCall, r.calls = time.Time{}, time.Time{}, time.Time{}, map[string]int{}
	return out
}

// newQueue creates a standard queue and deletes it when the benchmark ends;
// the returned drop deletes it earlier (idempotent).
func newQueue(b *testing.B, api *sqs.Client, prefix string) (name, qurl string, drop func()) {
	b.Helper()
	name = testenv.UniqueName(b, prefix)
	out, err := api.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		b.Fatal(err)
	}
	qurl = aws.ToString(out.QueueUrl)
	var once sync.Once
	drop = func() {
		once.Do(func() {
			_, _ = api.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(qurl)})
		})
	}
	b.Cleanup(drop)
	return name, qurl, drop
}

// seedConcurrency is the number of concurrent SendMessageBatch calls that
// fill a queue (straight to the emulator, never through a proxy).
const seedConcurrency = 16

// seedQueue sends n ~200-byte JSON messages with three message attributes
// to qurl and waits until the queue counts them all.
func seedQueue(b *testing.B, api *sqs.Client, qurl string, n int) {
	b.Helper()
	ctx := context.Background()
	pad := strings.Repeat("p", 90)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range seedConcurrency {
		wg.Go(func() {
			for lo := range jobs {
				hi := min(lo+10, n)
				entries := make([]types.SendMessageBatchRequestEntry, 0, hi-lo)
				for i := lo; i < hi; i++ {
					entries = append(entries, types.SendMessageBatchRequestEntry{
						Id:          aws.String(strconv.Itoa(i - lo)),
						MessageBody: aws.String(fmt.Sprintf(`{"eventId":"evt-%08d","eventType":"OrderCreated","tenant":"t-%03d","payload":{"orderId":"o-%d","note":"%s"}}`, i, i%100, i, pad)),
						MessageAttributes: map[string]types.MessageAttributeValue{
							"eventType":   {DataType: aws.String("String"), StringValue: aws.String("OrderCreated")},
							"attempt":     {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(1 + i%5))},
							"traceparent": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("00-%032x-%016x-01", i, i))},
						},
					})
				}
				for attempt := 0; ; attempt++ {
					out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(qurl), Entries: entries})
					if err == nil && len(out.Failed) == 0 {
						break
					}
					if err == nil { // resend only the failed entries
						failed := map[string]bool{}
						for _, f := range out.Failed {
							failed[aws.ToString(f.Id)] = true
						}
						var again []types.SendMessageBatchRequestEntry
						for _, e := range entries {
							if failed[aws.ToString(e.Id)] {
								again = append(again, e)
							}
						}
						entries = again
						err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
					}
					if attempt == 5 {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						break
					}
					time.Sleep(100 * time.Millisecond << attempt)
				}
			}
		})
	}
	for lo := 0; lo < n; lo += 10 {
		jobs <- lo
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("seeding %d messages: %v", n, firstErr)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		c := counts(b, api, qurl)
		if c.Visible == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("seeded %d messages, the queue counts %+v", n, c)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// queueCounts are a queue's approximate counts.
type queueCounts struct{ Visible, InFlight, Delayed int }

func (c queueCounts) total() int { return c.Visible + c.InFlight + c.Delayed }

func counts(b *testing.B, api *sqs.Client, qurl string) queueCounts {
	b.Helper()
	out, err := api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(qurl),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	get := func(k types.QueueAttributeName) int {
		v, _ := strconv.Atoi(out.Attributes[string(k)])
		return v
	}
	return queueCounts{
		Visible:  get(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight: get(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:  get(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
	}
}

// expectCounts fails unless src is empty (nothing visible, in flight or
// delayed) and dest holds exactly n visible messages.
func expectCounts(b *testing.B, api *sqs.Client, what, srcURL, destURL string, n int) {
	b.Helper()
	src, dest := counts(b, api, srcURL), counts(b, api, destURL)
	if src.total() != 0 || dest.Visible != n || dest.total() != n {
		b.Fatalf("%s: source holds %+v (want empty), destination %+v (want %d visible)", what, src, dest, n)
	}
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// fmtAll formats xs with the given verb, e.g. "[812 797]".
func fmtAll(verb string, xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(verb, x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
