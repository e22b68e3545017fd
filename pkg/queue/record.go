package queue

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Record is the message record of GUIDE.md §3: the public JSON contract used
// by `sample -o json|ndjson`, archives and offline input. Field names are a
// contract: extend, never rename.
type Record struct {
	MessageID  string               `json:"message_id"`
	Queue      string               `json:"queue"`
	Body       string               `json:"body"`
	BodySHA256 string               `json:"body_sha256"`
	SizeBytes  int                  `json:"size_bytes"`
	Attributes map[string]Attribute `json:"attributes"`
	System     System               `json:"system"`
	AgeSeconds int64                `json:"age_seconds"`
	ExpiresAt  time.Time            `json:"expires_at,omitzero"`
	Envelope   *Envelope            `json:"envelope,omitempty"`
	Failure    *Failure             `json:"failure,omitempty"`
	// Payload is the original event when the body wraps it (an SNS
	// notification's Message, a Lambda destination record's requestPayload,
	// an EventBridge event's detail, a MassTransit envelope's message, an
	// NServiceBus transport message's decoded Body, an enriched wrapper's
	// original_payload, ...). It is omitted when the body itself is the
	// event. Expressions see it as .payload (the parsed body when omitted).
	Payload any `json:"payload,omitempty"`
	// PayloadEncoding says what the body is: json, ndjson, malformed-json, xml,
	// malformed-xml, html, csv, text, empty, binary, avro or protobuf, under
	// any base64, gzip and zlib layers written outermost first
	// ("base64/gzip/json"). Set by decoding; see docs/triage.md.
	PayloadEncoding string `json:"payload_encoding,omitempty"`
	// Redrive is the decoded dlqctl redrive marker when the message was
	// redriven by dlqctl before (an extension of the record).
	Redrive *Marker `json:"redrive,omitempty"`
	Class   string  `json:"class,omitempty"`
	Action  string  `json:"action,omitempty"`
	Rule    string  `json:"rule,omitempty"`
	// ErrorFingerprint is the normalised failure (what `group --by error`
	// counts by; "(no failure context)" when there is none). Archives
	// write it on every record so query engines can group by it; records
	// read from a live queue leave it out, records read back from an
	// archive keep it.
	ErrorFingerprint string `json:"error_fingerprint,omitempty"`
}

// TimeFormat is the one format of every timestamp dlqctl writes in a
// record: UTC, RFC 3339 with exactly three fractional digits (SQS
// timestamps are milliseconds), e.g. "2026-11-30T03:15:00.000Z". A fixed
// width keeps query engines' timestamp parsers (Athena's
// from_iso8601_timestamp, DuckDB's TIMESTAMPTZ) on one pattern. Readers
// accept any RFC 3339 time, so records written before are read as well.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// recordTime renders a timestamp in TimeFormat ("" for the zero time,
// which omitzero leaves out).
type recordTime time.Time

func (t recordTime) IsZero() bool { return time.Time(t).IsZero() }

func (t recordTime) MarshalJSON() ([]byte, error) {
	u := time.Time(t).UTC()
	if y := u.Year(); y < 0 || y > 9999 {
		// Only a hand-written time at the edge of RFC 3339's four-digit
		// years leaves them when moved to UTC: keep it as it was read.
		return time.Time(t).MarshalJSON()
	}
	return []byte(`"` + u.Format(TimeFormat) + `"`), nil
}

// MarshalJSON writes the record with its stable shapes: every timestamp in
// TimeFormat and attributes always an object ({} when there are none), so
// a JSON reader sees one type per field in every record. Fields keep the
// order of Record.
func (r Record) MarshalJSON() ([]byte, error) { return marshalNoEscape(r.JSONForm()) }

// JSONForm is r as it is written (what MarshalJSON encodes). A hot writer
// (archive parts) encodes it directly: encoding/json re-scans the output of
// every MarshalJSON to validate it, which costs about as much again as the
// encoding itself.
func (r Record) JSONForm() any {
	out := recordJSON{
		MessageID: r.MessageID, Queue: r.Queue, Body: r.Body, BodySHA256: r.BodySHA256, SizeBytes: r.SizeBytes,
		Attributes: r.Attributes, System: r.System.jsonView(), AgeSeconds: r.AgeSeconds, ExpiresAt: recordTime(r.ExpiresAt),
		Envelope: r.Envelope, Failure: r.Failure, Payload: r.Payload, PayloadEncoding: r.PayloadEncoding,
		Class: r.Class, Action: r.Action, Rule: r.Rule, ErrorFingerprint: r.ErrorFingerprint,
	}
	if out.Attributes == nil {
		out.Attributes = map[string]Attribute{}
	}
	if m := r.Redrive; m != nil {
		out.Redrive = &markerJSON{RunID: m.RunID, OriginalID: m.OriginalID, Count: m.Count, At: recordTime(m.At)}
	}
	return out
}

// recordJSON is Record as written (TestRecordJSONMirrorsRecord keeps the
// two in step: same fields, same JSON names, same order).
type recordJSON struct {
	MessageID        string               `json:"message_id"`
	Queue            string               `json:"queue"`
	Body             string               `json:"body"`
	BodySHA256       string               `json:"body_sha256"`
	SizeBytes        int                  `json:"size_bytes"`
	Attributes       map[string]Attribute `json:"attributes"`
	System           systemJSON           `json:"system"`
	AgeSeconds       int64                `json:"age_seconds"`
	ExpiresAt        recordTime           `json:"expires_at,omitzero"`
	Envelope         *Envelope            `json:"envelope,omitempty"`
	Failure          *Failure             `json:"failure,omitempty"`
	Payload          any                  `json:"payload,omitempty"`
	PayloadEncoding  string               `json:"payload_encoding,omitempty"`
	Redrive          *markerJSON          `json:"redrive,omitempty"`
	Class            string               `json:"class,omitempty"`
	Action           string               `json:"action,omitempty"`
	Rule             string               `json:"rule,omitempty"`
	ErrorFingerprint string               `json:"error_fingerprint,omitempty"`
}

// markerJSON is Marker as written in a record (the marker attribute itself
// keeps Marker's own encoding).
type markerJSON struct {
	RunID      string     `json:"run"`
	OriginalID string     `json:"orig"`
	Count      int        `json:"n"`
	At         recordTime `json:"at"`
}

// marshalNoEscape is json.Marshal without HTML escaping (<, >, & stay as
// they are in bodies and reasons, as the record encoders write them).
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Attribute is one message attribute. Type is the full SQS DataType
// ("String", "Number", "Binary", or a custom type such as "String.tenant").
// String and Number values are in Value; Binary values in Base64.
type Attribute struct {
	Type   string `json:"type"`
	Value  string `json:"value,omitempty"`
	Base64 string `json:"base64,omitempty"`
}

// IsBinary reports whether the attribute carries a binary value.
func (a Attribute) IsBinary() bool { return strings.HasPrefix(a.Type, "Binary") }

// System holds the SQS system attributes of a message.
type System struct {
	ReceiveCount    int       `json:"receive_count"`
	SentAt          time.Time `json:"sent_at,omitzero"`
	FirstReceivedAt time.Time `json:"first_received_at,omitzero"`
	SourceQueueARN  string    `json:"source_queue_arn,omitempty"`
	MessageGroupID  string    `json:"message_group_id,omitempty"`
	DeduplicationID string    `json:"deduplication_id,omitempty"`
	SequenceNumber  string    `json:"sequence_number,omitempty"`
}

// MarshalJSON writes the system attributes with timestamps in TimeFormat,
// in the order of System.
func (s System) MarshalJSON() ([]byte, error) { return marshalNoEscape(s.jsonView()) }

// jsonView is s as written. Record's MarshalJSON embeds it directly: a
// nested MarshalJSON would have its output re-scanned by every encoder
// above it.
func (s System) jsonView() systemJSON {
	return systemJSON{
		ReceiveCount: s.ReceiveCount, SentAt: recordTime(s.SentAt), FirstReceivedAt: recordTime(s.FirstReceivedAt),
		SourceQueueARN: s.SourceQueueARN, MessageGroupID: s.MessageGroupID, DeduplicationID: s.DeduplicationID, SequenceNumber: s.SequenceNumber,
	}
}

// systemJSON is System as written (kept in step by TestRecordJSONMirrorsRecord).
type systemJSON struct {
	ReceiveCount    int        `json:"receive_count"`
	SentAt          recordTime `json:"sent_at,omitzero"`
	FirstReceivedAt recordTime `json:"first_received_at,omitzero"`
	SourceQueueARN  string     `json:"source_queue_arn,omitempty"`
	MessageGroupID  string     `json:"message_group_id,omitempty"`
	DeduplicationID string     `json:"deduplication_id,omitempty"`
	SequenceNumber  string     `json:"sequence_number,omitempty"`
}

// Envelope is the decoded retry envelope of a body (eventId, eventType, …).
type Envelope struct {
	EventID      string `json:"event_id,omitempty"`
	EventType    string `json:"event_type,omitempty"`
	EventVersion any    `json:"event_version,omitempty"`
	// VersionIsSchema is true when the decoder vouches that EventVersion
	// is the event's schema version (eventVersion, schemaVersion, ...), not
	// an envelope or transport version such as EventBridge's "version": "0"
	// or CloudEvents' specversion. Only then do rules compare it with the
	// supported versions. Derived on decoding, not serialised.
	VersionIsSchema bool   `json:"-"`
	Producer        string `json:"producer,omitempty"`
	CorrelationID   string `json:"correlation_id,omitempty"`
	TenantID        string `json:"tenant_id,omitempty"`
	IdempotencyKey  string `json:"idempotency_key,omitempty"`
	SchemaRef       string `json:"schema_ref,omitempty"`
	OccurredAt      string `json:"occurred_at,omitempty"`
}

// Failure is the decoded failure context of a message: what the DLQ format
// (Lambda, EventBridge, MassTransit, NServiceBus, Kafka headers, an
// enriched wrapper, generic failure keys) recorded about why it failed.
// Format names the decoder that recognised the message; a failure with only
// Format set means the format is known but carries no reason.
type Failure struct {
	Reason          string `json:"reason,omitempty"`
	Type            string `json:"type,omitempty"`
	ErrorClass      string `json:"error_class,omitempty"`
	AttemptCount    int    `json:"attempt_count,omitempty"`
	ConsumerVersion string `json:"consumer_version,omitempty"`
	FailedAt        string `json:"failed_at,omitempty"`
	// Format is the decoder that matched (e.g. "lambda-async", "sns",
	// "generic").
	Format string `json:"format,omitempty"`
	// Evidence lists every failure text found, with where it was read.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Source says where failure context read from outside the message came
	// from: the consumer's CloudWatch Logs (format "logs", dlqctl --logs).
	// With no evidence it records that the logs were searched and said
	// nothing (Note).
	Source *FailureSource `json:"source,omitempty"`
}

// FailureSource is where failure context found outside the message was
// read: the log group, stream and time of the deciding log event, the
// Lambda request id it was followed through, and the log lines used.
type FailureSource struct {
	LogGroup  string    `json:"log_group,omitempty"`
	LogStream string    `json:"log_stream,omitempty"`
	Timestamp time.Time `json:"timestamp,omitzero"`
	RequestID string    `json:"request_id,omitempty"`
	// LogGroups are the groups searched (set when nothing was found).
	LogGroups []string `json:"log_groups,omitempty"`
	// Note says why there is no evidence ("no log line mentions this
	// message").
	Note  string    `json:"note,omitempty"`
	Lines []LogLine `json:"lines,omitempty"`
}

// LogLine is one log event used as failure context.
type LogLine struct {
	LogGroup  string    `json:"log_group"`
	LogStream string    `json:"log_stream"`
	Timestamp time.Time `json:"timestamp"`
	Message   string    `json:"message"`
}

// MarshalJSON writes the source with its timestamp in TimeFormat, in the
// order of FailureSource.
func (s FailureSource) MarshalJSON() ([]byte, error) {
	return marshalNoEscape(failureSourceJSON{
		LogGroup: s.LogGroup, LogStream: s.LogStream, Timestamp: recordTime(s.Timestamp), RequestID: s.RequestID,
		LogGroups: s.LogGroups, Note: s.Note, Lines: s.Lines,
	})
}

// failureSourceJSON is FailureSource as written (kept in step by
// TestRecordJSONMirrorsRecord).
type failureSourceJSON struct {
	LogGroup  string     `json:"log_group,omitempty"`
	LogStream string     `json:"log_stream,omitempty"`
	Timestamp recordTime `json:"timestamp,omitzero"`
	RequestID string     `json:"request_id,omitempty"`
	LogGroups []string   `json:"log_groups,omitempty"`
	Note      string     `json:"note,omitempty"`
	Lines     []LogLine  `json:"lines,omitempty"`
}

// MarshalJSON writes the log line with its timestamp in TimeFormat.
func (l LogLine) MarshalJSON() ([]byte, error) {
	return marshalNoEscape(logLineJSON{LogGroup: l.LogGroup, LogStream: l.LogStream, Timestamp: recordTime(l.Timestamp), Message: l.Message})
}

// logLineJSON is LogLine as written (kept in step by
// TestRecordJSONMirrorsRecord).
type logLineJSON struct {
	LogGroup  string     `json:"log_group"`
	LogStream string     `json:"log_stream"`
	Timestamp recordTime `json:"timestamp"`
	Message   string     `json:"message"`
}

// HasContext reports whether f carries any failure text (a format alone
// is not a reason).
func (f *Failure) HasContext() bool {
	return f != nil && (f.Reason != "" || f.Type != "" || f.ErrorClass != "" || len(f.Evidence) > 0)
}

// Evidence is one failure text and where it was read.
type Evidence struct {
	// Field is where the text was read, e.g. "attributes.ErrorMessage.errorType"
	// or "body.responsePayload.errorMessage".
	Field string `json:"field"`
	// Kind says what the text is: type (an exception or error type), code
	// (an error code), status (an HTTP status), message, cause (a nested or
	// root-cause exception), class (the consumer's own label) or condition
	// (why the platform gave up, e.g. RetriesExhausted) or root_cause (the
	// innermost cause of a chain: Java's last "Caused by:", .NET's
	// innermost "--->", …).
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Weak marks evidence found by its look (a value that reads like an
	// exception or a stack trace in a field not named as failure
	// context): a hint, weighed below evidence from failure fields.
	Weak bool `json:"weak,omitempty"`
}

// Evidence kinds.
const (
	EvidenceType      = "type"
	EvidenceCode      = "code"
	EvidenceStatus    = "status"
	EvidenceMessage   = "message"
	EvidenceCause     = "cause"
	EvidenceClass     = "class"
	EvidenceCondition = "condition"
	EvidenceRootCause = "root_cause"
)

// Marker is the dlqctl redrive marker carried in the MarkerAttribute message
// attribute of a redriven message.
type Marker struct {
	RunID      string    `json:"run"`
	OriginalID string    `json:"orig"`
	Count      int       `json:"n"`
	At         time.Time `json:"at"`
}

// MarkerAttribute is the message attribute dlqctl adds to redriven messages.
const MarkerAttribute = "dlqctl-redrive"

// SHA256Hex returns the lowercase hex SHA-256 of s.
func SHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// MessageSize is the size SQS counts against its 1 MiB limit: the body plus
// every attribute's name, data type and value.
func MessageSize(body string, attrs map[string]Attribute) int {
	n := len(body)
	for name, a := range attrs {
		n += len(name) + len(a.Type)
		if a.IsBinary() {
			n += base64.StdEncoding.DecodedLen(len(a.Base64))
		} else {
			n += len(a.Value)
		}
	}
	return n
}

// FromSQS builds the record for a received message. retention is the queue's
// MessageRetentionPeriod (0 if unknown); now is the reference time for age.
func FromSQS(queueARN string, m types.Message, retention time.Duration, now time.Time) Record {
	body := aws.ToString(m.Body)
	r := Record{
		MessageID:  aws.ToString(m.MessageId),
		Queue:      queueARN,
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
