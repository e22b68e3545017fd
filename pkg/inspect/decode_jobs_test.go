package inspect

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func kombu(t *testing.T, headers map[string]any, body any, compress bool) string {
	t.Helper()
	raw, _ := json.Marshal(body)
	if compress {
		raw = zl(string(raw))
		headers["compression"] = "application/x-gzip"
	}
	msg := map[string]any{
		"body": base64.StdEncoding.EncodeToString(raw), "content-encoding": "utf-8", "content-type": "application/json",
		"headers": headers,
		"properties": map[string]any{"correlation_id": "c-1", "delivery_mode": 2, "body_encoding": "base64",
			"delivery_info": map[string]any{"exchange": "", "routing_key": "celery"}, "priority": 0, "delivery_tag": "d-1"},
	}
	b, _ := json.Marshal(msg)
	return base64.StdEncoding.EncodeToString(b)
}

// TestJobEnvelopes: Celery (protocol 1 and 2, compressed), Rebus,
// Laravel, Sidekiq (and its ActiveJob wrapper), Faktory and ActiveJob.
func TestJobEnvelopes(t *testing.T) {
	v2 := kombu(t, map[string]any{"lang": "py", "task": "orders.tasks.sync_order", "id": "8c3f", "root_id": "8c3f", "retries": 3.0,
		"argsrepr": "('o-1042',)", "kwargsrepr": "{}", "origin": "gen1@web-1"}, []any{[]any{"o-1042"}, map[string]any{}, map[string]any{"callbacks": nil}}, false)
	v2z := kombu(t, map[string]any{"lang": "py", "task": "orders.tasks.sync_order", "id": "9d", "retries": 0.0}, []any{[]any{"o-1"}, map[string]any{}, nil}, true)
	v1 := kombu(t, map[string]any{}, map[string]any{"task": "billing.charge", "id": "77", "args": []any{"p-1"}, "kwargs": map[string]any{}, "retries": 1.0}, false)
	cases := []struct {
		name, body, format, eventType, eventID, encoding, failureType string
		attempts                                                      int
		attrs                                                         map[string]string
	}{
		{"celery protocol 2", v2, "celery", "orders.tasks.sync_order", "8c3f", "base64/json", "", 4, nil},
		{"celery compressed", v2z, "celery", "orders.tasks.sync_order", "9d", "base64/json", "", 0, nil},
		{"celery protocol 1", v1, "celery", "billing.charge", "77", "base64/json", "", 2, nil},
		{"rebus", `{"headers":{"rbs2-msg-id":"m-9","rbs2-msg-type":"Acme.Orders.OrderPlaced, Acme.Orders","rbs2-error-details":"System.Net.Http.HttpRequestException: Connection refused (inventory:443)\n ---> System.Net.Sockets.SocketException (111): Connection refused\n   at Acme.X.Y()"},"body":"` + base64.StdEncoding.EncodeToString([]byte(`{"orderId":"o-1"}`)) + `"}`,
			"rebus", "Acme.Orders.OrderPlaced", "m-9", "json", "System.Net.Http.HttpRequestException", 0, nil},
		{"laravel", `{"uuid":"5f1","displayName":"App\\Jobs\\SyncInvoice","job":"Illuminate\\Queue\\CallQueuedHandler@call","maxTries":5,"maxExceptions":null,"failOnTimeout":false,"backoff":null,"timeout":120,"retryUntil":null,"data":{"commandName":"App\\Jobs\\SyncInvoice","command":"O:22:\"App\\Jobs\\SyncInvoice\":1:{s:9:\"invoiceId\";i:42;}"},"attempts":3}`,
			"laravel", "App\\Jobs\\SyncInvoice", "5f1", "json", "", 3, nil},
		{"sidekiq failed", `{"class":"HardWorker","args":[1042,"eur"],"retry":5,"queue":"default","jid":"b4a5","created_at":1709280000.5,"enqueued_at":1709280001.0,"error_message":"Net::ReadTimeout with #<TCPSocket:(closed)>","error_class":"Net::ReadTimeout","failed_at":1709280100.0,"retry_count":2,"retried_at":1709280200.0}`,
			"sidekiq", "HardWorker", "b4a5", "json", "Net::ReadTimeout", 3, nil},
		{"sidekiq activejob wrapper", `{"class":"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper","wrapped":"ChargeJob","queue":"default","args":[{"job_class":"ChargeJob","job_id":"aj-1","arguments":["p-1"],"executions":2}],"jid":"c1","error_class":"ActiveRecord::RecordInvalid","error_message":"Validation failed: Amount must be greater than 0"}`,
			"sidekiq", "ChargeJob", "c1", "json", "ActiveRecord::RecordInvalid", 2, nil},
		{"faktory", `{"jid":"f-1","jobtype":"SendEmail","args":["u-1"],"queue":"default","created_at":"2026-03-01T10:00:00Z","failure":{"retry_count":4,"failed_at":"2026-03-01T10:05:00Z","message":"dial tcp 10.0.0.3:587: connect: connection refused","errtype":"net.OpError"}}`,
			"faktory", "SendEmail", "f-1", "json", "net.OpError", 5, nil},
		{"activejob", `{"job_class":"ExportJob","job_id":"j-7","provider_job_id":null,"queue_name":"exports","priority":null,"arguments":[{"_aj_globalid":"gid://app/Report/9"}],"executions":1,"exception_executions":{},"locale":"en","timezone":"UTC","enqueued_at":"2026-03-01T10:00:00Z"}`,
			"activejob", "ExportJob", "j-7", "json", "", 1, nil},
	}
	for _, c := range cases {
		rec := record.Record{Body: c.body}
		Decode(&rec)
		f := rec.Failure
		switch {
		case f == nil || f.Format != c.format:
			t.Errorf("%s: failure %+v, want format %s", c.name, f, c.format)
			continue
		case rec.Envelope == nil || rec.Envelope.EventType != c.eventType || rec.Envelope.EventID != c.eventID:
			t.Errorf("%s: envelope %+v, want %s %s", c.name, rec.Envelope, c.eventType, c.eventID)
		case rec.PayloadEncoding != c.encoding:
			t.Errorf("%s: payload_encoding %s, want %s", c.name, rec.PayloadEncoding, c.encoding)
		case f.Type != c.failureType || f.AttemptCount != c.attempts:
			t.Errorf("%s: failure type %q attempts %d, want %q %d (%+v)", c.name, f.Type, f.AttemptCount, c.failureType, c.attempts, f.Evidence)
		case rec.Payload == nil:
			t.Errorf("%s: no payload", c.name)
		}
	}
	rec := record.Record{Body: v2}
	Decode(&rec)
	p, _ := rec.Payload.(map[string]any)
	if p["argsrepr"] != "('o-1042',)" || p["task"] != "orders.tasks.sync_order" {
		t.Errorf("celery payload %v", p)
	}
}
