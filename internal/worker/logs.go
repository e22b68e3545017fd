package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwl "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Log styles: how the demo consumer writes its failures to CloudWatch Logs,
// as three kinds of real consumers do.
const (
	// StylePowertools: a Python Lambda function logging with AWS Lambda
	// Powertools — one JSON object per line (level, message, exception,
	// exception_name, function_request_id, the record's messageId).
	StylePowertools = "powertools"
	// StyleService: a Go service on ECS logging with log/slog's text
	// handler — one logfmt line per failure with message_id and err.
	StyleService = "service"
	// StyleJava: a Spring Boot (logback) listener — a text line naming the
	// message id, followed by the exception and its stack trace.
	StyleJava = "java"
	// StyleLambda: a Node.js Lambda function without structured logging —
	// the runtime's START/END/REPORT lines, the handler's "processing record
	// <messageId>" INFO line, and the invocation's error (Invoke Error, or
	// Task timed out) keyed only by the request id.
	StyleLambda = "lambda"
)

// LogStyles lists the styles.
var LogStyles = []string{StylePowertools, StyleService, StyleJava, StyleLambda}

// LogsAPI is what the worker needs from CloudWatch Logs.
type LogsAPI interface {
	CreateLogGroup(context.Context, *cwl.CreateLogGroupInput, ...func(*cwl.Options)) (*cwl.CreateLogGroupOutput, error)
	CreateLogStream(context.Context, *cwl.CreateLogStreamInput, ...func(*cwl.Options)) (*cwl.CreateLogStreamOutput, error)
	PutLogEvents(context.Context, *cwl.PutLogEventsInput, ...func(*cwl.Options)) (*cwl.PutLogEventsOutput, error)
}

// LogSink writes what the worker does to a log group in one style.
type LogSink struct {
	API   LogsAPI
	Group string
	Style string
	// Service names the consumer in its log lines (default "orders-consumer").
	Service string

	mu      sync.Mutex
	ready   bool
	streams map[int]string
}

// Ensure creates the log group (an existing one is fine).
func (s *LogSink) Ensure(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ensureLocked(ctx)
}

func (s *LogSink) ensureLocked(ctx context.Context) error {
	if s.ready {
		return nil
	}
	switch s.Style {
	case StylePowertools, StyleService, StyleJava, StyleLambda:
	default:
		return fmt.Errorf("unknown log style %q (want one of %v)", s.Style, LogStyles)
	}
	_, err := s.API.CreateLogGroup(ctx, &cwl.CreateLogGroupInput{LogGroupName: aws.String(s.Group)})
	var exists *cwltypes.ResourceAlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("create log group %s: %w", s.Group, err)
	}
	s.ready = true
	s.streams = map[int]string{}
	return nil
}

func (s *LogSink) service() string {
	if s.Service != "" {
		return s.Service
	}
	return "orders-consumer"
}

// stream returns the log stream of receive loop i, created on first use,
// named as the platform names them.
func (s *LogSink) stream(ctx context.Context, i int) (string, error) {
	if name, ok := s.streams[i]; ok {
		return name, nil
	}
	day := time.Now().UTC().Format("2006/01/02")
	var name string
	switch s.Style {
	case StyleService, StyleJava:
		name = fmt.Sprintf("%s/%s/%s", s.service(), s.service(), randHex(16)) // ECS awslogs: prefix/container/task id
	default:
		name = fmt.Sprintf("%s/[$LATEST]%s", day, randHex(16)) // Lambda: one stream per execution environment
	}
	if _, err := s.API.CreateLogStream(ctx, &cwl.CreateLogStreamInput{LogGroupName: aws.String(s.Group), LogStreamName: aws.String(name)}); err != nil {
		var exists *cwltypes.ResourceAlreadyExistsException
		if !errors.As(err, &exists) {
			return "", fmt.Errorf("create log stream %s: %w", name, err)
		}
	}
	s.streams[i] = name
	return name, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func uuid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// line is one log event being written.
type line struct {
	at  time.Time
	msg string
}

// Batch logs one received batch of receive loop i: the messages that
// failed (in mode) and those processed. Lines are written in time order
// with PutLogEvents.
func (s *LogSink) Batch(ctx context.Context, i int, mode string, ok, bad []types.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureLocked(ctx); err != nil {
		return err
	}
	stream, err := s.stream(ctx, i)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	var lines []line
	add := func(msg string) {
		lines = append(lines, line{at: now.Add(time.Duration(len(lines)) * time.Millisecond), msg: msg})
	}
	switch s.Style {
	case StyleLambda:
		// One invocation for the records that fail, one for the rest (as
		// with partial batch responses turned off per invocation).
		for gi, group := range [][]types.Message{bad, ok} {
			if len(group) == 0 {
				continue
			}
			failed := gi == 0
			rid := uuid()
			add(fmt.Sprintf("START RequestId: %s Version: $LATEST", rid))
			for _, m := range group {
				add(fmt.Sprintf("%s\t%s\tINFO\tprocessing record %s", ts(now), rid, aws.ToString(m.MessageId)))
			}
			status := ""
			switch {
			case failed && mode == ModeDown:
				add(fmt.Sprintf("%s %s Task timed out after 3.00 seconds", ts(now), rid))
				status = "\tStatus: timeout"
			case failed:
				// The Node.js runtime's order: errorType, errorMessage, stack.
				inv, _ := json.Marshal(struct {
					ErrorType    string   `json:"errorType"`
					ErrorMessage string   `json:"errorMessage"`
					Stack        []string `json:"stack"`
				}{"TypeError", "Cannot read properties of null (reading 'toFixed')", []string{
					"TypeError: Cannot read properties of null (reading 'toFixed')",
					"    at chargeOrder (/var/task/index.js:27:31)", "    at Runtime.handler (/var/task/index.js:12:13)"}})
				add(fmt.Sprintf("%s\t%s\tERROR\tInvoke Error \t%s", ts(now), rid, inv))
				status = "\tStatus: error\tError Type: Runtime.HandlerError"
			}
			ms := 42 // a processed batch; a failed one ran into the 3 s timeout or failed late
			if failed {
				ms = 3000
			}
			add(fmt.Sprintf("END RequestId: %s", rid))
			add(fmt.Sprintf("REPORT RequestId: %s\tDuration: %d.00 ms\tBilled Duration: %d ms\tMemory Size: 128 MB\tMax Memory Used: 71 MB%s",
				rid, ms, ms, status))
		}
	case StylePowertools:
		rid := uuid()
		for _, m := range bad {
			add(s.powertools(now, rid, m, mode))
		}
		for _, m := range ok {
			b, _ := json.Marshal(map[string]any{"level": "INFO", "location": "process_record:38", "message": "record processed",
				"timestamp": now.Format("2006-01-02 15:04:05,000+0000"), "service": s.service(), "function_request_id": rid,
				"messageId": aws.ToString(m.MessageId)})
			add(string(b))
		}
	case StyleService:
		for _, m := range bad {
			errText := "charge order: dial tcp 10.0.12.7:5432: connect: connection refused"
			if mode != ModeDown {
				errText = "validate order: payload.amount: must not be null"
			}
			add(fmt.Sprintf("time=%s level=ERROR msg=\"handling message failed\" service=%s message_id=%s receive_count=%s err=%q",
				now.Format(time.RFC3339Nano), s.service(), aws.ToString(m.MessageId), m.Attributes["ApproximateReceiveCount"], errText))
		}
		for _, m := range ok {
			add(fmt.Sprintf("time=%s level=INFO msg=\"message handled\" service=%s message_id=%s", now.Format(time.RFC3339Nano), s.service(), aws.ToString(m.MessageId)))
		}
	case StyleJava:
		for _, m := range bad {
			head := fmt.Sprintf("%s ERROR 1 --- [ntainer#0-0-C-1] c.e.orders.OrderListener                 : Failed to process SQS message %s",
				now.Format("2006-01-02 15:04:05.000"), aws.ToString(m.MessageId))
			exc := "java.net.SocketTimeoutException: Read timed out\n\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)\n\tat com.example.orders.PaymentsClient.charge(PaymentsClient.java:61)\n\tat com.example.orders.OrderListener.onMessage(OrderListener.java:44)"
			if mode != ModeDown {
				exc = "com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot map `null` into type `double` (set DeserializationConfig.DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES to 'false' to allow)\n at [Source: (String)\"{...}\"; line: 1, column: 58] (through reference chain: com.example.orders.OrderPaid[\"payload\"]->com.example.orders.Payload[\"amount\"])\n\tat com.fasterxml.jackson.databind.exc.MismatchedInputException.from(MismatchedInputException.java:59)\n\tat com.example.orders.OrderListener.onMessage(OrderListener.java:39)"
			}
			add(head + "\n" + exc)
		}
		for _, m := range ok {
			add(fmt.Sprintf("%s  INFO 1 --- [ntainer#0-0-C-1] c.e.orders.OrderListener                 : Processed SQS message %s",
				now.Format("2006-01-02 15:04:05.000"), aws.ToString(m.MessageId)))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	events := make([]cwltypes.InputLogEvent, len(lines))
	for j, l := range lines {
		events[j] = cwltypes.InputLogEvent{Timestamp: aws.Int64(l.at.UnixMilli()), Message: aws.String(l.msg)}
	}
	_, err = s.API.PutLogEvents(ctx, &cwl.PutLogEventsInput{LogGroupName: aws.String(s.Group), LogStreamName: aws.String(stream), LogEvents: events})
	return err
}

func ts(t time.Time) string { return t.Format("2006-01-02T15:04:05.000Z") }

// powertools renders a failed record as Lambda Powertools (Python) logs
// logger.exception(...) with the record's messageId appended as a key.
func (s *LogSink) powertools(now time.Time, rid string, m types.Message, mode string) string {
	name, exc := "TypeError", "Traceback (most recent call last):\n  File \"/var/task/app.py\", line 41, in record_handler\n    total = payload[\"amount\"] * rate\n            ~~~~~~~~~~~~~~~~~~^~~~~~\nTypeError: unsupported operand type(s) for *: 'NoneType' and 'float'"
	if mode == ModeDown {
		name = "ConnectionError"
		exc = "Traceback (most recent call last):\n  File \"/var/task/app.py\", line 44, in record_handler\n    resp = session.post(PAYMENTS_URL, json=payload, timeout=3)\n  File \"/opt/python/requests/adapters.py\", line 519, in send\n    raise ConnectionError(e, request=request)\nrequests.exceptions.ConnectionError: HTTPSConnectionPool(host='payments.internal', port=443): Max retries exceeded with url: /charges (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2c1d2e50>: Failed to establish a new connection: [Errno 111] Connection refused'))"
	}
	b, _ := json.Marshal(map[string]any{
		"level": "ERROR", "location": "record_handler:41", "message": "failed to process record",
		"timestamp": now.Format("2006-01-02 15:04:05,000+0000"), "service": s.service(), "cold_start": false,
		"function_name": s.service(), "function_memory_size": "256",
		"function_arn":        "arn:aws:lambda:us-east-1:123456789012:function:" + s.service(),
		"function_request_id": rid, "messageId": aws.ToString(m.MessageId),
		"exception": exc, "exception_name": name, "xray_trace_id": "1-" + randHex(4) + "-" + randHex(12),
	})
	return string(b)
}
