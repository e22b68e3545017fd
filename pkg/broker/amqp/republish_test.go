package amqp

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// copyDeliveries are dead letters with every kind of header the client
// library decodes: scalars of each width, bytes, timestamps, decimals,
// voids, nested tables and arrays, x-death with several entries (one with
// an original-expiration, one with two routing keys), a copy dlqctl
// redrove before (marker and death history), Spring's exception headers,
// annotations the broker adds on delivery, strings JSON escapes.
func copyDeliveries() []amqp091.Delivery {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.Local)
	death := func(q, reason string, n int64, keys ...any) amqp091.Table {
		return amqp091.Table{"count": n, "reason": reason, "queue": q, "exchange": "orders<&>", "routing-keys": keys, "time": t0}
	}
	exp := death("orders.ttl", "expired", 1, "orders.created")
	exp["original-expiration"] = "60000"
	prevHist, _ := json.Marshal([]Death{{Count: 2, Reason: "rejected", Queue: "orders", Exchange: "orders", RoutingKeys: []string{"a"}, Time: t0.UTC()}})
	base := amqp091.Delivery{
		ContentType: "application/json", ContentEncoding: "utf-8", DeliveryMode: 2, Priority: 3,
		CorrelationId: "corr-1", ReplyTo: "replies", Expiration: "", MessageId: "m-1", Timestamp: t0,
		Type: "OrderCreated", AppId: "orders-svc", UserId: "producer", Exchange: "dlx", RoutingKey: "orders",
		Body: []byte(`{"id":1,"note":"<b>\u2028</b>"}`),
	}
	var out []amqp091.Delivery
	d := base
	d.Headers = amqp091.Table{
		"x-death":             []any{death("orders", "rejected", 3, "orders.created", "audit.created"), exp},
		"x-first-death-queue": "orders.ttl", "x-first-death-reason": "expired", "x-first-death-exchange": "orders<&>",
		"x-last-death-queue": "orders", "x-last-death-reason": "rejected", "x-last-death-exchange": "orders<&>",
		"x-delivery-count": int64(2), "x-acquired-count": int64(3),
		"s": "text \"quoted\" <html> & \xff", "b": []byte{0, 1, 2, 255}, "i64": int64(-1 << 40), "i32": int32(7),
		"i16": int16(-3), "i8": int8(4), "u8": uint8(200), "u16": uint16(60000), "u32": uint32(1 << 31),
		"f64": 3.25, "f32": float32(1.5), "bool": true, "ts": t0, "dec": amqp091.Decimal{Scale: 2, Value: 12345},
		"void": nil, "tbl": amqp091.Table{"k": "v", "n": int32(5), "inner": amqp091.Table{"t": t0, "x": []byte("hi")}},
		"arr":                 []any{"a", int64(2), 2.5, false, nil, amqp091.Table{"z": "y"}},
		"x-exception-message": "boom", "x-exception-stacktrace": "at Foo.bar(Foo.java:1)\n\tat ...",
		"CC": []any{"stale"},
	}
	out = append(out, d)
	d = base // redriven before: the marker and history carry on
	d.MessageId = ""
	d.Body = []byte{0xff, 0xfe, 0x00} // not UTF-8: base64 in the record
	d.Headers = amqp091.Table{
		"x-death":          []any{death("orders", "rejected", 1, "orders.created")},
		MarkerHeader:       `{"run":"20261201T000000-abcdef","orig":"m-0","n":2,"at":"2026-12-01T00:00:00.123Z"}`,
		DeathHistoryHeader: string(prevHist),
	}
	out = append(out, d)
	d = base // Spring's recoverer: no x-death
	d.Headers = amqp091.Table{"x-original-exchange": "orders", "x-original-routingKey": "orders.created"}
	out = append(out, d)
	return out
}

// A copy made from the delivery a record was read from is the copy made
// from the record alone (the way before the delivery was kept: every
// header through the record's attributes and back): body, properties,
// headers, the death history and the marker, value for value.
func TestPrepareFromDeliveryMatchesPrepareFromRecord(t *testing.T) {
	pub := &BrokerPublisher{}
	now := time.Date(2026, 12, 2, 5, 30, 1, 987654321, time.UTC)
	copt := broker.CopyOptions{RunID: "20261202T053000-0a1b2c", Now: now}
	for i, d := range copyDeliveries() {
		m := newMessage(d)
		route, err := SourceRoute(m)
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		dest := broker.Destination{Key: routeKey(route), Target: route}
		rec := ToRecord(m, "amqp://127.0.0.1:5672/%2f/orders.dlq", TypeClassic, now)
		// The record alone, as a record read back from an archive is.
		bare := *rec
		sys := *rec.System.AMQP
		bare.System.AMQP = &sys
		old, skip := pub.Prepare(&bare, dest, copt)
		if skip != "" {
			t.Fatalf("delivery %d: from the record: %s", i, skip)
		}
		rec.System.AMQP.Native = &m
		got, skip := pub.Prepare(rec, dest, copt)
		if skip != "" {
			t.Fatalf("delivery %d: from the delivery: %s", i, skip)
		}
		if !reflect.DeepEqual(got, old) {
			t.Errorf("delivery %d: the copy from the delivery differs from the copy from the record:\n got %#v\nwant %#v", i, got.Native, old.Native)
		}
		p := got.Native.(Publishing)
		// The JSON headers are json.Marshal's bytes.
		mk := record.Marker{RunID: copt.RunID, OriginalID: rec.MessageID, Count: 1, At: now.Truncate(time.Millisecond)}
		if prev, ok := ReadMarker(d.Headers); ok {
			mk.Count, mk.OriginalID = prev.Count+1, prev.OriginalID
		}
		want, _ := json.Marshal(mk)
		if p.Msg.Headers[MarkerHeader] != string(want) {
			t.Errorf("delivery %d: marker %v, want %s", i, p.Msg.Headers[MarkerHeader], want)
		}
		hist := append([]Death(nil), m.Deaths.Deaths...)
		if s, ok := d.Headers[DeathHistoryHeader].(string); ok {
			var prev []Death
			_ = json.Unmarshal([]byte(s), &prev)
			hist = append(hist, prev...)
		}
		if len(hist) > 0 {
			want, _ = json.Marshal(hist)
			if p.Msg.Headers[DeathHistoryHeader] != string(want) {
				t.Errorf("delivery %d: death history %v, want %s", i, p.Msg.Headers[DeathHistoryHeader], want)
			}
		} else if _, ok := p.Msg.Headers[DeathHistoryHeader]; ok {
			t.Errorf("delivery %d: a death history without deaths", i)
		}
		for k := range p.Msg.Headers {
			if IsDeathHeader(k) || isDeliveryAnnotation(k) {
				t.Errorf("delivery %d: header %s kept on the copy", i, k)
			}
		}
		if string(p.Msg.Body) != string(d.Body) || p.Msg.UserId != "" || p.Msg.MessageId != d.MessageId {
			t.Errorf("delivery %d: body %q user %q id %q", i, p.Msg.Body, p.Msg.UserId, p.Msg.MessageId)
		}
	}
}

// A header whose value cannot go through the record (a float that JSON
// cannot write, inside a table) is refused the same way on both paths.
func TestPrepareFromDeliveryRefusesWhatTheRecordRefuses(t *testing.T) {
	pub := &BrokerPublisher{}
	d := copyDeliveries()[0]
	d.Headers["bad"] = amqp091.Table{"nan": float64NaN()}
	m := newMessage(d)
	route, _ := SourceRoute(m)
	dest := broker.Destination{Target: route}
	copt := broker.CopyOptions{RunID: "r", Now: time.Unix(1, 0)}
	rec := ToRecord(m, "q", TypeClassic, time.Unix(1, 0))
	_, fromRecord := pub.Prepare(rec, dest, copt)
	rec.System.AMQP.Native = &m
	_, fromDelivery := pub.Prepare(rec, dest, copt)
	if fromRecord == "" || fromRecord != fromDelivery {
		t.Errorf("refusals differ: from the record %q, from the delivery %q", fromRecord, fromDelivery)
	}
}

func float64NaN() float64 {
	z := 0.0
	return z / z
}

// A lean record (a redrive without a selection) is the whole record less
// the headers nothing reads and the converted death history: the same id,
// body hash, size, times, marker and original route; its copy, made from
// the delivery it carries, is byte for byte the copy of the whole record.
func TestLeanRecordKeepsWhatARedriveReads(t *testing.T) {
	pub := &BrokerPublisher{}
	now := time.Date(2026, 12, 2, 5, 30, 1, 987654321, time.UTC)
	copt := broker.CopyOptions{RunID: "20261202T053000-0a1b2c", Now: now}
	id := "amqp://127.0.0.1:5672/%2f/orders.dlq"
	for i, d := range copyDeliveries() {
		m := newMessage(d)
		full := ToRecord(m, id, TypeClassic, now)
		lean := toRecord(m, id, TypeClassic, now, true)
		if len(full.System.AMQP.Deaths) != len(m.Deaths.Deaths) {
			t.Fatalf("delivery %d: the whole record has %d deaths, want %d", i, len(full.System.AMQP.Deaths), len(m.Deaths.Deaths))
		}
		if a := lean.System.AMQP; a.Deaths != nil || a.FirstDeath != nil || a.LastDeath != nil {
			t.Errorf("delivery %d: the lean record converted the death history", i)
		}
		// The whole record, less what a lean one leaves out.
		want := *full
		wantSys := *full.System.AMQP
		wantSys.Deaths, wantSys.FirstDeath, wantSys.LastDeath = nil, nil, nil
		want.System.AMQP = &wantSys
		want.Attributes = nil
		for _, k := range leanAttributes {
			if a, ok := full.Attributes[k]; ok {
				if want.Attributes == nil {
					want.Attributes = map[string]record.Attribute{}
				}
				want.Attributes[k] = a
			}
		}
		if !reflect.DeepEqual(lean, &want) {
			t.Errorf("delivery %d: lean record\n got %#v\nwant %#v", i, lean, &want)
		}
		if _, ok := d.Headers[MarkerHeader]; ok {
			if _, ok := lean.Attributes[MarkerHeader]; !ok {
				t.Errorf("delivery %d: the lean record lost the redrive marker", i)
			}
		}
		route, err := SourceRoute(m)
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		dest := broker.Destination{Key: routeKey(route), Target: route}
		full.System.AMQP.Native, lean.System.AMQP.Native = &m, &m
		a, skipA := pub.Prepare(full, dest, copt)
		b, skipB := pub.Prepare(lean, dest, copt)
		if skipA != "" || skipB != "" || !reflect.DeepEqual(a, b) {
			t.Errorf("delivery %d: the lean record's copy differs (skips %q %q):\n got %#v\nwant %#v", i, skipB, skipA, b.Native, a.Native)
		}
	}
}
