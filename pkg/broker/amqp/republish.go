package amqp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

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
	if len(route.RoutingKeys) == 0 {
		return Publishing{}, ErrNoRoute
	}
	h := amqp091.Table{}
	for k, v := range m.Headers {
		if IsDeathHeader(k) || isDeliveryAnnotation(k) || k == "CC" || k == "BCC" {
			continue
		}
		h[k] = v
	}
	// Death history: this message's x-death, then what earlier redrives kept.
	var hist []Death
	hist = append(hist, m.Deaths.Deaths...)
	if s, ok := asString(m.Headers[DeathHistoryHeader]); ok {
		var prev []Death
		if json.Unmarshal([]byte(s), &prev) == nil {
			hist = append(hist, prev...)
		}
	}
	if len(hist) > MaxDeathHistory {
		hist = hist[:MaxDeathHistory] // newest first: the oldest go
	}
	if len(hist) > 0 {
		b, err := json.Marshal(hist)
		if err != nil {
			return Publishing{}, err
		}
		h[DeathHistoryHeader] = string(b)
	}
	mk := record.Marker{RunID: o.RunID, OriginalID: origID, Count: 1, At: o.Now.UTC().Truncate(time.Millisecond)}
	if prev, ok := ReadMarker(m.Headers); ok {
		mk.Count = prev.Count + 1
		if prev.OriginalID != "" {
			mk.OriginalID = prev.OriginalID
		}
	}
	b, err := json.Marshal(mk)
	if err != nil {
		return Publishing{}, err
	}
	h[MarkerHeader] = string(b)
	if len(route.RoutingKeys) > 1 {
		cc := make([]any, 0, len(route.RoutingKeys)-1)
		for _, k := range route.RoutingKeys[1:] {
			cc = append(cc, k)
		}
		h["CC"] = cc
	}
	return Publishing{Exchange: route.Exchange, RoutingKey: route.RoutingKeys[0], Msg: CopyPublishing(m.Delivery, h)}, nil
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
