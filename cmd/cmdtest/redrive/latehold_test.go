package redrive

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
)

// A process killed while a receive of its was on the way leaves a hold
// ledger that covers that receive from the moment it was sent. A server
// that answered it late (slowed down; the process dead by then) hides what
// it handed out past the ledger's time. The re-run must not call the queue
// drained while the queue's counts still show those messages in flight: it
// waits for them, says so, and moves them. Before this was handled the
// re-run printed "completed" having moved nothing, the messages out of
// sight (seen under make test's load in the origins kill -9 test).
//
// The re-run starts either while the dead process's ledger time still
// runs, or after it passed (what CI's load once did to this test: the
// ledger was then dropped as expired and the re-run said "completed" with
// the 3 still hidden): both must wait and move them.
func TestRerunWaitsForADeadProcesssLateAnsweredReceive(t *testing.T) {
	for _, after := range []time.Duration{0, 1500 * time.Millisecond} {
		t.Run(fmt.Sprintf("rerun-%s-after-the-ledger-time", after), func(t *testing.T) { rerunAfterLateAnswer(t, after) })
	}
}

func rerunAfterLateAnswer(t *testing.T, after time.Duration) {
	env := testenv.RequireMoto(t) // exact counts, as the check needs
	c := env.SQS(t)
	dlq, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "late-dlq"), nil)
	dest, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "late-dst"), nil)
	const n = 3
	for i := range n {
		if _, err := c.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(fmt.Sprintf(`{"order":"late-%d"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	state := t.TempDir()
	// The dead process's ledger: its messages are back within a second ...
	l, err := sqs.OpenHoldLedger(state, dlq, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Cover(time.Now().Add(time.Second), n, 0)
	l.Close(false) // what a kill does
	// ... but its receive was answered late: the server hides them for 8 s.
	for got := 0; got < n; {
		out, err := c.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: n, VisibilityTimeout: 8, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		got += len(out.Messages)
	}
	time.Sleep(after)
	r := clitest.Run(t, env, "", "redrive", dlq, "--to", dest, "--yes", "-o", "json", "--state-dir", state, "--visibility", "5s")
	sum := clitest.SummaryOf(t, r)
	if r.Code != 0 || sum.Moved != n || sum.Status != "completed" {
		t.Fatalf("re-run: exit %d, status %q, moved %d; want exit 0, completed, %d moved\n%s\n%s", r.Code, sum.Status, sum.Moved, n, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, fmt.Sprintf("still shows %d message(s) in flight that no live run holds", n)) {
		t.Errorf("stderr does not say what the run waited for:\n%s", r.Stderr)
	}
	if v, f := clitest.QueueDepth(t, c, dlq); v+f != 0 {
		t.Errorf("the DLQ still holds %d visible and %d in flight", v, f)
	}
	if v, _ := clitest.QueueDepth(t, c, dest); v != n {
		t.Errorf("the destination holds %d, want %d", v, n)
	}
}
