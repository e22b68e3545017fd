package amqp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"
	"unsafe"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/internal/jsonenc"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Headers dlqctl writes on a republished message.
const (
	// MarkerHeader is the redrive marker, the same JSON as SQS's
	// dlqctl-redrive attribute: {"run","orig","n","at"}.
	MarkerHeader = record.MarkerAttribute
	// DeathHistoryHeader keeps the x-death history (JSON array of Death,
	// newest first; earlier redrives' history appended) that the republish
	// strips: RabbitMQ 4.x ignores x-death set by clients, and a kept
	// x-death would merge the old deaths into the next one on 3.x.
	DeathHistoryHeader = "dlqctl-death-history"
	// MaxDeathHistory bounds the entries kept in DeathHistoryHeader (a
	// message redriven into a dead-letter cycle again and again must not
	// outgrow the broker's frame size).
	MaxDeathHistory = 32
)

// Route is where "to source" sends a dead-lettered message: the exchange
// and routing keys of its first death, i.e. where its producer published
// it. The first key is the routing key, the others go in the CC header.
type Route struct {
	Exchange    string
	RoutingKeys []string
	// Queue is the queue the message first died in (for reports).
	Queue string
}

// ErrNoRoute: the message carries no death record to route it by.
var ErrNoRoute = errors.New("no x-death record: the message was not dead-lettered by RabbitMQ, so its original exchange is unknown (redrive it with --to)")

// SourceRoute returns the route of the message's first death. Spring
// AMQP's RepublishMessageRecoverer writes x-original-exchange and
// x-original-routingKey instead of x-death; they are used when x-death is
// absent.
func SourceRoute(m Message) (Route, error) {
	if f, ok := m.Deaths.First(); ok {
		if len(f.RoutingKeys) == 0 {
			return Route{}, fmt.Errorf("x-death entry for queue %q has no routing keys: the original route is unknown (redrive it with --to)", f.Queue)
		}
		return Route{Exchange: f.Exchange, RoutingKeys: f.RoutingKeys, Queue: f.Queue}, nil
	}
	if ex, ok := m.Headers["x-original-exchange"]; ok {
		exs, _ := asString(ex)
		key := headerString(m.Headers, "x-original-routingKey")
		return Route{Exchange: exs, RoutingKeys: []string{key}}, nil
	}
	return Route{}, ErrNoRoute
}

// RepublishOptions say what marker to write.
type RepublishOptions struct {
	RunID string
	Now   time.Time
}

// ReadMarker decodes the dlqctl redrive marker header.
func ReadMarker(h amqp091.Table) (record.Marker, bool) {
	s, ok := asString(h[MarkerHeader])
	if !ok {
		return record.Marker{}, false
	}
	var mk record.Marker
	if json.Unmarshal([]byte(s), &mk) != nil {
		return record.Marker{}, false
	}
	return mk, true
}

// Republish builds the copy of m for route: the same body and properties,
// the headers without x-death/x-first-death-*/x-last-death-* and the
// broker's delivery annotations, the death history and the redrive marker
// (count + 1) added, CC set to the route's other keys.
func Republish(m Message, route Route, origID string, o RepublishOptions) (Publishing, error) {
	return republish(m, route, origID, o, false)
}

// republish is Republish; asRecord gives each header the value it has
// after a trip through the record's attributes (what a copy made from the
// record carries: nested tables and arrays as plain JSON), for a message
// taken as the broker delivered it.
func republish(m Message, route Route, origID string, o RepublishOptions, asRecord bool) (Publishing, error) {
	if len(route.RoutingKeys) == 0 {
		return Publishing{}, ErrNoRoute
	}
	h := make(amqp091.Table, len(m.Headers)+2)
	for k, v := range m.Headers {
		if IsDeathHeader(k) || isDeliveryAnnotation(k) || k == "CC" || k == "BCC" {
			continue
		}
		if asRecord {
			var err error
			if v, err = throughRecord(v); err != nil {
				return Publishing{}, fmt.Errorf("header %q: %w", k, err)
			}
		}
		h[k] = v
	}
	// Death history: this message's x-death, then what earlier redrives kept.
	hist := m.Deaths.Deaths
	if s, ok := asString(m.Headers[DeathHistoryHeader]); ok {
		var prev []Death
		if json.Unmarshal([]byte(s), &prev) == nil {
			hist = append(append([]Death(nil), hist...), prev...)
		}
	}
	if len(hist) > MaxDeathHistory {
		hist = hist[:MaxDeathHistory] // newest first: the oldest go
	}
	if len(hist) > 0 {
		b, err := appendDeaths(make([]byte, 0, 160*len(hist)), hist)
		if err != nil {
			return Publishing{}, err
		}
		h[DeathHistoryHeader] = unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
	}
	mk := record.Marker{RunID: o.RunID, OriginalID: origID, Count: 1, At: o.Now.UTC().Truncate(time.Millisecond)}
	if _, ok := m.Headers[MarkerHeader]; ok {
		if prev, ok := ReadMarker(m.Headers); ok {
			mk.Count = prev.Count + 1
			if prev.OriginalID != "" {
				mk.OriginalID = prev.OriginalID
			}
		}
	}
	b, err := appendMarker(make([]byte, 0, 64+len(mk.RunID)+len(mk.OriginalID)), mk)
	if err != nil {
		return Publishing{}, err
	}
	h[MarkerHeader] = unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
	if len(route.RoutingKeys) > 1 {
		cc := make([]any, 0, len(route.RoutingKeys)-1)
		for _, k := range route.RoutingKeys[1:] {
			cc = append(cc, k)
		}
		h["CC"] = cc
	}
	return Publishing{Exchange: route.Exchange, RoutingKey: route.RoutingKeys[0], Msg: CopyPublishing(m.Delivery, h)}, nil
}

// throughRecord is v after HeadersToAttributes and AttributesToHeaders:
// the same value for the types a record attribute keeps exactly (every
// scalar the client library decodes), the record's rendering for the
// others (nested tables and arrays, timestamps).
func throughRecord(v any) (any, error) {
	switch v.(type) {
	case string, []byte, int64, int32, int16, int8, uint8, uint16, uint32, float64, float32, bool, amqp091.Decimal, nil:
		return v, nil
	}
	return fromAttribute(toAttribute(v))
}

// appendMarker appends the marker's JSON: what json.Marshal writes for
// it, without reflection (a copy of every message carries one).
func appendMarker(b []byte, mk record.Marker) ([]byte, error) {
	b = append(b, `{"run":`...)
	b = jsonenc.String(b, mk.RunID)
	b = append(b, `,"orig":`...)
	b = jsonenc.String(b, mk.OriginalID)
	b = append(b, `,"n":`...)
	b = jsonenc.Int(b, int64(mk.Count))
	b = append(b, `,"at":`...)
	b, ok := jsonenc.Time(b, mk.At)
	if !ok {
		return json.Marshal(mk)
	}
	return append(b, '}'), nil
}

// appendDeaths appends the death history's JSON: what json.Marshal
// writes for it, without reflection.
func appendDeaths(b []byte, ds []Death) ([]byte, error) {
	b = append(b, '[')
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"count":`...)
		b = jsonenc.Int(b, d.Count)
		b = append(b, `,"reason":`...)
		b = jsonenc.String(b, d.Reason)
		b = append(b, `,"queue":`...)
		b = jsonenc.String(b, d.Queue)
		b = append(b, `,"exchange":`...)
		b = jsonenc.String(b, d.Exchange)
		b = append(b, `,"routing-keys":`...)
		b = jsonenc.Strings(b, d.RoutingKeys)
		if !d.Time.IsZero() {
			b = append(b, `,"time":`...)
			var ok bool
			if b, ok = jsonenc.Time(b, d.Time); !ok {
				return json.Marshal(ds)
			}
		}
		if d.OriginalExpiration != "" {
			b = append(b, `,"original-expiration":`...)
			b = jsonenc.String(b, d.OriginalExpiration)
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// CopyPublishing is d's body and properties with headers h (nil: d's own
// headers, copied). The user-id property is left out: the broker checks it
// against the publishing connection's user and closes the channel when
// they differ, and dlqctl rarely publishes as the original producer.
func CopyPublishing(d amqp091.Delivery, h amqp091.Table) amqp091.Publishing {
	if h == nil && d.Headers != nil {
		h = maps.Clone(d.Headers)
	}
	return amqp091.Publishing{
		Headers:         h,
		ContentType:     d.ContentType,
		ContentEncoding: d.ContentEncoding,
		DeliveryMode:    d.DeliveryMode,
		Priority:        d.Priority,
		CorrelationId:   d.CorrelationId,
		ReplyTo:         d.ReplyTo,
		Expiration:      d.Expiration,
		MessageId:       d.MessageId,
		Timestamp:       d.Timestamp,
		Type:            d.Type,
		AppId:           d.AppId,
		Body:            d.Body,
	}
}
