package classify

import (
	"encoding/json"
	"strings"
	"testing"
)

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRootCauseDecides: in a chain the root cause decides, not the
// wrapper's words.
func TestRootCauseDecides(t *testing.T) {
	cases := []struct {
		name, body string
		class      string
	}{
		{"java: a conversion wrapper around a socket timeout",
			`{"orderId":"o-1","stackTrace":` + jsonStr("org.springframework.messaging.converter.MessageConversionException: failed to deserialize payload\n\tat a.B.c(B.java:1)\nCaused by: java.net.SocketTimeoutException: Read timed out\n\tat d.E.f(E.java:2)") + `}`,
			ClassTransient},
		{"java: a timeout wrapper around a parse error",
			`{"orderId":"o-1","exception":` + jsonStr("java.util.concurrent.TimeoutException: handler gave up\n\tat a.B.c(B.java:1)\nCaused by: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('<' (code 60))\n\tat d.E.f(E.java:2)") + `}`,
			ClassPermanent},
		{".NET: innermost socket error under a format-ish wrapper",
			`{"orderId":"o-1","error":` + jsonStr("System.InvalidCastException: could not convert handler result ---> System.Net.Sockets.SocketException (104): Connection reset by peer") + `}`,
			ClassTransient},
		{"go: deserialize wrapper, connection reset root",
			`{"orderId":"o-1","error":"deserialize order: read body: read tcp 10.0.0.1:443: connection reset by peer"}`, ClassTransient},
		{"python chained: the first exception decides",
			`{"task":"sync","traceback":` + jsonStr("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nValueError: invalid literal for int() with base 10: 'x'\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"b.py\", line 2, in g\ncelery.exceptions.Retry: Retry in 60s: timeout") + `}`,
			ClassPermanent},
		{"node cause object", `{"orderId":"o-1","error":{"name":"Error","message":"validation of publish step failed","cause":{"name":"Error","message":"connect ECONNREFUSED 10.0.0.9:5672","code":"ECONNREFUSED"}}}`,
			ClassTransient},
	}
	rs := Builtin()
	for _, c := range cases {
		rec, parsed := decodedRecord(c.body, nil)
		ex := rs.Explain(rec, parsed)
		if ex.Outcome.Class != c.class {
			t.Errorf("%s: class %s by %s, want %s; verdict %+v", c.name, ex.Outcome.Class, ex.Outcome.Rule, c.class, ex.Verdict.Decisive)
		}
	}
}

// TestStackFamilies: errors of Rust, Ruby, PHP, Elixir and the Azure SDK
// by their own names.
func TestStackFamilies(t *testing.T) {
	cases := []struct{ text, class string }{
		{"reqwest::Error { kind: Request, url: \"http://inventory:8080/reserve\", source: hyper::Error(Connect, ConnectError(\"tcp connect error\", Os { code: 111, kind: ConnectionRefused, message: \"Connection refused\" })) }", ClassTransient},
		{"error sending request for url (http://inventory:8080/reserve): operation timed out", ClassTransient},
		{"hyper::Error(IncompleteMessage): connection closed before message completed", ClassTransient},
		{"serde_json::Error: missing field `customer_id` at line 1 column 42", ClassPermanent},
		{"invalid type: string \"abc\", expected u32 at line 1 column 14", ClassPermanent},
		{"EOF while parsing an object at line 1 column 20", ClassPermanent},
		{"Net::ReadTimeout: Net::ReadTimeout with #<TCPSocket:(closed)>", ClassTransient},
		{"Net::OpenTimeout: execution expired", ClassTransient},
		{"Errno::ECONNREFUSED: Failed to open TCP connection to payments:443 (Connection refused - connect(2) for \"payments\" port 443)", ClassTransient},
		{"ActiveRecord::RecordInvalid: Validation failed: Email can't be blank", ClassPermanent},
		{"ActiveRecord::RecordNotUnique: PG::UniqueViolation: ERROR:  duplicate key value violates unique constraint \"index_users_on_email\"", ClassPermanent},
		{"JSON::ParserError: unexpected token at '{\"order\": '", ClassPermanent},
		{"GuzzleHttp\\Exception\\ConnectException: cURL error 7: Failed to connect to api.stripe.com port 443: Connection refused", ClassTransient},
		{"GuzzleHttp\\Exception\\ServerException: Server error: `POST https://ledger/api` resulted in a `502 Bad Gateway` response", ClassTransient},
		{"GuzzleHttp\\Exception\\ClientException: Client error: `GET https://crm/api/customers/42` resulted in a `422 Unprocessable Entity` response", ClassPermanent},
		{"PDOException: SQLSTATE[HY000] [2002] Connection refused", ClassTransient},
		{"PDOException: SQLSTATE[23000]: Integrity constraint violation: 1062 Duplicate entry 'o-1' for key 'orders.PRIMARY'", ClassPermanent},
		{"Illuminate\\Database\\QueryException: SQLSTATE[40001]: Serialization failure: 1213 Deadlock found when trying to get lock", ClassTransient},
		{"JsonException: Syntax error", ClassPermanent},
		{"** (DBConnection.ConnectionError) connection not available and request was dropped from queue after 2000ms", ClassTransient},
		{"** (Jason.DecodeError) unexpected byte at position 0: 0x3C (\"<\")", ClassPermanent},
		{"Azure.RequestFailedException: Service request failed.\nStatus: 503 (Service Unavailable)\nErrorCode: ServerBusy", ClassTransient},
		{"Azure.RequestFailedException: The specified container does not exist.\nStatus: 404 (The specified container does not exist.)\nErrorCode: ContainerNotFound", ClassUnknown},
		{"Azure.RequestFailedException: The value for one of the HTTP headers is not in the correct format.\nStatus: 400 (Bad Request)\nErrorCode: InvalidHeaderValue", ClassPermanent},
	}
	rs := Builtin()
	for _, c := range cases {
		rec, parsed := decodedRecord(`{"orderId":"o-1","error":`+jsonStr(c.text)+`}`, nil)
		ex := rs.Explain(rec, parsed)
		if ex.Outcome.Class != c.class {
			var why []string
			for _, s := range ex.Steps {
				if s.Matched {
					why = append(why, s.Why)
				}
			}
			t.Errorf("%q: class %s by %s (%s), want %s", c.text, ex.Outcome.Class, ex.Outcome.Rule, strings.Join(why, "; "), c.class)
		}
	}
}
