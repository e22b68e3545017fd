package logs

import (
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

const (
	mid = "5f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f"
	rid = "9b8a7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d"
)

func ev(msg string) Event {
	return Event{Group: "/g", Stream: "s", Timestamp: time.Unix(1700000000, 0).UTC(), Message: msg}
}

// classifyFailure runs the built-in rules over a plain message carrying f.
func classifyFailure(t *testing.T, f *record.Failure) *record.Record {
	t.Helper()
	rec := &record.Record{MessageID: mid, Body: `{"eventType":"OrderPaid","payload":{"amount":1}}`, Failure: f}
	classify.Builtin().Explain(rec, map[string]any{"eventType": "OrderPaid"})
	return rec
}

// The error texts of the consumers' log styles are classified by the
// built-in failure families like any other failure text.
func TestExtractStylesAndClassify(t *testing.T) {
	cases := []struct {
		name   string
		lines  []string
		class  string
		typ    string
		reason string
	}{
		{"powertools python traceback", []string{`{"level":"ERROR","location":"record_handler:41","message":"failed to process record","service":"payments","function_request_id":"` + rid + `","messageId":"` + mid + `","exception":"Traceback (most recent call last):\n  File \"/var/task/app.py\", line 44, in record_handler\n    resp = session.post(URL)\nrequests.exceptions.ConnectionError: HTTPSConnectionPool(host='payments.internal', port=443): Max retries exceeded (Caused by NewConnectionError('[Errno 111] Connection refused'))","exception_name":"ConnectionError"}`},
			"transient", "ConnectionError", "HTTPSConnectionPool"},
		{"powertools typescript error object", []string{`{"level":"ERROR","message":"record failed","messageId":"` + mid + `","error":{"name":"SyntaxError","location":"/var/task/index.js:12","message":"Unexpected token u in JSON at position 0","stack":"SyntaxError: Unexpected token u in JSON at position 0\n    at JSON.parse (<anonymous>)"}}`},
			"permanent", "SyntaxError", "Unexpected token u in JSON"},
		{"structured error_type and stack_trace (Java powertools/logback JSON)", []string{`{"level":"ERROR","message":"Failed to process message","message_id":"` + mid + `","error_type":"com.amazonaws.services.dynamodbv2.model.ProvisionedThroughputExceededException","stack_trace":"com.amazonaws.services.dynamodbv2.model.ProvisionedThroughputExceededException: Rate of requests exceeds the allowed throughput\n\tat com.example.Repo.save(Repo.java:10)"}`},
			"transient", "com.amazonaws.services.dynamodbv2.model.ProvisionedThroughputExceededException", ""},
		{"go slog text", []string{`time=2024-05-01T12:00:00.123Z level=ERROR msg="handling message failed" message_id=` + mid + ` err="charge order: dial tcp 10.0.12.7:5432: connect: connection refused"`},
			"transient", "", "charge order: dial tcp 10.0.12.7:5432: connect: connection refused"},
		{"go slog validation", []string{`time=2024-05-01T12:00:00.123Z level=ERROR msg="handling message failed" message_id=` + mid + ` err="validate order: payload.amount: must not be null"`},
			"permanent", "", "validate order: payload.amount: must not be null"},
		{"spring boot with stack trace", []string{"2024-05-01 12:00:00.123 ERROR 1 --- [ntainer#0-0-C-1] c.e.orders.OrderListener : Failed to process SQS message " + mid + "\njava.net.SocketTimeoutException: Read timed out\n\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)"},
			"transient", "java.net.SocketTimeoutException", "Read timed out"},
		{"jackson mismatched input", []string{"2024-05-01 12:00:00.123 ERROR 1 --- [main] c.e.OrderListener : Failed to process SQS message " + mid + "\ncom.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot map `null` into type `double`\n\tat x.y(Z.java:1)"},
			"permanent", "com.fasterxml.jackson.databind.exc.MismatchedInputException", "Cannot map `null` into type `double`"},
		{"postgres deadlock via Caused by", []string{"2024-05-01 12:00:00,123 ERROR [pool-1-thread-3] o.e.Consumer - message " + mid + " failed\norg.springframework.dao.CannotAcquireLockException: could not execute statement\nCaused by: org.postgresql.util.PSQLException: ERROR: deadlock detected"},
			"transient", "org.springframework.dao.CannotAcquireLockException", "could not execute statement"},
		{"lambda node invoke error", []string{"2024-05-01T12:00:00.000Z\t" + rid + "\tERROR\tInvoke Error \t" + `{"errorType":"TypeError","errorMessage":"Cannot read properties of null (reading 'toFixed')","stack":["TypeError: Cannot read properties of null (reading 'toFixed')","    at chargeOrder (/var/task/index.js:27:31)"]}`},
			"permanent", "TypeError", "Cannot read properties of null (reading 'toFixed')"},
		{"lambda timeout and report", []string{"2024-05-01T12:00:03.000Z " + rid + " Task timed out after 3.00 seconds",
			"REPORT RequestId: " + rid + "\tDuration: 3000.00 ms\tBilled Duration: 3000 ms\tMemory Size: 128 MB\tMax Memory Used: 71 MB\tStatus: timeout"},
			"transient", "", "Task timed out after 3.00 seconds"},
		{"lambda python runtime error", []string{"[ERROR] KeyError: 'orderId'\nTraceback (most recent call last):\n  File \"/var/task/app.py\", line 9, in handler\n    order = body['orderId']"},
			"permanent", "KeyError", "'orderId'"},
		{"go context deadline", []string{`time=x level=ERROR msg="handling message failed" message_id=` + mid + ` err="fetch customer: context deadline exceeded"`},
			"transient", "", "context deadline exceeded"},
		{"python boto throttling", []string{`{"level":"ERROR","message":"failed to process record","messageId":"` + mid + `","exception":"Traceback (most recent call last):\n  File \"/var/task/app.py\", line 3, in h\nbotocore.exceptions.ClientError: An error occurred (ThrottlingException) when calling the PutItem operation (reached max retries: 4): Rate exceeded","exception_name":"ClientError"}`},
			"transient", "ClientError", "Rate exceeded"},
		{"python exception without an Error suffix", []string{`{"level":"ERROR","message":"failed","messageId":"` + mid + `","exception":"Traceback (most recent call last):\n  File \"x\", line 1\npsycopg2.errors.SerializationFailure: could not serialize access due to concurrent update"}`},
			"transient", "psycopg2.errors.SerializationFailure", "could not serialize access"},
		{"pydantic validation", []string{`{"level":"ERROR","message":"failed","messageId":"` + mid + `","exception":"Traceback (most recent call last):\n  File \"x\", line 1\npydantic_core._pydantic_core.ValidationError: 1 validation error for Order","exception_name":"ValidationError"}`},
			"permanent", "ValidationError", "1 validation error for Order"},
		{"duplicate key behind a Spring exception", []string{"2024-05-01 12:00:00.123 ERROR 1 --- [main] c.e.OrderListener : Failed to process SQS message " + mid + "\norg.springframework.dao.DuplicateKeyException: PreparedStatementCallback\nCaused by: org.postgresql.util.PSQLException: ERROR: duplicate key value violates unique constraint \"orders_pkey\""},
			"permanent", "org.springframework.dao.DuplicateKeyException", ""},
		{".NET connection refused", []string{"2024-05-01 12:00:00,123 ERROR [pool-1] OrderConsumer - message " + mid + " failed\nSystem.Net.Http.HttpRequestException: Connection refused (payments.internal:443)"},
			"transient", "System.Net.Http.HttpRequestException", "Connection refused"},
		{"business rejection", []string{`{"level":"ERROR","message":"Payment declined: insufficient funds","messageId":"` + mid + `"}`},
			"business", "", "insufficient funds"},
		{"throttled downstream", []string{`{"level":"ERROR","msg":"publish failed","messageId":"` + mid + `","err":"operation error SNS: Publish, https response error StatusCode: 400, RequestID: x, api error Throttling: Rate exceeded"}`},
			"transient", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var evs []Event
			for _, l := range c.lines {
				e := ev(l)
				if !isErrorEvent(e) {
					t.Fatalf("not seen as an error line: %q", l)
				}
				evs = append(evs, e)
			}
			f := extract(evs, "")
			if f.Format != "logs" || f.Source == nil || f.Source.LogGroup != "/g" || len(f.Source.Lines) != len(c.lines) {
				t.Fatalf("failure %+v", f)
			}
			if c.typ != "" && f.Type != c.typ {
				t.Errorf("type %q, want %q (evidence %+v)", f.Type, c.typ, f.Evidence)
			}
			if c.reason != "" && !strings.Contains(f.Reason, c.reason) {
				t.Errorf("reason %q, want it to contain %q (evidence %+v)", f.Reason, c.reason, f.Evidence)
			}
			rec := classifyFailure(t, f)
			if rec.Class != c.class {
				t.Errorf("classified %s by %s, want %s (evidence %+v)", rec.Class, rec.Rule, c.class, f.Evidence)
			}
		})
	}
}

func TestInfoLinesAreNotErrors(t *testing.T) {
	for _, l := range []string{
		"2024-05-01T12:00:00.000Z\t" + rid + "\tINFO\tprocessing record " + mid,
		`{"level":"INFO","message":"record processed","messageId":"` + mid + `"}`,
		`time=2024-05-01T12:00:00Z level=INFO msg="message handled" message_id=` + mid,
		"START RequestId: " + rid + " Version: $LATEST",
		"REPORT RequestId: " + rid + "\tDuration: 12.00 ms\tBilled Duration: 13 ms\tMemory Size: 128 MB\tMax Memory Used: 71 MB",
		"2024-05-01 12:00:00.123  INFO 1 --- [main] c.e.OrderListener : Processed SQS message " + mid,
	} {
		if isErrorEvent(ev(l)) {
			t.Errorf("an info line counted as an error: %q", l)
		}
	}
}

func TestRequestIDOf(t *testing.T) {
	for l, want := range map[string]string{
		"2024-05-01T12:00:00.000Z\t" + rid + "\tINFO\tprocessing record " + mid:          rid,
		"[INFO]\t2024-05-01T12:00:00.000Z\t" + rid + "\tprocessing record " + mid:        rid,
		`{"level":"INFO","function_request_id":"` + rid + `","messageId":"` + mid + `"}`: rid,
		"END RequestId: " + rid:                      rid,
		`time=x level=INFO msg=ok message_id=` + mid: "",
	} {
		if got := requestIDOf(ev(l)); got != want {
			t.Errorf("requestIDOf(%q) = %q, want %q", l, got, want)
		}
	}
}

func TestPatternAndBatches(t *testing.T) {
	if got := Term(mid); got != "5f0c1d2e" {
		t.Errorf("Term(uuid) = %q", got)
	}
	if got := Term("msg-1"); got != "msg-1" {
		t.Errorf("Term(short) = %q", got)
	}
	if got := Pattern([]string{"a1", `b"2`}); got != `?"a1" ?"b\"2"` {
		t.Errorf("Pattern = %q", got)
	}
	if got := Pattern([]string{"a1"}); got != `"a1"` {
		t.Errorf("single Pattern = %q", got)
	}
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, strings.Replace(mid, "5f0c1d2e", strings.Repeat("0", 8-len(itoa(i)))+itoa(i), 1))
	}
	bs := Batches(ids, DefaultBatch)
	if len(bs) != 16 {
		t.Errorf("1000 UUIDs in %d batches, want 16 (64 per call)", len(bs))
	}
	n := 0
	for _, b := range bs {
		n += len(b)
		if p := Pattern(termsOf(b)); len(p) > MaxPatternLen {
			t.Errorf("pattern of %d characters exceeds the API limit", len(p))
		}
	}
	if n != 1000 {
		t.Errorf("batches hold %d ids, want 1000", n)
	}
	// Ids without a UUID shape are searched whole; the 1024-character
	// limit caps the batch.
	var long []string
	for i := 0; i < 100; i++ {
		long = append(long, strings.Repeat("x", 60)+itoa(i))
	}
	for _, b := range Batches(long, DefaultBatch) {
		if p := Pattern(termsOf(b)); len(p) > MaxPatternLen {
			t.Errorf("pattern of %d characters exceeds the API limit", len(p))
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestParseWindow(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	rec := &record.Record{MessageID: mid, System: record.System{SentAt: now.Add(-2 * time.Hour)}}
	w, err := ParseWindow("")
	if err != nil {
		t.Fatal(err)
	}
	if r := w.Request(rec, now); !r.From.Equal(now.Add(-2*time.Hour-SendMargin)) || r.To.Before(now) {
		t.Errorf("default window %v..%v", r.From, r.To)
	}
	fifo := *rec
	fifo.System.MessageGroupID = "g"
	if r := w.Request(&fifo, now); !r.From.Equal(now.Add(-2*time.Hour - FIFOMargin)) {
		t.Errorf("FIFO window starts %v", r.From)
	}
	if w, _ = ParseWindow("3d"); !w.Request(rec, now).From.Equal(now.Add(-72 * time.Hour)) {
		t.Errorf("3d window starts %v", w.Request(rec, now).From)
	}
	w, err = ParseWindow("2024-05-01T08:00:00Z..2024-05-01T09:00:00Z")
	if r := w.Request(rec, now); err != nil || r.From.Hour() != 8 || r.To.Hour() != 9 {
		t.Errorf("fixed window %v..%v (%v)", r.From, r.To, err)
	}
	for _, bad := range []string{"yesterday", "2024-05-01..2024-05-02", "2024-05-01T10:00:00Z..2024-05-01T09:00:00Z", "-3h"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("ParseWindow(%q) accepted", bad)
		}
	}
}

// Log lines attached as failure context are masked like the rest of the
// record: consumers log payloads and headers.
func TestLogLinesAreRedacted(t *testing.T) {
	f := extract([]Event{ev(`{"level":"ERROR","message":"charge failed","messageId":"` + mid + `","request":{"card_number":"4111111111111111","password":"hunter2"},"error":"card declined"}`),
		ev(`time=x level=ERROR msg="auth failed" message_id=` + mid + ` password=hunter2 err="invalid token"`)}, "")
	rec := inspect.NewRedactor(nil).Record(record.Record{MessageID: mid, Failure: f})
	for _, l := range rec.Failure.Source.Lines {
		if strings.Contains(l.Message, "4111111111111111") || strings.Contains(l.Message, "hunter2") {
			t.Errorf("a secret survived redaction: %s", l.Message)
		}
	}
	if !strings.Contains(f.Source.Lines[0].Message, "hunter2") {
		t.Error("redaction changed the record it was given, not a copy")
	}
}
