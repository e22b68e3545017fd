// Package record is dlqctl's broker-neutral message record: what every
// broker's source produces, what the engine, selection, classification,
// archives and redrives read, and the public JSON contract of `sample -o
// json|ndjson`, archive parts and offline input (docs/schema/
// message-record.schema.json, docs/brokers.md). Field names are a
// contract: extend, never rename. It knows no broker client.
package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Broker names as records carry them (Record.Broker).
const (
	BrokerSQS   = "sqs"
	BrokerAMQP  = "amqp"
	BrokerKafka = "kafka"
)

// Record is one message as dlqctl reads it from any broker.
type Record struct {
	MessageID string `json:"message_id"`
	// Queue names where the message was read, as its broker names it and
	// without credentials: an SQS queue ARN, amqp://HOST/VHOST/QUEUE,
	// kafka://HOST:PORT/TOPIC.
	Queue string `json:"queue"`
	// Broker is the broker the record was read from: "sqs", "amqp" or
	// "kafka". Records written before dlqctl spoke other brokers have
	// none; they are SQS's (BrokerName).
	Broker     string `json:"broker,omitempty"`
	Body       string `json:"body"`
	BodySHA256 string `json:"body_sha256"`
	SizeBytes  int    `json:"size_bytes"`
	// Attributes are the message's attributes (SQS) or headers (AMQP,
	// Kafka: the last value of a repeated header; every one, in order, is
	// in System.Kafka.Headers).
	Attributes map[string]Attribute `json:"attributes"`
	// OrderingKey is what the broker orders messages by: the SQS FIFO
	// message group, the Kafka record key ("" when the broker keeps no
	// order for the message).
	OrderingKey string    `json:"ordering_key,omitempty"`
	System      System    `json:"system"`
	AgeSeconds  int64     `json:"age_seconds"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	Envelope    *Envelope `json:"envelope,omitempty"`
	Failure     *Failure  `json:"failure,omitempty"`
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
	// Confidence is how sure the classification is, 0 to 1 (the built-in
	// rules weigh their evidence; a rules file's own expression is 1).
	// Set with class, action and rule.
	Confidence float64 `json:"confidence,omitempty"`
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
		MessageID: r.MessageID, Queue: r.Queue, Broker: r.Broker, Body: r.Body, BodySHA256: r.BodySHA256, SizeBytes: r.SizeBytes,
		Attributes: r.Attributes, OrderingKey: r.OrderingKey, System: r.System.jsonView(), AgeSeconds: r.AgeSeconds, ExpiresAt: recordTime(r.ExpiresAt),
		Envelope: r.Envelope, Failure: r.Failure, Payload: r.Payload, PayloadEncoding: r.PayloadEncoding,
		Class: r.Class, Action: r.Action, Rule: r.Rule, Confidence: r.Confidence, ErrorFingerprint: r.ErrorFingerprint,
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
	Broker           string               `json:"broker,omitempty"`
	Body             string               `json:"body"`
	BodySHA256       string               `json:"body_sha256"`
	SizeBytes        int                  `json:"size_bytes"`
	Attributes       map[string]Attribute `json:"attributes"`
	OrderingKey      string               `json:"ordering_key,omitempty"`
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
	Confidence       float64              `json:"confidence,omitempty"`
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

// Attribute is one message attribute or header. Type is the full SQS
// DataType ("String", "Number", "Binary", or a custom type such as
// "String.tenant"); AMQP and Kafka headers use the same names for what
// their values are (a header that is not valid UTF-8 is "Binary"). String
// and Number values are in Value; Binary values in Base64.
type Attribute struct {
	Type   string `json:"type"`
	Value  string `json:"value,omitempty"`
	Base64 string `json:"base64,omitempty"`
}

// IsBinary reports whether the attribute carries a binary value.
func (a Attribute) IsBinary() bool { return strings.HasPrefix(a.Type, "Binary") }

// System holds what the broker says about a message beyond its body and
// attributes. ReceiveCount and SentAt mean the same on every broker (how
// many times it was delivered, as far as the broker counts; when it was
// first published). The other flat fields are SQS's: the record began on
// SQS and archives written then keep them there, so they stay flat; every
// other broker's fields are grouped under its name (AMQP, Kafka).
type System struct {
	ReceiveCount    int       `json:"receive_count"`
	SentAt          time.Time `json:"sent_at,omitzero"`
	FirstReceivedAt time.Time `json:"first_received_at,omitzero"`
	SourceQueueARN  string    `json:"source_queue_arn,omitempty"`
	MessageGroupID  string    `json:"message_group_id,omitempty"`
	DeduplicationID string    `json:"deduplication_id,omitempty"`
	SequenceNumber  string    `json:"sequence_number,omitempty"`
	// AMQP holds a RabbitMQ delivery's facts (nil for other brokers).
	AMQP *AMQPSystem `json:"amqp,omitempty"`
	// Kafka holds a Kafka record's facts (nil for other brokers).
	Kafka *KafkaSystem `json:"kafka,omitempty"`
}

// AMQPSystem is what an AMQP 0-9-1 delivery from a RabbitMQ queue carries
// besides its body and headers.
type AMQPSystem struct {
	// Exchange and RoutingKey are the delivery's (after dead-lettering:
	// the dead-letter exchange and, if set, its routing key).
	Exchange    string `json:"exchange,omitempty"`
	RoutingKey  string `json:"routing_key,omitempty"`
	Redelivered bool   `json:"redelivered,omitempty"`
	// DeliveryCount is x-delivery-count (quorum queues) when present.
	DeliveryCount int `json:"delivery_count,omitempty"`
	// QueueType is classic, quorum or stream.
	QueueType  string         `json:"queue_type,omitempty"`
	Properties AMQPProperties `json:"properties,omitzero"`
	// Deaths is the x-death header, newest first.
	Deaths []AMQPDeath `json:"deaths,omitempty"`
	// FirstDeath and LastDeath are x-first-death-* and x-last-death-*.
	FirstDeath *AMQPDeathRef `json:"first_death,omitempty"`
	LastDeath  *AMQPDeathRef `json:"last_death,omitempty"`
	// BodyEncoding is "base64" when the body is not valid UTF-8 and
	// Record.Body holds its base64 (AMQP bodies are bytes); "" otherwise.
	BodyEncoding string `json:"body_encoding,omitempty"`
	// Native is the delivery as the broker package read it, kept while
	// the record lives in the process that read it (a copy is made from it
	// without a trip through the attributes); never written, nil for a
	// record read back from JSON or an archive.
	Native any `json:"-"`
}

// AMQPProperties are the basic properties of an AMQP message.
type AMQPProperties struct {
	MessageID       string    `json:"message_id,omitempty"`
	CorrelationID   string    `json:"correlation_id,omitempty"`
	Timestamp       Timestamp `json:"timestamp,omitzero"`
	Type            string    `json:"type,omitempty"`
	AppID           string    `json:"app_id,omitempty"`
	UserID          string    `json:"user_id,omitempty"`
	ReplyTo         string    `json:"reply_to,omitempty"`
	ContentType     string    `json:"content_type,omitempty"`
	ContentEncoding string    `json:"content_encoding,omitempty"`
	DeliveryMode    uint8     `json:"delivery_mode,omitempty"`
	Priority        uint8     `json:"priority,omitempty"`
	Expiration      string    `json:"expiration,omitempty"`
}

// AMQPDeath is one entry of x-death: one per {queue, reason}.
type AMQPDeath struct {
	Count              int64     `json:"count"`
	Reason             string    `json:"reason"` // rejected | expired | maxlen | delivery_limit
	Queue              string    `json:"queue"`
	Exchange           string    `json:"exchange"`
	RoutingKeys        []string  `json:"routing_keys,omitempty"`
	Time               Timestamp `json:"time,omitzero"`
	OriginalExpiration string    `json:"original_expiration,omitempty"`
}

// AMQPDeathRef is x-first-death-* or x-last-death-*.
type AMQPDeathRef struct {
	Exchange string `json:"exchange,omitempty"`
	Queue    string `json:"queue,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// KafkaSystem is what a Kafka record carries besides its value and headers.
type KafkaSystem struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp Timestamp `json:"timestamp,omitzero"`
	// TimestampType is "create" or "log_append".
	TimestampType string `json:"timestamp_type,omitempty"`
	// Key is the record key when it is valid UTF-8, else KeyBase64; a
	// null key has neither.
	Key       string `json:"key,omitempty"`
	KeyBase64 string `json:"key_base64,omitempty"`
	// Headers are every header in order, repeats kept (Record.Attributes
	// keeps the last value of each key).
	Headers []Header `json:"headers,omitempty"`
	// Stage is the topic's place in a retry chain: "retry-N" (or "retry")
	// for a retry topic, "dlt" for a dead-letter topic, "" outside a chain
	// (group --by stage).
	Stage string `json:"stage,omitempty"`
	// Origin is where the record was dead-lettered from, read from its
	// headers; nil when they name no original topic.
	Origin *KafkaOrigin `json:"origin,omitempty"`
	// Native is the record as the broker package read it, kept while the
	// record lives in the process that read it (a copy is made from it
	// without a trip through the headers); never written, nil for a
	// record read back from JSON or an archive.
	Native any `json:"-"`
	// Rewritten says Headers and Key are a copy's, rewritten after the
	// read (a --transform): the copy is made from them, not from Native
	// (which then only tells a null header value from an empty one).
	// Never written.
	Rewritten bool `json:"-"`
}

// KafkaOrigin is the record a dead letter copies, as its recoverer wrote it
// in the headers (Spring kafka_dlt-original-*, Connect __connect.errors.*,
// Streams __streams.errors.*, Spring Cloud Stream x-original-*, the
// hand-rolled original_*).
type KafkaOrigin struct {
	Topic string `json:"topic"`
	// Partition and Offset are -1 when the headers do not say.
	Partition     int32     `json:"partition"`
	Offset        int64     `json:"offset"`
	Timestamp     Timestamp `json:"timestamp,omitzero"`
	ConsumerGroup string    `json:"consumer_group,omitempty"`
	// Format names the header convention: spring-kafka, kafka-connect,
	// kafka-streams, spring-cloud-stream or dlq-headers.
	Format string `json:"format"`
}

// Header is one Kafka header: Value when it is valid UTF-8, else Base64.
type Header struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Base64 string `json:"base64,omitempty"`
}

// Timestamp is a time written in TimeFormat (read from any RFC 3339 time),
// for the times inside the broker groups.
type Timestamp struct{ time.Time }

// MarshalJSON writes t in TimeFormat.
func (t Timestamp) MarshalJSON() ([]byte, error) { return recordTime(t.Time).MarshalJSON() }

// BrokerName is the record's broker: Broker, or "sqs" for records written
// before records carried one.
func (r *Record) BrokerName() string {
	if r.Broker == "" {
		return BrokerSQS
	}
	return r.Broker
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
		AMQP: s.AMQP, Kafka: s.Kafka,
	}
}

// systemJSON is System as written (kept in step by TestRecordJSONMirrorsRecord).
type systemJSON struct {
	ReceiveCount    int          `json:"receive_count"`
	SentAt          recordTime   `json:"sent_at,omitzero"`
	FirstReceivedAt recordTime   `json:"first_received_at,omitzero"`
	SourceQueueARN  string       `json:"source_queue_arn,omitempty"`
	MessageGroupID  string       `json:"message_group_id,omitempty"`
	DeduplicationID string       `json:"deduplication_id,omitempty"`
	SequenceNumber  string       `json:"sequence_number,omitempty"`
	AMQP            *AMQPSystem  `json:"amqp,omitempty"`
	Kafka           *KafkaSystem `json:"kafka,omitempty"`
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

// Marker is the dlqctl redrive marker carried in the MarkerAttribute
// attribute (SQS) or header (AMQP, Kafka) of a redriven message.
type Marker struct {
	RunID      string    `json:"run"`
	OriginalID string    `json:"orig"`
	Count      int       `json:"n"`
	At         time.Time `json:"at"`
}

// MarkerAttribute is the attribute or header dlqctl adds to redriven
// messages.
const MarkerAttribute = "dlqctl-redrive"

// SHA256Hex returns the lowercase hex SHA-256 of s.
func SHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ARNName is the resource name at the end of an ARN of the given service
// (arn:PARTITION:SERVICE:REGION:ACCOUNT:NAME), or "" when arn is not one.
func ARNName(arn, service string) string {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != service {
		return ""
	}
	return parts[5]
}

// MessageSize is the size SQS counts against its 1 MiB limit — the body
// plus every attribute's name, data type and value — and the size dlqctl
// gives a record whose broker did not say (offline input).
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

// SourceQueue names the queue the message was dead-lettered from, as far
// as its broker says: the SQS DeadLetterQueueSourceArn's queue name, the
// queue of RabbitMQ's first death ("" when unknown).
func (r *Record) SourceQueue() string {
	if n := ARNName(r.System.SourceQueueARN, "sqs"); n != "" {
		return n
	}
	if a := r.System.AMQP; a != nil {
		if a.FirstDeath != nil && a.FirstDeath.Queue != "" {
			return a.FirstDeath.Queue
		}
		if len(a.Deaths) > 0 {
			return a.Deaths[len(a.Deaths)-1].Queue
		}
	}
	if k := r.System.Kafka; k != nil && k.Origin != nil {
		return k.Origin.Topic
	}
	return ""
}

// DeadLetterReason is why the broker dead-lettered the message, when it
// says: RabbitMQ's newest death reason (x-last-death-reason, else the
// newest x-death entry), "recoverer" for a copy Spring AMQP's
// RepublishMessageRecoverer published itself; "" otherwise (SQS records
// no reason).
func (r *Record) DeadLetterReason() string {
	a := r.System.AMQP
	if a == nil {
		return ""
	}
	switch {
	case a.LastDeath != nil && a.LastDeath.Reason != "":
		return a.LastDeath.Reason
	case len(a.Deaths) > 0:
		return a.Deaths[0].Reason
	}
	if _, ok := r.Attributes["x-exception-message"]; ok {
		return "recoverer"
	}
	if _, ok := r.Attributes["x-original-exchange"]; ok {
		return "recoverer"
	}
	return ""
}
