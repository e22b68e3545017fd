package transform

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// fillDLQ sends n fixable and u unfixable orders straight to a DLQ (the
// kill test needs volume, not a real dead-lettering).
func fillDLQ(t *testing.T, c *awssqs.Client, url string, n, u int) (fixable, unfixable []string) {
	t.Helper()
	for i := range n {
		fixable = append(fixable, orderBody(i, true))
	}
	for i := range u {
		unfixable = append(unfixable, orderBody(100000+i, false))
	}
	all := append(append([]string{}, fixable...), unfixable...)
	rand.Shuffle(len(all), func(a, b int) { all[a], all[b] = all[b], all[a] })
	for i := 0; i < len(all); i += 10 {
		var e []types.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, len(all)); j++ {
			e = append(e, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(all[j]),
				MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}})
		}
		if _, err := c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: e}); err != nil {
			t.Fatal(err)
		}
	}
	return fixable, unfixable
}

// consume receives and deletes every message of url and returns them.
func consume(t *testing.T, c *awssqs.Client, url string) []received {
	t.Helper()
	var out []received
	for empty := 0; empty < 3; {
		r, err := c.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			VisibilityTimeout: 300, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		var del []types.DeleteMessageBatchRequestEntry
		for k, m := range r.Messages {
			out = append(out, received{Body: aws.ToString(m.Body), Attrs: m.MessageAttributes})
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := c.DeleteMessageBatch(context.Background(), &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTransformKill9LosesNothingAndReportsDuplicates: a transforming
// redrive (SendMessageBatch slowed by 300 ms, so a kill lands in flight)
// is killed with SIGKILL at a random point and run again. Nothing is lost
// (every fixable original has a repaired copy), no message is both in the
// DLQ and sent (the DLQ holds exactly the unfixable ones), a copy that
// arrived twice is among those the re-run reports, and the archive's
// manifest lists every original exactly once, byte for byte.
func TestTransformKill9LosesNothingAndReportsDuplicates(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	penv, _ := clitest.Proxied(t, env, faultproxy.Fault{Action: "SendMessageBatch", Kind: faultproxy.Latency, Delay: 300 * time.Millisecond})
	const n, u = 400, 15
	for trial := range 2 {
		dlqName := testenv.UniqueName(t, "xf-kill")
		dlq, _ := clitest.CreateQueue(t, c, dlqName, nil)
		destName := testenv.UniqueName(t, "xf-killd")
		dest, _ := clitest.CreateQueue(t, c, destName, nil)
		fixable, unfixable := fillDLQ(t, c, dlq, n, u)
		bucket := clitest.Bucket(t, env, "xfkill")
		state := t.TempDir()
		conc := []int{2, 4, 8}[rand.IntN(3)]
		args := []string{"--state-dir", state, "redrive", dlqName, "--to", destName, "--transform", fixExpr,
			"--archive-originals", "s3://" + bucket + "/orig", "--concurrency", strconv.Itoa(conc), "--visibility", "5s", "--yes", "-o", "json"}
		victim := clitest.BinCmd(t, penv, args...)
		var vout, verr bytes.Buffer
		victim.Stdout, victim.Stderr = &vout, &verr
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		at := n/10 + rand.IntN(n/2)
		deadline := time.Now().Add(3 * time.Minute)
		for {
			v, _ := clitest.QueueDepth(t, c, dest)
			if v >= at {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the redrive moved nothing within 3 minutes: %s", verr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = victim.Wait()

		r := clitest.Run(t, env, "", args...)
		if r.Code != 4 {
			t.Fatalf("re-run: exit %d (want 4: the unfixable stay)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "resuming unfinished run") {
			t.Errorf("the re-run did not resume the killed run:\n%s", r.Stderr)
		}
		var sum cmd.RedriveSummary
		if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil {
			t.Fatal(err)
		}
		reported := map[string]bool{}
		for _, m := range sum.MaybeTwiceMessages {
			reported[m.Orig] = true
		}

		// The destination: one repaired copy of every fixable original;
		// a second only for a reported one.
		want := map[string]bool{}
		for i := range fixable {
			want[repaired(i)] = true
		}
		byOrig := map[string]int{}
		origBody := map[string]string{}
		for _, m := range consume(t, c, dest) {
			if !want[m.Body] {
				t.Fatalf("an unexpected copy: %s", m.Body)
			}
			var mk transform.Marker
			if err := json.Unmarshal([]byte(aws.ToString(m.Attrs[transform.Attribute].StringValue)), &mk); err != nil || mk.OriginalID == "" {
				t.Fatalf("a copy without provenance: %+v", m.Attrs)
			}
			byOrig[mk.OriginalID]++
			if prev, ok := origBody[mk.OriginalID]; ok && prev != m.Body {
				t.Fatalf("two different copies of %s", mk.OriginalID)
			}
			origBody[mk.OriginalID] = m.Body
		}
		if len(byOrig) != n {
			t.Fatalf("copies of %d distinct originals at the destination, want %d (none lost)", len(byOrig), n)
		}
		dups := 0
		for orig, k := range byOrig {
			if k > 1 {
				dups += k - 1
				if !reported[orig] {
					t.Errorf("%s arrived %d times and the re-run did not report it", orig, k)
				}
			}
		}
		// The DLQ: exactly the unfixable, unchanged.
		left := bodies(consume(t, c, dlq))
		if len(left) != u {
			t.Fatalf("the DLQ holds %d message(s), want the %d unfixable", len(left), u)
		}
		for _, b := range unfixable {
			if left[b] != 1 {
				t.Fatalf("unfixable %s: %d in the DLQ", b, left[b])
			}
		}
		// The archive: every original once, verified.
		xo := sum.Transform.Originals
		if xo == nil || xo.Manifest == "" || xo.Records != n {
			t.Fatalf("originals %+v; want a manifest of %d records", xo, n)
		}
		if v := clitest.Run(t, env, "", "archive", "verify", xo.Manifest); v.Code != 0 {
			t.Fatalf("archive verify: exit %d %s", v.Code, v.Stderr)
		}
		arch := map[string]int{}
		for _, rec := range clitest.SampleArchive(t, env, xo.Manifest) {
			arch[rec.Body]++
		}
		for _, b := range fixable {
			if arch[b] != 1 {
				t.Fatalf("original %s is %d time(s) in the archive", b, arch[b])
			}
		}
		if sum.Status != redrive.StatusPartial {
			t.Errorf("status %s", sum.Status)
		}
		t.Logf("trial %d: --concurrency %d, killed after %d copies: %d duplicate(s), %d reported, %d archive part(s)", trial, conc, at, dups, len(reported), xo.Parts)
	}
}
