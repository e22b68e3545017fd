package amqp

import (
	"strings"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// Dead-letter reasons RabbitMQ writes in x-death.
const (
	ReasonRejected      = "rejected"
	ReasonExpired       = "expired"
	ReasonMaxLen        = "maxlen"
	ReasonDeliveryLimit = "delivery_limit"
)

// Death is one x-death entry: one {queue, reason} pair, with how many times
// the message was dead-lettered from that queue for that reason.
type Death struct {
	Count       int64     `json:"count"`
	Reason      string    `json:"reason"`
	Queue       string    `json:"queue"`
	Exchange    string    `json:"exchange"`
	RoutingKeys []string  `json:"routing-keys"`
	Time        time.Time `json:"time,omitzero"`
	// OriginalExpiration is the per-message TTL the message had (the
	// broker removes the expiration property when it dead-letters for
	// TTL, so the message does not expire again).
	OriginalExpiration string `json:"original-expiration,omitempty"`
}

// DeathInfo is everything RabbitMQ recorded about why a message was
// dead-lettered.
type DeathInfo struct {
	// Deaths is x-death, newest first (as the broker keeps it).
	Deaths []Death `json:"deaths,omitempty"`
	// First death: x-first-death-{queue,reason,exchange}; these never
	// change once set.
	FirstQueue    string `json:"first_death_queue,omitempty"`
	FirstReason   string `json:"first_death_reason,omitempty"`
	FirstExchange string `json:"first_death_exchange,omitempty"`
	// Last death: x-last-death-* (RabbitMQ 3.13 and later), else the first
	// x-death entry.
	LastQueue    string `json:"last_death_queue,omitempty"`
	LastReason   string `json:"last_death_reason,omitempty"`
	LastExchange string `json:"last_death_exchange,omitempty"`
}

// Dead reports whether the broker recorded a death.
func (d DeathInfo) Dead() bool { return len(d.Deaths) > 0 || d.FirstReason != "" }

// TotalCount is the sum of the counts of every x-death entry.
func (d DeathInfo) TotalCount() int64 {
	var n int64
	for _, e := range d.Deaths {
		n += e.Count
	}
	return n
}

// First returns the x-death entry of the first death: the entry matching
// x-first-death-queue/-reason, else the oldest (last) entry.
func (d DeathInfo) First() (Death, bool) {
	if len(d.Deaths) == 0 {
		return Death{}, false
	}
	if d.FirstQueue != "" {
		for i := len(d.Deaths) - 1; i >= 0; i-- {
			e := d.Deaths[i]
			if e.Queue == d.FirstQueue && (d.FirstReason == "" || e.Reason == d.FirstReason) {
				return e, true
			}
		}
	}
	return d.Deaths[len(d.Deaths)-1], true
}

// ParseDeaths decodes x-death, x-first-death-* and x-last-death-* from
// message headers. Malformed entries are skipped, never fatal.
func ParseDeaths(h amqp091.Table) DeathInfo {
	var d DeathInfo
	if arr, ok := h["x-death"].([]any); ok {
		for _, v := range arr {
			t, ok := v.(amqp091.Table)
			if !ok {
				continue
			}
			d.Deaths = append(d.Deaths, parseDeath(t))
		}
	}
	d.FirstQueue = headerString(h, "x-first-death-queue")
	d.FirstReason = headerString(h, "x-first-death-reason")
	d.FirstExchange = headerString(h, "x-first-death-exchange")
	d.LastQueue = headerString(h, "x-last-death-queue")
	d.LastReason = headerString(h, "x-last-death-reason")
	d.LastExchange = headerString(h, "x-last-death-exchange")
	if d.LastReason == "" && len(d.Deaths) > 0 {
		d.LastQueue, d.LastReason, d.LastExchange = d.Deaths[0].Queue, d.Deaths[0].Reason, d.Deaths[0].Exchange
	}
	if d.FirstReason == "" && len(d.Deaths) > 0 {
		f := d.Deaths[len(d.Deaths)-1]
		d.FirstQueue, d.FirstReason, d.FirstExchange = f.Queue, f.Reason, f.Exchange
	}
	return d
}

func parseDeath(t amqp091.Table) Death {
	var e Death
	e.Count, _ = headerInt(t["count"])
	e.Reason = headerString(t, "reason")
	e.Queue = headerString(t, "queue")
	e.Exchange = headerString(t, "exchange")
	if ks, ok := t["routing-keys"].([]any); ok {
		for _, k := range ks {
			if s, ok := asString(k); ok {
				e.RoutingKeys = append(e.RoutingKeys, s)
			}
		}
	}
	if tm, ok := t["time"].(time.Time); ok {
		e.Time = tm.UTC()
	}
	e.OriginalExpiration = headerString(t, "original-expiration")
	return e
}

func headerString(h amqp091.Table, k string) string {
	s, _ := asString(h[k])
	return s
}

func asString(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	}
	return "", false
}

func headerInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	case float32:
		return int64(n), true
	}
	return 0, false
}

// IsDeathHeader reports whether a header is written by dead-lettering
// (x-death, x-first-death-*, x-last-death-*): what a republish strips.
func IsDeathHeader(name string) bool {
	return name == "x-death" || strings.HasPrefix(name, "x-first-death-") || strings.HasPrefix(name, "x-last-death-")
}

// Broker annotations added on delivery that are not part of the message a
// producer published: stripped on republish.
func isDeliveryAnnotation(name string) bool {
	switch name {
	case "x-delivery-count", "x-acquired-count", "x-stream-offset":
		return true
	}
	return false
}
