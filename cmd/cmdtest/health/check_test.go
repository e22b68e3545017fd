package health

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/seed"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/health"
	"github.com/dlqctl/dlqctl/pkg/output"
)

func TestCheckFlagsParseIntoOptions(t *testing.T) {
	parse := func(args ...string) *cmd.CheckOptions {
		t.Helper()
		var got *cmd.CheckOptions
		f := &cmd.Factory{IO: output.Test(nil, &bytes.Buffer{}, &bytes.Buffer{}, false)}
		c := cmd.NewCmdCheck(f, func(_ context.Context, o *cmd.CheckOptions) error { got = o; return nil })
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	o := parse("orders-dlq")
	if o.MaxVisible == nil || *o.MaxVisible != 0 || !o.DefaultedVisible || o.MaxAge != 0 || o.MaxGrowth != nil {
		t.Errorf("no thresholds should mean --max-visible 0: %+v", o)
	}
	o = parse("orders-dlq", "--max-age", "2d", "--max-growth", "50/5m", "--growth-sample", "30s")
	if o.MaxVisible != nil || o.MaxAge != 48*time.Hour || *o.MaxGrowth != (health.GrowthLimit{N: 50, Window: 5 * time.Minute}) || o.GrowthSample != 30*time.Second {
		t.Errorf("options = %+v", o)
	}

	for _, args := range [][]string{
		{"check"},
		{"check", "q", "--max-growth", "lots"},
		{"check", "q", "--max-age", "0s"},
		{"check", "q", "--max-visible", "-1"},
		{"check", "q", "--sample", "0"},
		{"check", "q", "--growth-sample", "5s"},
	} {
		res := clitest.Run(t, testenv.Env{}, "", args...)
		if res.Code != 2 || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, res.Code, res.Stderr)
		}
	}
}

func TestCheckThresholds(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	name := testenv.UniqueName(t, "chk")
	url, _ := clitest.CreateQueue(t, c, name, nil)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	fill := func(n int) {
		t.Helper()
		if err := seed.FillDLQ(t.Context(), c, url, n, func(i int) string { return fmt.Sprintf(`{"n":%d,"at":%d}`, i, time.Now().UnixNano()) }); err != nil {
			t.Fatal(err)
		}
	}
	fill(5)

	t.Run("visible", func(t *testing.T) {
		below := clitest.Run(t, env, "", "check", name, "--max-visible", "10")
		if below.Code != 0 || !strings.HasPrefix(below.Stdout, "ok\tvisible\t5\t10\t") {
			t.Fatalf("below: exit %d stdout %q stderr %q", below.Code, below.Stdout, below.Stderr)
		}
		above := clitest.Run(t, env, "", "check", name, "--max-visible", "4")
		if above.Code != 3 || !strings.HasPrefix(above.Stdout, "breach\tvisible\t5\t4\t") || !strings.Contains(above.Stderr, "1 of 1 threshold(s) breached: visible") {
			t.Fatalf("above: exit %d stdout %q stderr %q", above.Code, above.Stdout, above.Stderr)
		}
		// No threshold at all: any visible message is a breach.
		if d := clitest.Run(t, env, "", "check", name); d.Code != 3 {
			t.Fatalf("default check of a non-empty DLQ: exit %d", d.Code)
		}
	})

	t.Run("oldest age is sampled and messages are released", func(t *testing.T) {
		ok := clitest.Run(t, env, "", "check", name, "--max-age", "1h", "--sample", "3", "--visibility", "5s")
		if ok.Code != 0 || !strings.Contains(ok.Stdout, "ok\toldest_age\t") || !strings.Contains(ok.Stdout, "oldest of 3 sampled messages (of ~5 visible); sampled") {
			t.Fatalf("exit %d stdout %q stderr %q", ok.Code, ok.Stdout, ok.Stderr)
		}
		time.Sleep(2100 * time.Millisecond)
		old := clitest.Run(t, env, "", "check", name, "--max-age", "1s", "--max-visible", "100", "--visibility", "5s", "-o", "json")
		var rep health.CheckReport
		if err := json.Unmarshal([]byte(old.Stdout), &rep); err != nil {
			t.Fatalf("json: %v\n%s", err, old.Stdout)
		}
		if old.Code != 3 || rep.OK || len(rep.Results) != 2 || rep.Results[0].Status != "ok" || rep.Results[1].Name != "oldest_age" ||
			rep.Results[1].Status != "breach" || rep.Results[1].Value < 2 || !rep.Results[1].Sampled {
			t.Fatalf("exit %d report %+v", old.Code, rep)
		}
		if vis, inflight := clitest.SettledDepth(t, c, url); vis != 5 || inflight != 0 {
			t.Fatalf("after sampling: %d visible, %d in flight; want 5, 0", vis, inflight)
		}
	})

	t.Run("growth compares with the previous run's reading", func(t *testing.T) {
		state := t.TempDir()
		args := []string{"check", name, "--max-growth", "3/2s", "--state-dir", state}
		first := clitest.Run(t, env, "", args...)
		if first.Code != 0 || !strings.HasPrefix(first.Stdout, "unknown\tgrowth\t?\t3/2s\t") {
			t.Fatalf("first run: exit %d stdout %q", first.Code, first.Stdout)
		}
		fill(10)
		time.Sleep(1100 * time.Millisecond) // at least half the window
		second := clitest.Run(t, env, "", args...)
		if second.Code != 3 || !strings.HasPrefix(second.Stdout, "breach\tgrowth\t+") || !strings.Contains(second.Stdout, "depth 5 → 15 over") {
			t.Fatalf("second run: exit %d stdout %q", second.Code, second.Stdout)
		}
		// A window later the reading closest to 2s ago is the second run's.
		time.Sleep(2100 * time.Millisecond)
		third := clitest.Run(t, env, "", args...)
		if third.Code != 0 || !strings.HasPrefix(third.Stdout, "ok\tgrowth\t+0.0/2s\t") {
			t.Fatalf("third run (no new messages): exit %d stdout %q", third.Code, third.Stdout)
		}
		// Without history, --growth-sample measures now.
		now := clitest.Run(t, env, "", "check", name, "--max-growth", "100/5m", "--growth-sample", "1s", "--state-dir", t.TempDir())
		if now.Code != 0 || !strings.Contains(now.Stdout, "measured now") {
			t.Fatalf("growth sample: exit %d stdout %q", now.Code, now.Stdout)
		}
	})
}
