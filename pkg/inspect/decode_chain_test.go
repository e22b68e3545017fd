package inspect

import (
	"reflect"
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
		checkChainMemo(t, c.text, got)
	}
}

// checkChainMemo: the decoders' memo of chains gives what ParseChain
// gives, the first time and from the memo.
func checkChainMemo(t *testing.T, text string, want Chain) {
	t.Helper()
	for range 2 {
		if got := parseChainMemo(text); !reflect.DeepEqual(got, want) {
			t.Errorf("parseChainMemo(%.40q) = %+v, want %+v", text, got, want)
		}
	}
}

// TestGenericKindMemo: the kind of a key from the memo is the kind read
// afresh, for every known failure key in several spellings and for keys
// that name nothing, asked again after other keys took their slots.
func TestGenericKindMemo(t *testing.T) {
	var keys []string
	for k := range genericKeys {
		keys = append(keys, k, strings.ToUpper(k), "x-"+k, "dlq_"+k, "my"+k+"Count", k+"_id")
	}
	keys = append(keys, "", "orderId", "ErrorDetailsStamp", strings.Repeat("lastError", 8), "retryCount", "Body")
	var buf [64]byte
	for range 3 {
		for _, k := range keys {
			want := keyKind(buf[:], k)
			if len(k) > 160 {
				want = ""
			}
			for range 2 {
				if got := genericKind(buf[:], k); got != want {
					t.Fatalf("genericKind(%q) = %q, want %q", k, got, want)
				}
			}
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

// TestParseChainGroupsAndStatuses: exception groups give every part as a
// root (Python ExceptionGroup boxes, .NET AggregateException's "(Inner
// Exception #N)", Node AggregateError's [errors]); a gRPC status's
// description is its root whatever the client wrote it as; ": " inside
// parentheses splits no wrapper.
func TestParseChainGroupsAndStatuses(t *testing.T) {
	cases := []struct {
		name, text, root string
		group            []string
	}{
		{"python ExceptionGroup",
			"  + Exception Group Traceback (most recent call last):\n  |   File \"/app/w.py\", line 4, in main\n  |     async with asyncio.TaskGroup() as tg:\n  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)\n  +-+---------------- 1 ----------------\n    | Traceback (most recent call last):\n    |   File \"/app/w.py\", line 9, in f\n    | httpx.ConnectTimeout: timed out\n    +---------------- 2 ----------------\n    | ValueError: bad amount\n    +------------------------------------",
			"httpx.ConnectTimeout: timed out", []string{"httpx.ConnectTimeout: timed out", "ValueError: bad amount"}},
		{".NET AggregateException inner exceptions",
			"System.AggregateException: One or more errors occurred. (A task was canceled.) (Connection refused)\n ---> System.Threading.Tasks.TaskCanceledException: A task was canceled.\n   --- End of inner exception stack trace ---\n   at X.Y()\n---> (Inner Exception #0) System.Threading.Tasks.TaskCanceledException: A task was canceled.<---\n\n---> (Inner Exception #1) System.Net.Http.HttpRequestException: Connection refused (orders:80)<---",
			"System.Threading.Tasks.TaskCanceledException: A task was canceled.",
			[]string{"System.Threading.Tasks.TaskCanceledException: A task was canceled.", "System.Net.Http.HttpRequestException: Connection refused (orders:80)"}},
		{"node AggregateError",
			"AggregateError [ECONNREFUSED]: \n    at internalConnectMultiple (node:net:1117:18) {\n  code: 'ECONNREFUSED',\n  [errors]: [\n    Error: connect ECONNREFUSED ::1:5432\n        at createConnectionError (node:net:1647:14) {\n      errno: -111,\n    },\n    Error: connect ECONNREFUSED 127.0.0.1:5432\n        at createConnectionError (node:net:1647:14)\n  ]\n}",
			"Error: connect ECONNREFUSED ::1:5432", []string{"Error: connect ECONNREFUSED ::1:5432", "Error: connect ECONNREFUSED 127.0.0.1:5432"}},
		{"node fetch failed: the [cause], parentheses kept whole",
			"TypeError: fetch failed\n    at node:internal/deps/undici/undici:13502:13 {\n  [cause]: ConnectTimeoutError: Connect Timeout Error (attempted address: api.psp.example:443, timeout: 10000ms)\n      at onConnectTimeout (node:internal/deps/undici/undici:2602:28) {\n    code: 'UND_ERR_CONNECT_TIMEOUT'\n  }\n}",
			"ConnectTimeoutError: Connect Timeout Error (attempted address: api.psp.example:443, timeout: 10000ms)", nil},
		{"go gRPC status", "rpc error: code = ResourceExhausted desc = grpc: received message larger than max (5242880 vs. 4194304)",
			"received message larger than max (5242880 vs. 4194304)", nil},
		{"grpcio status", "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.RESOURCE_EXHAUSTED\n\tdetails = \"Sent message larger than max (6291456 vs. 4194304)\"\n>",
			"Sent message larger than max (6291456 vs. 4194304)", nil},
		{"grpc-java status", "io.grpc.StatusRuntimeException: RESOURCE_EXHAUSTED: gRPC message exceeds maximum size 4194304: 8388608",
			"gRPC message exceeds maximum size 4194304: 8388608", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ParseChain(c.text)
			checkChainMemo(t, c.text, got)
			if got.Root != c.root {
				t.Errorf("root = %q, want %q", got.Root, c.root)
			}
			if strings.Join(got.Group, "|") != strings.Join(c.group, "|") {
				t.Errorf("group = %q, want %q", got.Group, c.group)
			}
		})
	}
}

// TestShapeEvidenceUnderUnknownNames: error objects and error-level log
// lines are failure evidence by their shape under names no list knows; in
// the message's own data they are hints.
func TestShapeEvidenceUnderUnknownNames(t *testing.T) {
	cases := []struct {
		name, body string
		attrs      map[string]string
		want       string // a piece of evidence text
		weak       bool
	}{
		{"node-postgres error in a header", `{"orderId":"o-1"}`,
			map[string]string{"x-last": `{"name":"error","severity":"ERROR","code":"40P01","message":"deadlock detected","routine":"DeadLockReport"}`}, "SQLSTATE 40P01", false},
		{"AWS SDK v3 error under an unknown key", `{"orderId":"o-1","processing":{"outcome":{"name":"ThrottlingException","$fault":"client","$metadata":{"httpStatusCode":400},"message":"Rate exceeded"}}}`,
			nil, "ThrottlingException", false},
		{"logfmt line in an attribute", `{"orderId":"o-1"}`,
			map[string]string{"last_log": `level=error msg="handle failed" err="dial tcp 10.0.0.9:5432: connect: connection refused"`}, "handle failed: dial tcp 10.0.0.9:5432: connect: connection refused", false},
		{"an error object inside the payload is a hint", `{"type":"invoice.payment_failed","data":{"object":{"last_error":{"name":"CardError","message":"Your card was declined."}}}}`,
			nil, "CardError", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := record.Record{MessageID: "m", Body: c.body, Attributes: map[string]record.Attribute{}}
			for k, v := range c.attrs {
				rec.Attributes[k] = record.Attribute{Type: "String", Value: v}
			}
			Decode(&rec)
			if rec.Failure == nil {
				t.Fatalf("no failure decoded")
			}
			for _, e := range rec.Failure.Evidence {
				if e.Text == c.want {
					if e.Weak != c.weak {
						t.Errorf("%s: weak = %v, want %v", e.Field, e.Weak, c.weak)
					}
					return
				}
			}
			t.Errorf("no evidence %q in %+v", c.want, rec.Failure.Evidence)
		})
	}
}
