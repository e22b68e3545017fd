package origins

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// A Kinesis event source's on-failure record holds only a pointer to the
// batch (shard, first and last sequence number): dlqctl reads those
// records back from the stream (moto serves Kinesis) and invokes the
// function once with them as the Kinesis event. A pointer into a stream
// that no longer exists stays in the DLQ, named.
func TestKinesisBatchPointerIsReadBackFromTheStream(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	kc := kinesis.NewFromConfig(s.env.AWSConfig(ctx), func(o *kinesis.Options) { o.BaseEndpoint = aws.String(s.env.SQSEndpoint) })
	stream := testenv.UniqueName(t, "clicks")
	var inUse *kinesistypes.ResourceInUseException
	if _, err := kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(1)}); err != nil && !errors.As(err, &inUse) {
		t.Fatal(err) // in use: the name is this test's own, an SDK retry found the stream its lost first attempt made
	}
	t.Cleanup(func() { kc.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(stream)}) })
	desc, err := kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	streamARN, shard := aws.ToString(desc.StreamDescription.StreamARN), aws.ToString(desc.StreamDescription.Shards[0].ShardId)
	var seqs, datas []string
	for i := range 6 {
		d := fmt.Sprintf(`{"click":%d,"page":"/p/ü"}`, i)
		out, err := kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(stream), Data: []byte(d), PartitionKey: aws.String(fmt.Sprint("u", i))})
		if err != nil {
			t.Fatal(err)
		}
		seqs, datas = append(seqs, aws.ToString(out.SequenceNumber)), append(datas, d)
	}
	dlqURL, _ := s.queue(t, "kin-dlq", nil)
	fn, fnARN := s.function(t, "clicks-fn", "", 5, nil)
	pointer := func(stream, first, last string, size int) string {
		return fmt.Sprintf(`{"requestContext":{"requestId":"k-%s","functionArn":"%s","condition":"RetryAttemptsExhausted","approximateInvokeCount":3},"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"version":"1.0","timestamp":"%s","KinesisBatchInfo":{"shardId":"%s","startSequenceNumber":"%s","endSequenceNumber":"%s","approximateArrivalOfFirstRecord":"%s","approximateArrivalOfLastRecord":"%s","batchSize":%d,"streamArn":"%s"}}`,
			first, fnARN, time.Now().UTC().Format(time.RFC3339), shard, first, last, time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339), size, stream)
	}
	s.send(t, dlqURL, pointer(streamARN, seqs[1], seqs[3], 3), nil)
	gone := pointer(strings.Replace(streamARN, stream, stream+"-deleted", 1), seqs[0], seqs[1], 2)
	s.send(t, dlqURL, gone, nil)

	r := s.run(t, "redrive", dlqURL, "--yes", "-o", "json", "--state-dir", t.TempDir())
	if r.Code != 4 {
		t.Fatalf("redrive exit %d, want 4 (the pointer into a deleted stream stays):\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "the stream or shard no longer exists") {
		t.Fatalf("the report does not say why the second pointer stays:\n%s", r.Stdout)
	}
	inv := s.invokedWith(fn)
	if len(inv) != 1 {
		t.Fatalf("the function was invoked with %d distinct payloads, want 1: %v", len(inv), inv)
	}
	for p, n := range inv {
		if n != 1 {
			t.Errorf("invoked %d times, want once", n)
		}
		var ev struct {
			Records []struct {
				EventSource    string `json:"eventSource"`
				EventSourceARN string `json:"eventSourceARN"`
				Kinesis        struct {
					SequenceNumber string `json:"sequenceNumber"`
					Data           string `json:"data"`
				} `json:"kinesis"`
			}
		}
		if err := json.Unmarshal([]byte(p), &ev); err != nil {
			t.Fatal(err)
		}
		if len(ev.Records) != 3 {
			t.Fatalf("the Kinesis event holds %d records, want the batch's 3: %s", len(ev.Records), p)
		}
		for i, rec := range ev.Records {
			d, _ := base64.StdEncoding.DecodeString(rec.Kinesis.Data)
			if rec.EventSource != "aws:kinesis" || rec.EventSourceARN != streamARN || rec.Kinesis.SequenceNumber != seqs[1+i] || string(d) != datas[1+i] {
				t.Errorf("record %d: %+v (data %q), want sequence %s data %q from %s", i, rec, d, seqs[1+i], datas[1+i], streamARN)
			}
		}
	}
	left, _ := s.drain(t, dlqURL)
	exactlyOnce(t, "left in the DLQ", left, []string{gone})
}
