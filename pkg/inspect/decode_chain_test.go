package inspect

import (
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// TestParseChain: the root cause of chains in every stack's own shape.
func TestParseChain(t *testing.T) {
	cases := []struct{ name, text, head, root string }{
		{"java caused by, the last one",
			"org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method threw exception\n\tat org.springframework.kafka.listener.KafkaMessageListenerContainer.decorateException(KafkaMessageListenerContainer.java:2876)\nCaused by: org.springframework.messaging.converter.MessageConversionException: failed to convert\n\tat x.Y.z(Y.java:1)\nCaused by: java.net.SocketTimeoutException: Read timed out\n\tat java.base/java.net.SocketInputStream.socketRead0(Native Method)\n\t... 12 more",
			"org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method threw exception", "java.net.SocketTimeoutException: Read timed out"},
		{".NET inner exceptions, the innermost",
			"System.InvalidOperationException: Handler failed\n ---> System.Net.Http.HttpRequestException: An error occurred while sending the request.\n ---> System.Net.Sockets.SocketException (111): Connection refused\n   at System.Net.Sockets.Socket.Connect()\n   --- End of inner exception stack trace ---\n   at Acme.Handler.Handle()",
			"System.InvalidOperationException: Handler failed", "System.Net.Sockets.SocketException (111): Connection refused"},
		{".NET on one line", "System.AggregateException: One or more errors occurred. ---> System.FormatException: Input string was not in a correct format.",
			"System.AggregateException: One or more errors occurred.", "System.FormatException: Input string was not in a correct format."},
		{"python traceback, final exception line",
			"Traceback (most recent call last):\n  File \"/app/worker.py\", line 41, in handle\n    order = json.loads(body)\n  File \"/usr/lib/python3.11/json/__init__.py\", line 346, in loads\n    return _default_decoder.decode(s)\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
			"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)", ""},
		{"python chained traceback, the first exception",
			"Traceback (most recent call last):\n  File \"/app/db.py\", line 12, in connect\n    conn = psycopg2.connect(dsn)\npsycopg2.OperationalError: could not connect to server: Connection refused\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"/app/worker.py\", line 30, in handle\n    save(order)\napp.errors.SaveFailed: could not save order o-1",
			"app.errors.SaveFailed: could not save order o-1", "psycopg2.OperationalError: could not connect to server: Connection refused"},
		{"go wrapped error", "handle OrderPlaced: save order o-1: dial tcp 10.0.0.7:5432: connect: connection refused",
			"handle OrderPlaced: save order o-1: dial tcp 10.0.0.7:5432: connect: connection refused", "connection refused"},
		{"go: a value at the end keeps its phrase", `decode order: parse total: strconv.ParseFloat: parsing "abc": invalid syntax`,
			`decode order: parse total: strconv.ParseFloat: parsing "abc": invalid syntax`, "invalid syntax"},
		{"python message with a value is no chain", "ValueError: invalid literal for int() with base 10: 'abc'", "ValueError: invalid literal for int() with base 10: 'abc'", ""},
		{"node cause", "Error: failed to publish order o-1\n    at publish (/app/src/publisher.js:41:11)\n    at async handler (/app/src/index.js:12:5) {\n  [cause]: Error: connect ECONNREFUSED 10.0.0.9:5672\n      at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n}",
			"Error: failed to publish order o-1", "Error: connect ECONNREFUSED 10.0.0.9:5672"},
		{"php previous exception first",
			"PDOException: SQLSTATE[HY000] [2002] Connection refused in /app/vendor/laravel/framework/src/Illuminate/Database/Connectors/Connector.php:65\nStack trace:\n#0 /app/vendor/x.php(65): PDO->__construct()\n#1 {main}\n\nNext Illuminate\\Database\\QueryException: SQLSTATE[HY000] [2002] Connection refused (SQL: select * from orders) in /app/vendor/laravel/framework/src/Illuminate/Database/Connection.php:712\nStack trace:\n#0 {main}",
			"Illuminate\\Database\\QueryException: SQLSTATE[HY000] [2002] Connection refused (SQL: select * from orders)", "PDOException: SQLSTATE[HY000] [2002] Connection refused"},
		{"rust anyhow caused by", "Error: failed to process order o-1\n\nCaused by:\n    0: error sending request for url (http://inventory:8080/reserve)\n    1: error trying to connect: tcp connect error: Connection refused (os error 111)",
			"Error: failed to process order o-1", "Connection refused (os error 111)"},
		{"ruby backtrace head", "/app/app/jobs/sync_job.rb:14:in `perform': Net::ReadTimeout with #<TCPSocket:(closed)> (Net::ReadTimeout)\n\tfrom /usr/lib/ruby/3.2.0/net/protocol.rb:219:in `rbuf_fill'",
			"Net::ReadTimeout: Net::ReadTimeout with #<TCPSocket:(closed)>", ""},
		{"elixir", "** (DBConnection.ConnectionError) connection not available and request was dropped from queue after 2000ms\n    (db_connection 2.6.0) lib/db_connection.ex:1000: DBConnection.run/3\n    (my_app 0.1.0) lib/my_app/worker.ex:22: MyApp.Worker.perform/1",
			"DBConnection.ConnectionError: connection not available and request was dropped from queue after 2000ms", ""},
		{"spring nested exception is", "Could not read JSON: Unexpected character; nested exception is com.fasterxml.jackson.core.JsonParseException: Unexpected character ('x' (code 120))",
			"Could not read JSON: Unexpected character", "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('x' (code 120))"},
	}
	for _, c := range cases {
		got := ParseChain(c.text)
		if got.Head != c.head || got.Root != c.root {
			t.Errorf("%s:\n head %q\n want %q\n root %q\n want %q", c.name, got.Head, c.head, got.Root, c.root)
		}
	}
}

// TestFailureKeysByWords: keys that name errors, exceptions, faults,
// failures, reasons, tracebacks, stacks or details, in any case and
// nesting, and JSON in a string.
func TestFailureKeysByWords(t *testing.T) {
	cases := []struct {
		name, body string
		attrs      map[string]string
		want       string // a text that must be evidence
		kind       string
	}{
		{"python traceback key", `{"task":"x","traceback":"Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nredis.exceptions.ConnectionError: Error 111 connecting to redis:6379. Connection refused."}`, nil,
			"redis.exceptions.ConnectionError: Error 111 connecting to redis:6379. Connection refused.", record.EvidenceCause},
		{"rebus header attribute", `{"orderId":"o-1"}`, map[string]string{"rbs2-error-details": "System.TimeoutException: The operation has timed out.\n   at Acme.Handler.Handle()"},
			"System.TimeoutException", record.EvidenceType},
		{"elixir reason", `{"job":"sync","reason":"** (Jason.DecodeError) unexpected byte at position 0: 0x78 (\"x\")"}`, nil,
			"Jason.DecodeError", record.EvidenceType},
		{"nested under meta", `{"orderId":"o-1","meta":{"lastFailure":{"message":"connect ETIMEDOUT 10.0.0.1:443"}}}`, nil,
			"connect ETIMEDOUT 10.0.0.1:443", record.EvidenceMessage},
		{"json in a string", `{"orderId":"o-1","context":"{\"exceptionMessage\":\"deadlock detected\"}"}`, nil, "deadlock detected", record.EvidenceMessage},
		{"error type words", `{"orderId":"o-1","last_exception_class":"ActiveRecord::RecordInvalid"}`, nil, "ActiveRecord::RecordInvalid", record.EvidenceType},
	}
	for _, c := range cases {
		rec := record.Record{Body: c.body, Attributes: map[string]record.Attribute{}}
		for k, v := range c.attrs {
			rec.Attributes[k] = record.Attribute{Type: "String", Value: v}
		}
		Decode(&rec)
		if !hasEvidence(&rec, c.kind, c.want) {
			t.Errorf("%s: evidence %+v lacks %s %q", c.name, evidence(&rec), c.kind, c.want)
		}
	}
	// Counts, settings and ids are not failure text.
	for _, body := range []string{`{"orderId":"o-1","errorCount":"3 errors"}`, `{"orderId":"o-1","errorQueue":"orders-error"}`,
		`{"orderId":"o-1","payload":{"reason":"customer changed their mind"}}`, `{"orderId":"o-1","maxExceptions":"5"}`} {
		rec := record.Record{Body: body}
		Decode(&rec)
		if rec.Failure.HasContext() {
			t.Errorf("%s: failure %+v, want none", body, rec.Failure)
		}
	}
}

// TestValuesThatLookLikeFailures: a stack trace or exception line under
// any key is evidence; inside the payload it is a weak hint.
func TestValuesThatLookLikeFailures(t *testing.T) {
	rec := record.Record{Body: `{"orderId":"o-1","status":"failed","details_text":"java.net.SocketTimeoutException: Read timed out\n\tat java.net.SocketInputStream.read(SocketInputStream.java:171)\n\tat java.net.SocketInputStream.read(SocketInputStream.java:141)"}`}
	Decode(&rec)
	if !hasEvidence(&rec, record.EvidenceType, "java.net.SocketTimeoutException") || rec.Failure.Evidence[0].Weak {
		t.Errorf("evidence %+v, want the exception type, not weak", evidence(&rec))
	}
	rec = record.Record{Body: `{"eventType":"BuildFinished","payload":{"log":"java.lang.NullPointerException: boom"}}`}
	Decode(&rec)
	if !hasEvidence(&rec, record.EvidenceType, "java.lang.NullPointerException") || !rec.Failure.Evidence[0].Weak {
		t.Errorf("evidence %+v, want a weak hint", evidence(&rec))
	}
	rec = record.Record{Body: `{"orderId":"o-1","note":"Error handling is described at docs: see there"}`}
	Decode(&rec)
	if rec.Failure.HasContext() {
		t.Errorf("prose read as an exception: %+v", evidence(&rec))
	}
}

func evidence(rec *record.Record) []record.Evidence {
	if rec.Failure == nil {
		return nil
	}
	return rec.Failure.Evidence
}

func hasEvidence(rec *record.Record, kind, text string) bool {
	for _, e := range evidence(rec) {
		if e.Kind == kind && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}
