package sqs

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// The message record is broker-neutral (package record). These names keep
// the callers that still say queue.Record compiling while they move to
// package record.
type (
	Record        = record.Record
	Attribute     = record.Attribute
	System        = record.System
	Envelope      = record.Envelope
	Failure       = record.Failure
	FailureSource = record.FailureSource
	LogLine       = record.LogLine
	Evidence      = record.Evidence
	Marker        = record.Marker
)

// Names kept for the callers that still use them (see Record).
const (
	MarkerAttribute   = record.MarkerAttribute
	TimeFormat        = record.TimeFormat
	EvidenceType      = record.EvidenceType
	EvidenceCode      = record.EvidenceCode
	EvidenceStatus    = record.EvidenceStatus
	EvidenceMessage   = record.EvidenceMessage
	EvidenceCause     = record.EvidenceCause
	EvidenceClass     = record.EvidenceClass
	EvidenceCondition = record.EvidenceCondition
)

// SHA256Hex is record.SHA256Hex.
func SHA256Hex(s string) string { return record.SHA256Hex(s) }

// MessageSize is the size SQS counts against its 1 MiB limit: the body
// plus every attribute's name, data type and value (record.MessageSize).
func MessageSize(body string, attrs map[string]Attribute) int { return record.MessageSize(body, attrs) }

// FromSQS builds the record for a received message. retention is the queue's
// MessageRetentionPeriod (0 if unknown); now is the reference time for age.
func FromSQS(queueARN string, m types.Message, retention time.Duration, now time.Time) Record {
	body := aws.ToString(m.Body)
	r := Record{
		MessageID:  aws.ToString(m.MessageId),
		Queue:      queueARN,
		Broker:     record.BrokerSQS,
		Body:       body,
		BodySHA256: SHA256Hex(body),
	}
	if len(m.MessageAttributes) > 0 {
		r.Attributes = make(map[string]Attribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			a := Attribute{Type: aws.ToString(v.DataType)}
			if strings.HasPrefix(a.Type, "Binary") {
				a.Base64 = base64.StdEncoding.EncodeToString(v.BinaryValue)
			} else {
				a.Value = aws.ToString(v.StringValue)
			}
			r.Attributes[k] = a
		}
	} else {
		r.Attributes = map[string]Attribute{}
	}
	r.SizeBytes = MessageSize(body, r.Attributes)
	sa := m.Attributes
	r.System.ReceiveCount, _ = strconv.Atoi(sa[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	r.System.SentAt = epochMillis(sa[string(types.MessageSystemAttributeNameSentTimestamp)])
	r.System.FirstReceivedAt = epochMillis(sa[string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)])
	r.System.SourceQueueARN = sa[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]
	r.System.MessageGroupID = sa[string(types.MessageSystemAttributeNameMessageGroupId)]
	r.System.DeduplicationID = sa[string(types.MessageSystemAttributeNameMessageDeduplicationId)]
	r.System.SequenceNumber = sa[string(types.MessageSystemAttributeNameSequenceNumber)]
	r.OrderingKey = r.System.MessageGroupID
	if !r.System.SentAt.IsZero() {
		r.AgeSeconds = int64(now.Sub(r.System.SentAt) / time.Second)
		if r.AgeSeconds < 0 {
			r.AgeSeconds = 0
		}
		// A standard queue keeps a message's original enqueue time when it
		// dead-letters, so its retention runs from SentTimestamp; a FIFO
		// queue resets it on arrival, which SQS does not report: there
		// expires_at stays empty rather than wrong.
		if retention > 0 && !strings.HasSuffix(queueARN, ".fifo") {
			r.ExpiresAt = r.System.SentAt.Add(retention)
		}
	}
	return r
}

func epochMillis(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// SQSAttributes converts record attributes back to SQS message attributes,
// preserving the exact data type (including custom types).
func SQSAttributes(attrs map[string]Attribute) (map[string]types.MessageAttributeValue, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, a := range attrs {
		v := types.MessageAttributeValue{DataType: aws.String(a.Type)}
		if a.IsBinary() {
			b, err := base64.StdEncoding.DecodeString(a.Base64)
			if err != nil {
				return nil, err
			}
			v.BinaryValue = b
		} else {
			v.StringValue = aws.String(a.Value)
		}
		out[k] = v
	}
	return out, nil
}
