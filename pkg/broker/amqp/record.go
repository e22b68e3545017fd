package amqp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Header value types in record attributes. AMQP header tables are typed;
// the record keeps the type so a copy publishes the same table:
//
//	String            a long string
//	Binary            a byte array (base64)
//	Number            a signed 64-bit integer; Number.int8/.int16/.int32/
//	                  .uint8/.uint16/.uint32 for the smaller ones,
//	                  Number.float32/.float64 for floats,
//	                  Number.decimal ("scale:value")
//	String.bool       true | false
//	String.timestamp  RFC 3339 (seconds)
//	String.table      a nested table, as JSON
//	String.array      an array, as JSON
//	String.void       a void (null) value
//
// Nested tables and arrays are written as plain JSON (strings, numbers,
// booleans, times as RFC 3339, bytes as base64): their inner types are
// approximate on a copy. x-death and x-first/last-death-* are not
// attributes: they are decoded into system.amqp.
const (
	attrString    = "String"
	attrBinary    = "Binary"
	attrNumber    = "Number"
	attrBool      = "String.bool"
	attrTimestamp = "String.timestamp"
	attrTable     = "String.table"
	attrArray     = "String.array"
	attrVoid      = "String.void"
)

// ToRecord builds the broker-neutral record of a delivery read from a queue
// of queueType; id is the endpoint's ID (no credentials). The record's
// body shares m.Body's bytes: m.Body must not be written afterwards.
func ToRecord(m Message, id, queueType string, now time.Time) *record.Record {
	return toRecord(m, id, queueType, now, false)
}

// leanAttributes are the headers a lean record keeps as attributes: the
// redrive marker (loop detection, --max-redrives) and the original route
// of a message republished by Spring's RepublishMessageRecoverer (the
// router's fallback without x-death).
var leanAttributes = [...]string{MarkerHeader, "x-original-exchange", "x-original-routingKey"}

// toRecord is ToRecord; lean (broker.SourceOptions.Lean) leaves out what
// only a selection or a listing reads: the headers other than
// leanAttributes and the decoded death history (x-death, first and last
// death). The id, body SHA-256, size, times and properties are as
// ToRecord gives them.
func toRecord(m Message, id, queueType string, now time.Time, lean bool) *record.Record {
	rec := new(record.Record)
	fillRecord(rec, new(record.AMQPSystem), m, id, queueType, now, lean)
	return rec
}

// fillRecord writes toRecord's record into rec and sys (rec.System.AMQP
// = sys): a read allocates a batch's records at once.
func fillRecord(rec *record.Record, sys *record.AMQPSystem, m Message, id, queueType string, now time.Time, lean bool) {
	body := m.Body
	bodySum := sha256.Sum256(body)
	*rec = record.Record{
		MessageID:  m.MessageId,
		Queue:      id,
		Broker:     record.BrokerAMQP,
		BodySHA256: hex.EncodeToString(bodySum[:]),
		SizeBytes:  len(body),
	}
	if lean {
		for _, k := range leanAttributes {
			if v, ok := m.Headers[k]; ok {
				if rec.Attributes == nil {
					rec.Attributes = make(map[string]record.Attribute, len(leanAttributes))
				}
				rec.Attributes[k] = toAttribute(v)
			}
		}
	} else {
		rec.Attributes = HeadersToAttributes(m.Headers)
	}
	*sys = record.AMQPSystem{
		Exchange: m.Exchange, RoutingKey: m.RoutingKey, Redelivered: m.Redelivered,
		QueueType: queueType,
		Properties: record.AMQPProperties{
			MessageID: m.MessageId, CorrelationID: m.CorrelationId, Type: m.Type, AppID: m.AppId,
			UserID: m.UserId, ReplyTo: m.ReplyTo, ContentType: m.ContentType, ContentEncoding: m.ContentEncoding,
			DeliveryMode: m.DeliveryMode, Priority: m.Priority, Expiration: m.Expiration,
		},
	}
	if utf8.Valid(body) {
		// The record's body shares the delivery's bytes (a delivery's
		// body is its own allocation, never written after): no copy.
		rec.Body = unsafe.String(unsafe.SliceData(body), len(body))
	} else {
		rec.Body = base64.StdEncoding.EncodeToString(body)
		sys.BodyEncoding = "base64"
	}
	if !m.Timestamp.IsZero() {
		sys.Properties.Timestamp = record.Timestamp{Time: m.Timestamp.UTC()}
		rec.System.SentAt = m.Timestamp.UTC()
	}
	if m.DeliveryCount >= 0 {
		sys.DeliveryCount = int(m.DeliveryCount)
		rec.System.ReceiveCount = int(m.DeliveryCount) + 1
	} else if m.Redelivered {
		rec.System.ReceiveCount = 2 // at least: classic queues count nothing more
	} else {
		rec.System.ReceiveCount = 1
	}
	if !lean {
		// A lean record's copy and route come from its delivery (kept on
		// the record): its death history is not converted.
		for _, d := range m.Deaths.Deaths {
			sys.Deaths = append(sys.Deaths, record.AMQPDeath{
				Count: d.Count, Reason: d.Reason, Queue: d.Queue, Exchange: d.Exchange,
				RoutingKeys: d.RoutingKeys, Time: record.Timestamp{Time: d.Time}, OriginalExpiration: d.OriginalExpiration,
			})
		}
	}
	if d := m.Deaths; !lean && (d.FirstReason != "" || d.FirstQueue != "") {
		sys.FirstDeath = &record.AMQPDeathRef{Exchange: d.FirstExchange, Queue: d.FirstQueue, Reason: d.FirstReason}
	}
	if d := m.Deaths; !lean && (d.LastReason != "" || d.LastQueue != "") {
		sys.LastDeath = &record.AMQPDeathRef{Exchange: d.LastExchange, Queue: d.LastQueue, Reason: d.LastReason}
	}
	rec.System.AMQP = sys
	if rec.System.SentAt.IsZero() {
		// Without a timestamp property, the first death is the oldest
		// time the broker recorded.
		if f, ok := m.Deaths.First(); ok && !f.Time.IsZero() {
			rec.System.SentAt = f.Time
		}
	}
	if !rec.System.SentAt.IsZero() {
		rec.AgeSeconds = int64(now.Sub(rec.System.SentAt) / time.Second)
	}
	if rec.MessageID == "" {
		rec.MessageID = SyntheticID(bodySum[:], m.Deaths)
	} else if mk, ok := m.Headers[MarkerHeader]; ok {
		// A copy dlqctl redrove that died again keeps its message-id: tell
		// this occurrence apart from the one that was redriven (a run's
		// journal knows that one as sent), by the marker and the new death.
		rec.MessageID += "~" + occurrence(mk, m.Deaths)
	}
}

// occurrence is 8 hex digits of the SHA-256 of a redriven copy's marker
// and its newest death.
func occurrence(marker any, d DeathInfo) string {
	h := sha256.New()
	fmt.Fprintf(h, "%v", marker)
	if len(d.Deaths) > 0 {
		e := d.Deaths[0]
		fmt.Fprintf(h, "\x00%s\x00%s\x00%d\x00%d", e.Queue, e.Reason, e.Count, e.Time.UnixMilli())
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// SyntheticID identifies a message without a message-id property: the
// SHA-256 of its body and its first death (queue, reason, time), so two
// reads of the same dead letter agree and equal bodies that died apart do
// not. "sha256:" and 32 hex digits.
func SyntheticID(bodySum []byte, d DeathInfo) string {
	h := sha256.New()
	h.Write(bodySum)
	if f, ok := d.First(); ok {
		fmt.Fprintf(h, "\x00%s\x00%s\x00%d", f.Queue, f.Reason, f.Time.UnixMilli())
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:32]
}

// HeadersToAttributes converts a header table into typed record
// attributes, leaving out the dead-lettering headers (decoded into
// system.amqp instead).
func HeadersToAttributes(h amqp091.Table) map[string]record.Attribute {
	out := make(map[string]record.Attribute, len(h))
	for k, v := range h {
		if IsDeathHeader(k) {
			continue
		}
		out[k] = toAttribute(v)
	}
	return out
}

func toAttribute(v any) record.Attribute {
	num := func(t string, n string) record.Attribute { return record.Attribute{Type: t, Value: n} }
	switch x := v.(type) {
	case string:
		return record.Attribute{Type: attrString, Value: x}
	case []byte:
		return record.Attribute{Type: attrBinary, Base64: base64.StdEncoding.EncodeToString(x)}
	case int64:
		return num(attrNumber, strconv.FormatInt(x, 10))
	case int:
		return num(attrNumber, strconv.Itoa(x))
	case int32:
		return num(attrNumber+".int32", strconv.FormatInt(int64(x), 10))
	case int16:
		return num(attrNumber+".int16", strconv.FormatInt(int64(x), 10))
	case int8:
		return num(attrNumber+".int8", strconv.FormatInt(int64(x), 10))
	case uint8:
		return num(attrNumber+".uint8", strconv.FormatUint(uint64(x), 10))
	case uint16:
		return num(attrNumber+".uint16", strconv.FormatUint(uint64(x), 10))
	case uint32:
		return num(attrNumber+".uint32", strconv.FormatUint(uint64(x), 10))
	case float64:
		return num(attrNumber+".float64", strconv.FormatFloat(x, 'g', -1, 64))
	case float32:
		return num(attrNumber+".float32", strconv.FormatFloat(float64(x), 'g', -1, 32))
	case amqp091.Decimal:
		return num(attrNumber+".decimal", fmt.Sprintf("%d:%d", x.Scale, x.Value))
	case bool:
		return record.Attribute{Type: attrBool, Value: strconv.FormatBool(x)}
	case time.Time:
		return record.Attribute{Type: attrTimestamp, Value: x.UTC().Format(time.RFC3339)}
	case amqp091.Table:
		b, _ := json.Marshal(plainJSON(x))
		return record.Attribute{Type: attrTable, Value: string(b)}
	case []any:
		b, _ := json.Marshal(plainJSON(x))
		return record.Attribute{Type: attrArray, Value: string(b)}
	case nil:
		return record.Attribute{Type: attrVoid}
	}
	return record.Attribute{Type: attrString, Value: fmt.Sprint(v)}
}

// plainJSON turns table values into what encoding/json writes plainly.
func plainJSON(v any) any {
	switch x := v.(type) {
	case amqp091.Table:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = plainJSON(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = plainJSON(e)
		}
		return a
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case amqp091.Decimal:
		return fmt.Sprintf("%d:%d", x.Scale, x.Value)
	}
	return v
}

// AttributesToHeaders is the inverse of HeadersToAttributes. Attributes
// of other brokers' types (an SQS "String.tenant") become strings.
func AttributesToHeaders(attrs map[string]record.Attribute) (amqp091.Table, error) {
	h := make(amqp091.Table, len(attrs))
	for k, a := range attrs {
		v, err := fromAttribute(a)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
		h[k] = v
	}
	return h, nil
}

func fromAttribute(a record.Attribute) (any, error) {
	t := a.Type
	switch {
	case a.IsBinary():
		return base64.StdEncoding.DecodeString(a.Base64)
	case t == attrBool:
		return strconv.ParseBool(a.Value)
	case t == attrTimestamp:
		return time.Parse(time.RFC3339, a.Value)
	case t == attrTable, t == attrArray:
		dec := json.NewDecoder(strings.NewReader(a.Value))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		return fromPlainJSON(v), nil
	case t == attrVoid:
		return nil, nil
	case t == attrNumber:
		if n, err := strconv.ParseInt(a.Value, 10, 64); err == nil {
			return n, nil
		}
		return strconv.ParseFloat(a.Value, 64)
	case strings.HasPrefix(t, attrNumber+"."):
		return parseNumber(strings.TrimPrefix(t, attrNumber+"."), a.Value)
	}
	return a.Value, nil
}

func parseNumber(kind, s string) (any, error) {
	switch kind {
	case "int32":
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case "int16":
		n, err := strconv.ParseInt(s, 10, 16)
		return int16(n), err
	case "int8":
		n, err := strconv.ParseInt(s, 10, 8)
		return int8(n), err
	case "uint8":
		n, err := strconv.ParseUint(s, 10, 8)
		return uint8(n), err
	case "uint16":
		n, err := strconv.ParseUint(s, 10, 16)
		return uint16(n), err
	case "uint32":
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err
	case "float64":
		return strconv.ParseFloat(s, 64)
	case "float32":
		f, err := strconv.ParseFloat(s, 32)
		return float32(f), err
	case "decimal":
		sc, val, ok := strings.Cut(s, ":")
		scale, err1 := strconv.ParseUint(sc, 10, 8)
		v, err2 := strconv.ParseInt(val, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad decimal %q", s)
		}
		return amqp091.Decimal{Scale: uint8(scale), Value: int32(v)}, nil
	}
	// An SQS custom number type ("Number.amount"): an integer if it is one.
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	return s, nil
}

func fromPlainJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		t := make(amqp091.Table, len(x))
		for k, e := range x {
			t[k] = fromPlainJSON(e)
		}
		return t
	case []any:
		for i, e := range x {
			x[i] = fromPlainJSON(e)
		}
		return x
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		if math.IsInf(f, 0) {
			return x.String()
		}
		return f
	}
	return v
}

// BodyBytes returns the record's body as the bytes the broker carried.
func BodyBytes(rec *record.Record) ([]byte, error) {
	if a := rec.System.AMQP; a != nil && a.BodyEncoding == "base64" {
		return base64.StdEncoding.DecodeString(rec.Body)
	}
	return []byte(rec.Body), nil
}

// DeathsOf returns the record's dead-lettering facts as DeathInfo.
func DeathsOf(rec *record.Record) DeathInfo {
	var d DeathInfo
	a := rec.System.AMQP
	if a == nil {
		return d
	}
	for _, e := range a.Deaths {
		d.Deaths = append(d.Deaths, Death{Count: e.Count, Reason: e.Reason, Queue: e.Queue, Exchange: e.Exchange,
			RoutingKeys: e.RoutingKeys, Time: e.Time.Time, OriginalExpiration: e.OriginalExpiration})
	}
	if f := a.FirstDeath; f != nil {
		d.FirstQueue, d.FirstReason, d.FirstExchange = f.Queue, f.Reason, f.Exchange
	}
	if l := a.LastDeath; l != nil {
		d.LastQueue, d.LastReason, d.LastExchange = l.Queue, l.Reason, l.Exchange
	}
	return d
}

// DeliveryOf rebuilds the delivery a record was read from (body,
// properties, headers, deaths): what a copy is made from, for records read
// live and read back from an archive alike.
func DeliveryOf(rec *record.Record) (Message, error) {
	body, err := BodyBytes(rec)
	if err != nil {
		return Message{}, fmt.Errorf("message %s: body: %w", rec.MessageID, err)
	}
	h, err := AttributesToHeaders(rec.Attributes)
	if err != nil {
		return Message{}, fmt.Errorf("message %s: %w", rec.MessageID, err)
	}
	d := amqp091.Delivery{Headers: h, Body: body, MessageId: rec.MessageID}
	if a := rec.System.AMQP; a != nil {
		p := a.Properties
		d.MessageId, d.CorrelationId, d.Type, d.AppId = p.MessageID, p.CorrelationID, p.Type, p.AppID
		d.UserId, d.ReplyTo, d.ContentType, d.ContentEncoding = p.UserID, p.ReplyTo, p.ContentType, p.ContentEncoding
		d.DeliveryMode, d.Priority, d.Expiration = p.DeliveryMode, p.Priority, p.Expiration
		d.Timestamp = p.Timestamp.Time
		d.Exchange, d.RoutingKey = a.Exchange, a.RoutingKey
	} else {
		// A record from another broker (restore of an SQS archive into
		// RabbitMQ): a persistent message with its id.
		d.DeliveryMode = amqp091.Persistent
	}
	return Message{Delivery: d, Deaths: DeathsOf(rec), DeliveryCount: -1, StreamOffset: -1}, nil
}
