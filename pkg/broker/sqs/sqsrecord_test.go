package sqs

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestFromSQSRecord(t *testing.T) {
	sent := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := types.Message{
		MessageId: aws.String("id-1"),
		Body:      aws.String("héllo 🌍"),
		Attributes: map[string]string{
			"ApproximateReceiveCount":  "3",
			"SentTimestamp":            strconv.FormatInt(sent.UnixMilli(), 10),
			"DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:orders",
			"MessageGroupId":           "g1",
		},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"sig":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
			"tenant": {DataType: aws.String("String.tenant"), StringValue: aws.String("t-1")},
			"n":      {DataType: aws.String("Number"), StringValue: aws.String("42")},
		},
	}
	r := FromSQS("arn:aws:sqs:us-east-1:123456789012:orders-dlq", m, 14*24*time.Hour, sent.Add(time.Hour))
	if r.System.ReceiveCount != 3 || !r.System.SentAt.Equal(sent) || r.AgeSeconds != 3600 || r.System.MessageGroupID != "g1" {
		t.Fatalf("system = %+v age=%d", r.System, r.AgeSeconds)
	}
	if !r.ExpiresAt.Equal(sent.Add(14 * 24 * time.Hour)) {
		t.Fatalf("expires_at = %v", r.ExpiresAt)
	}
	if r.Attributes["sig"].Base64 != "AAEC" || r.Attributes["tenant"].Type != "String.tenant" {
		t.Fatalf("attrs = %+v", r.Attributes)
	}
	if r.BodySHA256 != SHA256Hex("héllo 🌍") {
		t.Fatal("sha mismatch")
	}
	back, err := SQSAttributes(r.Attributes)
	if err != nil || string(back["sig"].BinaryValue) != "\x00\x01\x02" || aws.ToString(back["tenant"].DataType) != "String.tenant" || aws.ToString(back["n"].StringValue) != "42" {
		t.Fatalf("round trip attrs = %+v err=%v", back, err)
	}
	b, _ := json.Marshal(r)
	var generic map[string]any
	_ = json.Unmarshal(b, &generic)
	for _, k := range []string{"message_id", "queue", "body", "body_sha256", "size_bytes", "attributes", "system", "age_seconds", "expires_at"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("record JSON lacks %q: %s", k, b)
		}
	}
	for _, k := range []string{"envelope", "failure", "class", "receipt_handle", "ReceiptHandle"} {
		if _, ok := generic[k]; ok {
			t.Errorf("record JSON has %q when it should not", k)
		}
	}
}

func TestRedrivePolicyStringOrNumber(t *testing.T) {
	for _, s := range []string{`{"deadLetterTargetArn":"arn:aws:sqs:r:1:d","maxReceiveCount":"5"}`, `{"deadLetterTargetArn":"arn:aws:sqs:r:1:d","maxReceiveCount":5}`} {
		q := &Queue{Attrs: map[string]string{"RedrivePolicy": s}}
		p := q.RedrivePolicy()
		if p == nil || p.MaxReceiveCount != 5 || p.DeadLetterTargetARN != "arn:aws:sqs:r:1:d" {
			t.Fatalf("%s -> %+v", s, p)
		}
	}
}

func TestNameFromARN(t *testing.T) {
	if NameFromARN("arn:aws:sqs:us-east-1:123:orders.fifo") != "orders.fifo" || NameFromARN("nope") != "" {
		t.Fatal("NameFromARN")
	}
}
