package ui

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/finding"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// Describe is the message screen of rec (redacted by redactor, nil: not): the body pretty-printed, the decoded
// payload, the explanation of 'classify --explain', the origin.
func Describe(rec *record.Record, rules *classify.Rules, redactor *inspect.Redactor) Detail {
	r := *rec
	if redactor != nil {
		r = redactor.Record(r) // already masked by the read; never shown raw
	}
	parsed := inspect.Decode(&r)
	var d Detail
	var body bytes.Buffer
	if json.Indent(&body, []byte(r.Body), "", "  ") == nil {
		d.Body = body.String()
	} else {
		d.Body = r.Body
	}
	if r.PayloadEncoding != "" && r.PayloadEncoding != "json" && r.PayloadEncoding != "text" {
		if p := inspect.PayloadOf(&r, parsed); p != nil {
			if pb, err := json.MarshalIndent(p, "", "  "); err == nil {
				d.Body += "\n\ndecoded payload (" + r.PayloadEncoding + "):\n" + string(pb)
			}
		}
	}
	found := rules.Explain(&r, parsed)
	var ex bytes.Buffer
	report.WriteExplanation(&ex, r, found, classify.DefaultMinConfidence, redactor)
	d.Explain = ex.String()
	d.Origin = r.SourceQueue()
	if d.Origin == "" {
		d.Origin = "(no source recorded: the DLQ's only source queue, if it has one; else --to QUEUE)"
	}
	return d
}

// IsScope says whether ref names a place to list DLQs in (a RabbitMQ vhost
// amqp://HOST/VHOST/, a Kafka cluster kafka://HOST:PORT or …/) rather than
// one queue.
func IsScope(ref string) bool {
	r, err := broker.ParseRef(ref)
	if err != nil {
		return false
	}
	switch r.Broker {
	case broker.AMQP:
		return strings.HasSuffix(ref, "/")
	case broker.Kafka:
		rest := strings.TrimPrefix(strings.TrimSpace(ref), "kafka://")
		_, path, _ := strings.Cut(rest, "/")
		return path == ""
	}
	return false
}

// BrokerName is the broker of ref as the DLQ screen names it.
func BrokerName(ref string) string {
	r, err := broker.ParseRef(ref)
	if err != nil {
		return "?"
	}
	switch r.Broker {
	case broker.AMQP:
		return "rabbitmq"
	case broker.Kafka:
		return "kafka"
	}
	return "sqs"
}

// ListedDLQs are the DLQ screen's rows of a 'queues' listing of scope
// ("" for the SQS region, amqp://HOST/VHOST/ or kafka://HOST:PORT/): each
// item's name, reference, broker and warnings (its own, and those of the
// listing that name it). Depths are the caller's to fill.
func ListedDLQs(scope string, items []any, warnings []string) []DLQ {
	var out []DLQ
	for _, it := range items {
		raw, _ := json.Marshal(it)
		var fields struct {
			Name     string   `json:"name"`
			Ref      string   `json:"ref"`
			URL      string   `json:"url"`
			Stage    string   `json:"stage"`
			Warnings []string `json:"warnings"`
		}
		_ = json.Unmarshal(raw, &fields)
		d := DLQ{Name: fields.Name, Warnings: fields.Warnings}
		switch {
		case scope == "":
			d.Ref, d.Broker = fields.URL, "sqs"
		case fields.Ref != "":
			d.Ref, d.Broker = fields.Ref, "rabbitmq"
		default:
			hosts, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(scope), "kafka://"), "/")
			d.Ref, d.Broker = "kafka://"+hosts+"/"+fields.Name, "kafka"
		}
		for _, w := range warnings {
			if s, ok := strings.CutPrefix(w, fields.Name+": "); ok && !slices.Contains(d.Warnings, s) {
				d.Warnings = append(d.Warnings, s)
			}
		}
		out = append(out, d)
	}
	return out
}

// AuditWarnings are the problems of an audit's findings at warning
// severity or above that concern the queue name (as the audited queue or
// the related one), for the DLQ screen.
func AuditWarnings(findings []finding.Finding, name string) []string {
	var out []string
	for _, x := range findings {
		if x.Severity.Rank() >= finding.SevWarn.Rank() && (x.Queue == name || x.Related == name) {
			out = append(out, x.Problem)
		}
	}
	return out
}
