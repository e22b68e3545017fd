package sqs

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// A FIFO queue resets a message's enqueue time when it dead-letters and SQS
// does not report the new one, so expires_at (sent time + retention) would
// be wrong there: it stays empty. Standard queues keep the original time.
func TestExpiresAtOnlyOnStandardQueues(t *testing.T) {
	sent := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := types.Message{
		MessageId:  aws.String("m"),
		Body:       aws.String("x"),
		Attributes: map[string]string{"SentTimestamp": strconv.FormatInt(sent.UnixMilli(), 10), "MessageGroupId": "g"},
	}
	now := sent.Add(time.Hour)
	std := FromSQS("arn:aws:sqs:us-east-1:123456789012:orders-dlq", m, 4*24*time.Hour, now)
	if !std.ExpiresAt.Equal(sent.Add(4 * 24 * time.Hour)) {
		t.Fatalf("standard queue: expires_at = %v", std.ExpiresAt)
	}
	fifo := FromSQS("arn:aws:sqs:us-east-1:123456789012:orders-dlq.fifo", m, 4*24*time.Hour, now)
	if !fifo.ExpiresAt.IsZero() || fifo.AgeSeconds != 3600 {
		t.Fatalf("FIFO queue: expires_at = %v (want none), age %d", fifo.ExpiresAt, fifo.AgeSeconds)
	}
}
