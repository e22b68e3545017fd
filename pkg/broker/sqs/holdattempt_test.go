package sqs

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
)

// failFirst answers the first request with a 500 (an attempt SQS may have
// carried out) and the next with an empty receive.
type failFirst struct {
	mu    sync.Mutex
	calls []time.Time
}

func (f *failFirst) Do(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	n := len(f.calls)
	f.mu.Unlock()
	code, body := 200, "{}"
	if n == 1 {
		code, body = 500, `{"__type":"com.amazonaws.sqs#InternalError","message":"internal error"}`
	}
	return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// A receive the SDK retries: the hold ledger is covered before each
// attempt, so a process killed during the retry leaves a ledger that
// covers what the retry may hide (it starts later than the call).
func TestEveryReceiveAttemptIsCoveredBeforeItIsSent(t *testing.T) {
	http := &failFirst{}
	c := awssqs.New(awssqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), HTTPClient: http,
		Credentials: aws.AnonymousCredentials{}})
	var mu sync.Mutex
	var covers []time.Time
	w := &receiveWatch{API: c, hidden: 30 * time.Second, beforeAttempt: func(until time.Time, n int) {
		mu.Lock()
		defer mu.Unlock()
		covers = append(covers, until)
		if n != 10 {
			t.Errorf("covered %d messages, want 10 (the receive's maximum)", n)
		}
	}}
	_, err := w.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String("http://127.0.0.1:1/1/q"),
		MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(http.calls) != 2 || len(covers) != 2 {
		t.Fatalf("%d attempts, %d covers: want a cover before each of 2 attempts", len(http.calls), len(covers))
	}
	for i, at := range http.calls {
		if want := at.Add(31 * time.Second); covers[i].Before(want) {
			t.Errorf("attempt %d sent at %s covered until %s, want at least its start + wait + visibility (%s)", i+1, at.Format(time.StampMilli), covers[i].Format(time.StampMilli), want.Format(time.StampMilli))
		}
	}
	if w.retried.Load() != 1 {
		t.Errorf("retried receives %d, want 1 (its first attempt may have taken messages)", w.retried.Load())
	}
}
