package archive

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dlqctl/dlqctl/cmd"
	"github.com/dlqctl/dlqctl/internal/clitest"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// A canary of restore --to source from an archive made without --delete
// watches the DLQ that still holds the originals, whose bodies are the
// copies' bodies: they are not returns (PASS). A message with a copy's
// body, an id of its own and no marker is one (a copy that lost its
// marker on the way back): FAIL, exit 3.
func TestRestoreCanaryTellsTheOriginalsFromReturns(t *testing.T) {
	a := newArchiveFixture(t)
	dlq := a.truth.DLQ
	r := clitest.Run(t, a.env, "", "archive", dlq.Name, "--to", "s3://"+a.bucket+"/keep", "--yes", "-o", "json")
	var sum cmd.ArchiveSummary
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil {
		t.Fatalf("archive (no --delete): exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	stateDir := t.TempDir()
	canary := func() clitest.Result {
		return clitest.Run(t, a.env, "", "--state-dir", stateDir, "restore", sum.Manifest, "--to", "source", "--class", "permanent",
			"--canary", "2", "--verify-for", "2s", "--again", "--yes", "-o", "json")
	}
	r = canary()
	var out struct {
		Canary struct {
			Pass     bool `json:"pass"`
			Returned int  `json:"returned"`
		} `json:"canary"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || r.Code != 0 || !out.Canary.Pass {
		t.Fatalf("canary with the originals still in the DLQ: exit %d (%v), %+v; want PASS\n%s\n%s", r.Code, err, out.Canary, r.Stdout, r.Stderr)
	}

	// The canary sends the archive's first permanent messages: one of
	// their bodies comes back to the DLQ without the marker.
	body := ""
	for _, rec := range clitest.SampleArchive(t, a.env, sum.Manifest) {
		if rec.Class == "permanent" {
			body = rec.Body
			break
		}
	}
	if body == "" || strings.TrimSpace(body) == "" {
		t.Fatal("the archive holds no permanent message with a body")
	}
	if _, err := a.sqs.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(dlq.URL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	r = canary()
	out.Canary.Pass, out.Canary.Returned = false, 0
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || r.Code != 3 || out.Canary.Pass || out.Canary.Returned != 1 {
		t.Fatalf("canary with a marker-less copy back in the DLQ: exit %d (%v), %+v; want FAIL (exit 3), 1 returned\n%s\n%s", r.Code, err, out.Canary, r.Stdout, r.Stderr)
	}
}

// restore --to source finds where each message goes through the DLQ the
// archive was read from: once that queue is gone it is bad input (exit 2)
// saying so and naming the way out, and nothing is sent.
func TestRestoreToSourceNeedsTheArchivedDLQ(t *testing.T) {
	env := testenv.Require(t)
	c := env.SQS(t)
	s3c := env.S3(t)
	url, _ := clitest.CreateQueue(t, c, testenv.UniqueName(t, "gone-dlq"), nil)
	if _, err := c.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"orderId":7}`)}); err != nil {
		t.Fatal(err)
	}
	bucket := strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "gone"), "_", "-"))
	if _, err := s3c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, env, "", "archive", url, "--to", "s3://"+bucket+"/a", "--delete", "--yes", "-o", "json")
	var sum cmd.ArchiveSummary
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &sum) != nil {
		t.Fatalf("archive: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := c.DeleteQueue(t.Context(), &awssqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(t, env, "", "restore", sum.Manifest, "--to", "source", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "the queue the archive was read from") || !strings.Contains(r.Stderr, "restore --to QUEUE") || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 1 {
		t.Fatalf("restore --to source after its DLQ was deleted: exit %d\n%s; want exit 2, one sentence naming the queue and --to QUEUE", r.Code, r.Stderr)
	}
}
