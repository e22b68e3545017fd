package broker

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/finding"
)

// What the health commands (audit, check, watch) ask of an endpoint beyond
// Depth: optional interfaces a broker package implements where its broker
// knows more. Package health asks for them; it never asks which broker it
// talks to.

// DepthTerms name the counts of a broker's Depth in its own words, for
// check's details and watch's view; "" for a count the broker does not keep.
type DepthTerms struct {
	// Ready: SQS "visible", RabbitMQ "ready", Kafka "pending".
	Ready string
	// Held: SQS "in flight", RabbitMQ "unacknowledged"; Kafka "" (a read
	// holds nothing).
	Held string
	// Delayed: SQS "delayed"; "" elsewhere.
	Delayed string
	// AgeFrom says how a read message's age is known when it is not the
	// broker's own enqueue time ("from each message's timestamp or first
	// death"); "" otherwise.
	AgeFrom string
	// HeadFirst: a read starts at the oldest message (a RabbitMQ classic
	// queue), so a sample of N messages is the N oldest.
	HeadFirst bool
}

// Gauge is one more figure of a queue for watch's view, in the broker's
// words (RabbitMQ: "consumers", "2").
type Gauge struct{ Name, Value string }

// DepthReading is a DepthReader's account of a queue now.
type DepthReading struct {
	Depth
	Terms DepthTerms
	// Note qualifies the counts in one phrase, "" when nothing needs saying
	// (Kafka: for which consumer group, and that transaction markers make
	// the count an upper bound).
	Note string
	// Oldest is the age of the oldest waiting message when the broker
	// knows it without reading messages (OldestKnown; Kafka: the first
	// pending record of each partition), and OldestDetail says how it was
	// found. Otherwise the health commands sample messages.
	Oldest       time.Duration
	OldestKnown  bool
	OldestDetail string
	// Gauges are further figures for watch's view.
	Gauges []Gauge
}

// DepthReader is an Endpoint that reads its depth for check and watch with
// what its broker knows beyond Depth. oldest asks for Oldest where the
// broker can give it (it may cost a call more). Endpoints without it are
// read through Depth alone, in neutral words.
type DepthReader interface {
	ReadDepth(ctx context.Context, oldest bool) (DepthReading, error)
}

// MoveTask is a move the broker itself runs out of a queue (an SQS message
// move task, redrive --engine native). JSON: watch's ticks.
type MoveTask struct {
	Status         string    `json:"status"`
	DestinationARN string    `json:"destination_arn,omitempty"`
	Moved          int64     `json:"moved"`
	ToMove         *int64    `json:"to_move,omitempty"`
	MaxPerSecond   *int32    `json:"max_per_second,omitempty"`
	StartedAt      time.Time `json:"started_at,omitzero"`
}

// MoveTaskLister is an Endpoint whose broker moves messages itself
// (Capabilities.NativeMove): watch shows the moves running out of it.
type MoveTaskLister interface {
	RunningMoveTasks(ctx context.Context) ([]MoveTask, error)
}

// PeekWarner is an Endpoint that says, before a read that gives every
// message back, what such a read still changes (SQS: receives count toward
// the queue's own RedrivePolicy; a FIFO group is blocked while read).
type PeekWarner interface {
	PeekWarnings() []string
}

// Auditor is what a broker package audits against its broker's production
// checklist: a Kafka dead-letter topic (the Endpoint) and its retry chain,
// a RabbitMQ vhost's dead-lettering (its exchanges, bindings and queues).
// It reads configuration and at most a sample of messages; it changes
// nothing. Package health runs every Auditor a command was given and
// reports their findings as one.
type Auditor interface {
	Audit(ctx context.Context, opt AuditOptions) (AuditResult, error)
}

// AuditOptions tune an Auditor.
type AuditOptions struct {
	// InvestigationWindow is how long people need between a message
	// dead-lettering and someone replaying it.
	InvestigationWindow time.Duration
	// Sample is how many messages may be read (0: none, or the broker's
	// default where reading a sample leaves no trace).
	Sample int
	// SampleHold is how long a sampled message stays held between
	// heartbeats (lease brokers).
	SampleHold time.Duration
}

// AuditResult is what an Auditor found.
type AuditResult struct {
	// Audited names the queues or topics audited.
	Audited  []string
	Findings []finding.Finding
	// Notes say what could not be checked, and why.
	Notes []string
}
