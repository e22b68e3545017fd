package seed

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// LargeBodyTarget is the approximate size of the KindLarge body (900 KiB):
// near the 1 MiB SQS limit, well over the old 256 KiB one.
const LargeBodyTarget = 900 * 1024

// Queue name suffixes, appended to Options.Prefix.
const (
	suffixDLQ        = "-dlq"
	suffixOrders     = "-orders"
	suffixPayments   = "-payments"
	suffixFIFODLQ    = "-dlq.fifo"
	suffixFIFOSource = "-orders.fifo"
)

// envelope is the producers' retry envelope. Field order is the wire order.
type envelope struct {
	EventID        string         `json:"eventId"`
	EventType      string         `json:"eventType"`
	EventVersion   int            `json:"eventVersion"`
	Producer       string         `json:"producer"`
	CorrelationID  string         `json:"correlationId"`
	TenantID       string         `json:"tenantId"`
	IdempotencyKey string         `json:"idempotencyKey"`
	SchemaRef      string         `json:"schemaRef"`
	OccurredAt     string         `json:"occurredAt"`
	Payload        map[string]any `json:"payload"`
}

// enriched is what a consumer writes to the DLQ when it wraps the original.
type enriched struct {
	OriginalPayload envelope `json:"original_payload"`
	FailureReason   string   `json:"failure_reason"`
	FailureType     string   `json:"failure_type"`
	ErrorClass      string   `json:"error_class"`
	AttemptCount    int      `json:"attempt_count"`
	ConsumerVersion string   `json:"consumer_version"`
	FailedAt        string   `json:"failed_at"`
}

// failure is one consumer failure: reason text, type, error class as the
// consumer reports it, and the class the truth expects.
type failure struct {
	reason, typ, errClass string
	class                 Class
}

func dbTimeout(ms int, order string) failure {
	return failure{fmt.Sprintf("timeout after %dms calling inventory-db for order %s", ms, order), "DatabaseTimeout", "transient", ClassTransient}
}

func throttled(psp, payment string, retryAfter int) failure {
	return failure{fmt.Sprintf("429 Too Many Requests from %s (retry after %ds) for payment %s", psp, retryAfter, payment), "Throttling", "transient", ClassTransient}
}

func http503(url, reqID string) failure {
	return failure{fmt.Sprintf("POST %s returned 503 Service Unavailable (request id %s)", url, reqID), "HttpError", "transient", ClassTransient}
}

func connReset(local, remote string) failure {
	return failure{fmt.Sprintf("read tcp %s->%s: read: connection reset by peer", local, remote), "ConnectionReset", "transient", ClassTransient}
}

func cancelled(order string) failure {
	return failure{fmt.Sprintf("order %s already cancelled", order), "BusinessRuleViolation", "permanent", ClassBusiness}
}

func insufficientFunds(payment, last4 string) failure {
	return failure{fmt.Sprintf("insufficient funds for payment %s (card ending %s)", payment, last4), "BusinessRuleViolation", "permanent", ClassBusiness}
}

// planner builds the deterministic message list of an incident: the same
// prefix and time give byte-identical bodies.
type planner struct {
	prefix string
	now    time.Time
	seq    int
	msgs   []Seeded
}

// uid returns a deterministic UUID-shaped id.
func (p *planner) uid(tag string) string {
	p.seq++
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d", p.prefix, tag, p.seq)))
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-a" + x[17:20] + "-" + x[20:32]
}

func (p *planner) ago(d time.Duration) string {
	return p.now.Add(-d).UTC().Format(time.RFC3339Nano)
}

var producers = map[string]string{
	"OrderCreated":    "orders-api@2.3.1",
	"OrderPaid":       "checkout-web@5.0.2",
	"PaymentCaptured": "payments-svc@3.2.0",
	"RefundIssued":    "refunds-svc@1.0.4",
}

var domains = map[string]string{
	"OrderCreated": "orders", "OrderPaid": "orders",
	"PaymentCaptured": "payments", "RefundIssued": "payments",
}

func schemaRef(eventType string, version int) string {
	return fmt.Sprintf("urn:acme:schemas:%s/%s/v%d", domains[eventType], eventType, version)
}

func (p *planner) envelope(eventType string, version int, tenant string, occurred time.Duration, payload map[string]any) envelope {
	id := p.uid("event")
	producer := producers[eventType]
	if version == 9 {
		producer = "checkout-web@6.0.0-beta.3" // the deploy that broke the consumers
	}
	return envelope{
		EventID:        id,
		EventType:      eventType,
		EventVersion:   version,
		Producer:       producer,
		CorrelationID:  "corr-" + id[:8],
		TenantID:       tenant,
		IdempotencyKey: fmt.Sprintf("%s:%s", eventType, id[24:]),
		SchemaRef:      schemaRef(eventType, version),
		OccurredAt:     p.ago(occurred),
		Payload:        payload,
	}
}

func orderCreated(order, customer string, total float64, skus ...string) map[string]any {
	items := []any{}
	for i, sku := range skus {
		items = append(items, map[string]any{"sku": sku, "qty": i + 1, "unitPrice": 19.95 + float64(i)*10})
	}
	return map[string]any{"orderId": order, "customerId": customer, "currency": "EUR", "total": total, "items": items}
}

func orderPaid(order, payment string, amount float64) map[string]any {
	return map[string]any{"orderId": order, "paymentId": payment, "amount": amount, "currency": "EUR", "method": "card"}
}

func paymentCaptured(payment, order string, amount float64) map[string]any {
	return map[string]any{"paymentId": payment, "orderId": order, "amount": amount, "currency": "EUR", "psp": "adyen", "captureId": "cap-" + payment[2:]}
}

func refundIssued(refund, payment, order string, amount float64) map[string]any {
	return map[string]any{"refundId": refund, "paymentId": payment, "orderId": order, "amount": amount, "currency": "EUR", "reason": "customer_request"}
}

func marshal(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only our own plain structs are encoded
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func str(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

func num(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(v)}
}

func bin(v []byte) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: v}
}

func tenantAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String.tenant"), StringValue: aws.String(v)}
}

// sig is a deterministic 32-byte "signature" with zero and high bytes.
func sig(seed string) []byte {
	h := sha256.Sum256([]byte(seed))
	b := h[:]
	b[0], b[1] = 0x00, 0xff
	return b
}

func traceparent(id string) string {
	h := sha256.Sum256([]byte(id))
	x := hex.EncodeToString(h[:])
	return "00-" + x[:32] + "-" + x[32:48] + "-01"
}

type attrs = map[string]types.MessageAttributeValue

// envAttrs are the attributes well-behaved producers set.
func envAttrs(e envelope) attrs {
	return attrs{
		"eventType":    str(e.EventType),
		"traceparent":  str(traceparent(e.EventID)),
		"content-type": str("application/json"),
	}
}

func withAttrs(base attrs, extra attrs) attrs {
	for k, v := range extra {
		base[k] = v
	}
	return base
}

func (p *planner) add(m Seeded) {
	sum := sha256.Sum256([]byte(m.Body))
	m.BodySHA256 = hex.EncodeToString(sum[:])
	p.msgs = append(p.msgs, m)
}

func (p *planner) addEnvelope(source string, kind Kind, class Class, e envelope, a attrs) {
	p.add(Seeded{
		Kind: kind, Class: class, SourceName: source, Body: marshal(e), Attributes: a,
		EventID: e.EventID, EventType: e.EventType, EventVersion: e.EventVersion,
		SchemaRef: e.SchemaRef, TenantID: e.TenantID,
	})
}

func (p *planner) addEnriched(source string, kind Kind, e envelope, f failure, attempts int, consumer string, a attrs) {
	w := enriched{
		OriginalPayload: e, FailureReason: f.reason, FailureType: f.typ, ErrorClass: f.errClass,
		AttemptCount: attempts, ConsumerVersion: consumer,
		FailedAt: p.now.Add(-time.Duration(len(p.msgs)) * 41 * time.Second).UTC().Format(time.RFC3339Nano),
	}
	p.add(Seeded{
		Kind: kind, Class: f.class, SourceName: source, Body: marshal(w), Attributes: a,
		EventID: e.EventID, EventType: e.EventType, EventVersion: e.EventVersion,
		SchemaRef: e.SchemaRef, TenantID: e.TenantID,
		FailureType: f.typ, FailureReason: f.reason, ErrorClass: f.errClass,
	})
}

func (p *planner) addAttrFailure(source string, e envelope, f failure) {
	a := withAttrs(envAttrs(e), attrs{"dlq_reason": str(f.reason), "error_type": str(f.typ)})
	p.add(Seeded{
		Kind: KindAttrFailure, Class: f.class, SourceName: source, Body: marshal(e), Attributes: a,
		EventID: e.EventID, EventType: e.EventType, EventVersion: e.EventVersion,
		SchemaRef: e.SchemaRef, TenantID: e.TenantID,
		FailureType: f.typ, FailureReason: f.reason,
	})
}

func (p *planner) addText(source string, kind Kind, class Class, body string, a attrs) {
	p.add(Seeded{Kind: kind, Class: class, SourceName: source, Body: body, Attributes: a})
}

// plan returns every message of the incident (standard sources first, then
// the FIFO source in group order). Queue ARNs and message ids are filled in
// when the incident is created.
func plan(prefix string, now time.Time, scale int) []Seeded {
	p := &planner{prefix: prefix, now: now}
	orders, payments, fifo := prefix+suffixOrders, prefix+suffixPayments, prefix+suffixFIFOSource
	const ordersWorker, paymentsWorker = "orders-worker@1.4.2", "payments-worker@3.0.7"
	h := time.Hour

	// --- orders: bare envelopes (no failure information).
	for i, t := range []string{"t-acme", "t-globex", "t-initech"} {
		o := fmt.Sprintf("o-10%02d", 11+i)
		e := p.envelope("OrderCreated", 2, t, 3*h-time.Duration(i)*7*time.Minute, orderCreated(o, fmt.Sprintf("c-22%02d", i), 59.85+float64(i)*10, "SKU-4411", "SKU-0098"))
		a := envAttrs(e)
		if i == 0 {
			a["tenant"] = tenantAttr(t)
			a["priority"] = num("5")
		}
		p.addEnvelope(orders, KindEnvelope, ClassUnknown, e, a)
	}
	for i := range 2 {
		o := fmt.Sprintf("o-10%02d", 21+i)
		e := p.envelope("OrderPaid", 1, "t-acme", 2*h+time.Duration(i)*5*time.Minute, orderPaid(o, fmt.Sprintf("p-77%02d", 40+i), 129.90-float64(i)*20))
		a := envAttrs(e)
		if i == 0 {
			a["sig"] = bin(sig(e.EventID))
		}
		p.addEnvelope(orders, KindEnvelope, ClassUnknown, e, a)
	}
	// The beta deploy started emitting OrderCreated v9 with an unknown schema.
	for i := range 2 {
		o := fmt.Sprintf("o-10%02d", 31+i)
		e := p.envelope("OrderCreated", 9, "t-globex", 95*time.Minute-time.Duration(i)*3*time.Minute, orderCreated(o, "c-2290", 42.5, "SKU-7001"))
		p.addEnvelope(orders, KindEnvelope, ClassSchemaMismatch, e, envAttrs(e))
	}

	// --- orders: consumer-enriched wrappers.
	for i, f := range []failure{dbTimeout(831, "o-17"), dbTimeout(1204, "o-1041"), dbTimeout(2950, "o-1043"), dbTimeout(30017, "o-1047")} {
		e := p.envelope("OrderCreated", 2, "t-acme", 80*time.Minute-time.Duration(i)*time.Minute, orderCreated(fmt.Sprintf("o-104%d", i), "c-2301", 19.95, "SKU-4411"))
		a := attrs{"retryCount": num("3")}
		p.addEnriched(orders, KindEnriched, e, f, 3, ordersWorker, a)
	}
	for i, f := range []failure{connReset("10.0.3.17:51234", "10.0.9.2:5432"), connReset("10.0.3.18:40112", "10.0.9.2:5432")} {
		e := p.envelope("OrderPaid", 1, "t-initech", 70*time.Minute-time.Duration(i)*time.Minute, orderPaid(fmt.Sprintf("o-105%d", i), fmt.Sprintf("p-78%02d", i), 77.0))
		p.addEnriched(orders, KindEnriched, e, f, 3, ordersWorker, nil)
	}
	for i, o := range []string{"o-1042", "o-1058"} {
		e := p.envelope("OrderPaid", 1, "t-acme", 60*time.Minute-time.Duration(i)*time.Minute, orderPaid(o, fmt.Sprintf("p-79%02d", i), 15.0))
		p.addEnriched(orders, KindEnriched, e, cancelled(o), 1, ordersWorker, nil)
	}
	{
		e := p.envelope("OrderCreated", 9, "t-globex", 55*time.Minute, orderCreated("o-1061", "c-2290", 42.5, "SKU-7001"))
		f := failure{"unsupported eventVersion 9 for OrderCreated (known: 1, 2)", "SchemaValidationError", "permanent", ClassSchemaMismatch}
		p.addEnriched(orders, KindEnriched, e, f, 1, ordersWorker, envAttrs(e))
	}
	{
		e := p.envelope("OrderCreated", 2, "t-initech", 50*time.Minute, orderCreated("o-1062", "", 10, "SKU-0001"))
		f := failure{"validation failed: missing required field payload.customerId", "ValidationError", "permanent", ClassPermanent}
		p.addEnriched(orders, KindEnriched, e, f, 1, ordersWorker, nil)
	}

	// --- orders: failure carried in message attributes.
	p.addAttrFailure(orders, p.envelope("OrderCreated", 2, "t-acme", 45*time.Minute, orderCreated("o-1088", "c-2311", 88.0, "SKU-1200")), dbTimeout(1204, "o-1088"))
	p.addAttrFailure(orders, p.envelope("OrderPaid", 1, "t-globex", 44*time.Minute, orderPaid("o-1091", "p-7950", 31.0)), cancelled("o-1091"))

	// --- orders: malformed JSON (evidence: its consumer cannot parse it)
	// and plain text (no evidence: text is what some consumers read, and
	// SQS records no reason, so it is unknown until a look says more).
	p.addText(orders, KindMalformed, ClassPermanent,
		fmt.Sprintf(`{"eventId":"%s","eventType":"OrderCreated","eventVersion":2,"payload":{"orderId":"o-1101","items":[{"sku":"SKU-4411","qty":2}`, p.uid("malformed")),
		attrs{"eventType": str("OrderCreated")})
	p.addText(orders, KindMalformed, ClassPermanent,
		`{"eventType": "OrderCreated", "payload": {"orderId": "o-1102", "total": 12.5,}}`, nil)
	p.addText(orders, KindPlaintext, ClassUnknown,
		"legacy-batch: could not map row 4411 (customer c-2290) to an order", nil)
	p.addText(orders, KindPlaintext, ClassUnknown,
		"PING healthcheck from orders-canary run 20931", attrs{"source": str("orders-canary")})

	// --- orders: unicode.
	{
		pl := orderCreated("o-1150", "c-2400", 64.0, "SKU-4411")
		pl["shipping"] = map[string]any{"name": "Jürgen Müller 😀", "street": "ул. Тверская, 7", "city": "Москва", "note": "東京都渋谷区 配達は午前中 🚚"}
		e := p.envelope("OrderCreated", 2, "t-acme", 40*time.Minute, pl)
		p.addEnvelope(orders, KindUnicode, ClassUnknown, e, withAttrs(envAttrs(e), attrs{"customer": str("Jürgen Müller 😀")}))
	}
	p.addText(orders, KindUnicode, ClassUnknown, "Заказ o-1151 не найден ✗ 注文 o-1151 が見つかりません 🚫", nil)
	{
		e := p.envelope("OrderPaid", 1, "t-globex", 38*time.Minute, orderPaid("o-1152", "p-7960", 9.99))
		f := cancelled("o-1152")
		f.reason = "заказ o-1152 уже отменён (order o-1152 already cancelled) 🙅"
		p.addEnriched(orders, KindUnicode, e, f, 1, ordersWorker, nil)
	}

	// --- orders: nested secrets.
	{
		pl := orderPaid("o-1160", "p-7970", 249.0)
		pl["card_number"] = "4111111111111111"
		pl["customer"] = map[string]any{"email": "erin@example.com", "password": "S3cr3t-Pa55w0rd!"}
		e := p.envelope("OrderPaid", 1, "t-acme", 35*time.Minute, pl)
		p.add(Seeded{
			Kind: KindSecret, Class: ClassUnknown, SourceName: orders, Body: marshal(e), Attributes: envAttrs(e),
			EventID: e.EventID, EventType: e.EventType, EventVersion: e.EventVersion, SchemaRef: e.SchemaRef, TenantID: e.TenantID,
			Secrets: []string{"4111111111111111", "S3cr3t-Pa55w0rd!"},
		})
	}

	// --- orders: one ~900 KiB wrapper.
	{
		pl := orderCreated("o-1170", "c-2500", 0, "SKU-0001")
		e := p.envelope("OrderCreated", 2, "t-initech", 30*time.Minute, pl)
		var items []any
		base := len(marshal(enriched{OriginalPayload: e})) + 200
		one := map[string]any{"sku": "SKU-000000", "qty": 1, "unitPrice": 1.25, "description": strings.Repeat("bulk item ", 8)}
		per := len(marshal(one)) + 1
		for i := 0; base+len(items)*per < LargeBodyTarget; i++ {
			items = append(items, map[string]any{"sku": fmt.Sprintf("SKU-%06d", i), "qty": 1, "unitPrice": 1.25, "description": strings.Repeat("bulk item ", 8)})
		}
		pl["items"] = items
		f := failure{fmt.Sprintf("payload of %d bytes exceeds search-indexer limit of 262144 bytes", len(marshal(e))), "PayloadTooLarge", "permanent", ClassPermanent}
		p.addEnriched(orders, KindLarge, e, f, 1, ordersWorker, attrs{"eventType": str("OrderCreated")})
	}

	// --- payments: bare envelopes.
	for i := range 2 {
		e := p.envelope("PaymentCaptured", 1, "t-acme", 2*h-time.Duration(i)*4*time.Minute, paymentCaptured(fmt.Sprintf("p-77%02d", 60+i), fmt.Sprintf("o-12%02d", i), 49.0+float64(i)))
		a := envAttrs(e)
		if i == 1 {
			a["sig"] = bin(sig(e.EventID))
			a["tenant"] = tenantAttr("t-acme")
		}
		p.addEnvelope(payments, KindEnvelope, ClassUnknown, e, a)
	}
	{
		e := p.envelope("RefundIssued", 1, "t-globex", 100*time.Minute, refundIssued("r-3301", "p-7762", "o-1210", 19.0))
		p.addEnvelope(payments, KindEnvelope, ClassUnknown, e, envAttrs(e))
	}

	// --- payments: enriched wrappers.
	for i, f := range []failure{throttled("psp-adyen", "p-7781", 2), throttled("psp-adyen", "p-7782", 4), throttled("psp-stripe", "p-7790", 1)} {
		e := p.envelope("PaymentCaptured", 1, "t-initech", 75*time.Minute-time.Duration(i)*time.Minute, paymentCaptured(fmt.Sprintf("p-77%d", 81+i), fmt.Sprintf("o-13%02d", i), 25.0))
		p.addEnriched(payments, KindEnriched, e, f, 2, paymentsWorker, attrs{"retryCount": num("2")})
	}
	for i, f := range []failure{http503("https://fraud-check.internal/v2/score", "r-8812"), http503("https://fraud-check.internal/v2/score", "r-9120"), http503("https://ledger-api.internal/entries", "r-9133")} {
		pl := paymentCaptured(fmt.Sprintf("p-78%02d", 10+i), fmt.Sprintf("o-14%02d", i), 60.0)
		var secrets []string
		if i == 0 {
			pl["card_number"] = "5500005555555559"
			secrets = []string{"5500005555555559"}
		}
		e := p.envelope("PaymentCaptured", 1, "t-acme", 65*time.Minute-time.Duration(i)*time.Minute, pl)
		p.addEnriched(payments, KindEnriched, e, f, 2, paymentsWorker, nil)
		p.msgs[len(p.msgs)-1].Secrets = secrets
	}
	for i, pay := range []string{"p-7821", "p-7822"} {
		e := p.envelope("PaymentCaptured", 1, "t-globex", 50*time.Minute-time.Duration(i)*time.Minute, paymentCaptured(pay, fmt.Sprintf("o-15%02d", i), 310.0))
		p.addEnriched(payments, KindEnriched, e, insufficientFunds(pay, "4242"), 1, paymentsWorker, nil)
	}
	{
		e := p.envelope("RefundIssued", 1, "t-acme", 48*time.Minute, refundIssued("r-3310", "p-7830", "o-1601", 5.0))
		p.addEnriched(payments, KindEnriched, e, connReset("10.0.7.21:39002", "10.0.12.4:443"), 2, paymentsWorker, nil)
	}

	// --- payments: failures in attributes, malformed and plain text.
	p.addAttrFailure(payments, p.envelope("RefundIssued", 1, "t-initech", 30*time.Minute, refundIssued("r-3320", "p-7840", "o-1610", 12.0)),
		failure{"HTTP 503 from ledger-api after 2 attempts (request id r-9301)", "HttpError", "", ClassTransient})
	p.addAttrFailure(payments, p.envelope("PaymentCaptured", 1, "t-acme", 28*time.Minute, paymentCaptured("p-7841", "o-1611", 12.0)),
		failure{"rate exceeded: 429 from psp-adyen for payment p-7841", "Throttling", "", ClassTransient})
	p.addText(payments, KindMalformed, ClassPermanent, `{"paymentId": "p-7850", "amount": 19.99, "currency": "EU`, nil)
	p.addText(payments, KindPlaintext, ClassUnknown, "payment p-7851 callback received with status=UNKNOWN", nil)
	// Bodies that are not JSON and are fine for their consumers: an XML
	// document and a Celery task (kombu writes base64 to SQS). Not
	// evidence of a bad message: unknown until a look says more.
	p.addText(orders, KindPlaintext, ClassUnknown,
		`<?xml version="1.0" encoding="UTF-8"?><Order xmlns="urn:acme:orders:v2" id="o-1160"><Customer id="c-2290"/><Line sku="SKU-4411" qty="1" price="19.95"/><Total currency="EUR">19.95</Total></Order>`,
		attrs{"contentType": str("application/xml")})
	{
		id := p.uid("celery")
		p.add(Seeded{Kind: KindPlaintext, Class: ClassUnknown, SourceName: payments, EventType: "payments.tasks.send_receipt", EventID: id,
			Body: celeryTask("payments.tasks.send_receipt", id, "('p-7852',)", []any{"p-7852"})})
	}

	// --- extra transient messages (Options.Scale).
	for i := range scale {
		o := fmt.Sprintf("o-9%05d", i)
		e := p.envelope("OrderCreated", 2, []string{"t-acme", "t-globex", "t-initech"}[i%3], time.Duration(i%3600)*time.Second, orderCreated(o, fmt.Sprintf("c-9%04d", i%10000), 19.95, "SKU-4411"))
		p.addEnriched(orders, KindEnriched, e, dbTimeout(800+(i*37)%4000, o), 3, ordersWorker, nil)
		p.msgs[len(p.msgs)-1].Extra = true
	}

	// --- FIFO: three order groups, in order within each group.
	type step struct {
		eventType string
		fail      *failure
	}
	fifoGroups := []struct {
		order string
		steps []step
	}{
		{"o-2001", []step{{"OrderCreated", ptr(dbTimeout(940, "o-2001"))}, {"OrderPaid", ptr(dbTimeout(1010, "o-2001"))}, {"PaymentCaptured", ptr(dbTimeout(1200, "o-2001"))}}},
		{"o-2002", []step{{"OrderCreated", nil}, {"OrderPaid", nil}, {"RefundIssued", nil}}},
		{"o-2003", []step{{"OrderCreated", nil}, {"OrderPaid", ptr(cancelled("o-2003"))}, {"RefundIssued", ptr(cancelled("o-2003"))}}},
	}
	for gi, g := range fifoGroups {
		group := "order-" + g.order
		for si, s := range g.steps {
			pay := fmt.Sprintf("p-80%d%d", gi, si)
			var pl map[string]any
			switch s.eventType {
			case "OrderCreated":
				pl = orderCreated(g.order, fmt.Sprintf("c-30%02d", gi), 99.0, "SKU-4411", "SKU-2002")
			case "OrderPaid":
				pl = orderPaid(g.order, pay, 99.0)
			case "PaymentCaptured":
				pl = paymentCaptured(pay, g.order, 99.0)
			case "RefundIssued":
				pl = refundIssued(fmt.Sprintf("r-40%d%d", gi, si), pay, g.order, 99.0)
			}
			e := p.envelope(s.eventType, 1, "t-acme", 20*time.Minute-time.Duration(gi*3+si)*time.Minute, pl)
			if s.fail == nil {
				p.addEnvelope(fifo, KindFIFO, ClassUnknown, e, envAttrs(e))
			} else {
				p.addEnriched(fifo, KindFIFO, e, *s.fail, 2, ordersWorker, nil)
			}
			m := &p.msgs[len(p.msgs)-1]
			m.GroupID, m.GroupSeq = group, si
			m.DedupID = "dedup-" + e.EventID
		}
	}
	return p.msgs
}

func ptr[T any](v T) *T { return &v }

// celeryTask is a Celery protocol 2 task message as kombu's SQS transport
// sends it: base64 of the kombu envelope, whose body is base64 of
// [args, kwargs, embed].
func celeryTask(task, id, argsrepr string, args []any) string {
	body := base64.StdEncoding.EncodeToString([]byte(marshal([]any{args, map[string]any{}, map[string]any{"callbacks": nil, "errbacks": nil, "chain": nil, "chord": nil}})))
	msg := map[string]any{
		"body": body, "content-encoding": "utf-8", "content-type": "application/json",
		"headers": map[string]any{"lang": "py", "task": task, "id": id, "root_id": id, "parent_id": nil, "group": nil,
			"retries": 0, "eta": nil, "expires": nil, "timelimit": []any{nil, nil}, "argsrepr": argsrepr, "kwargsrepr": "{}",
			"origin": "gen1@payments-web-1", "ignore_result": false},
		"properties": map[string]any{"correlation_id": id, "delivery_mode": 2, "priority": 0, "body_encoding": "base64",
			"delivery_info": map[string]any{"exchange": "", "routing_key": "payments"}, "delivery_tag": id},
	}
	return base64.StdEncoding.EncodeToString([]byte(marshal(msg)))
}
