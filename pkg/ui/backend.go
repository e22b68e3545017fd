// Package ui is the model of `dlqctl ui`: a full-screen terminal view
// over the same domain code as the commands. It draws what a Backend
// reads and builds the exact `dlqctl …` command line of every action; the
// command (cmd/ui.go) runs that line as a child process of the same
// binary, so there is no second implementation of any operation and every
// run leaves the usual journal.
//
// The package knows no broker and no cobra; it never touches os.Stdout
// and never exits. It imports bubbletea for its Model interface only.
package ui

import (
	"context"
	"time"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Backend is what the model asks of the outside world. cmd/ui.go
// implements it with the commands' own readers; the tests use a fake.
type Backend interface {
	// ListDLQs returns the dead-letter queues to show, with their depth.
	ListDLQs(ctx context.Context) ([]DLQ, error)
	// Depth reads one queue's depth again (for the growth sparkline).
	Depth(ctx context.Context, ref string) (Depth, error)
	// Read reads ref without consuming it (the same read as `sample` and
	// `group`: SQS and RabbitMQ messages are held and released at the end,
	// also on cancel; Kafka is read from the committed offsets, nothing
	// committed) and hands what it read to emit as it goes. It returns
	// once every held message is released.
	Read(ctx context.Context, ref string, emit func(ReadUpdate)) error
	// Describe is the message screen of one record: the body pretty-printed,
	// the classification with its evidence, where a redrive sends it.
	Describe(rec *record.Record) Detail
	// Run runs `dlqctl ARGS…` (the command line Action.Args) as a child
	// process and reports its NDJSON events (with -o ndjson) as they come.
	Run(ctx context.Context, args []string, event func(RunEvent)) RunResult
}

// Depth is a queue's depth as its broker reports it.
type Depth struct {
	Ready, Held int64
	// Exact is false when the counts are approximate (SQS).
	Exact bool
	// Oldest is the age of the oldest waiting message, when the broker
	// knows it without reading (OldestKnown).
	Oldest      time.Duration
	OldestKnown bool
	At          time.Time
}

// DLQ is one row of the DLQs screen.
type DLQ struct {
	// Ref is the reference the commands take (a queue name, URL,
	// amqp://… or kafka://…).
	Ref string
	// Name is the short name shown.
	Name string
	// Broker is "sqs", "rabbitmq" or "kafka".
	Broker string
	Depth  Depth
	// Warnings are audit findings about the queue (retention shorter
	// than a source's, no consumer, …).
	Warnings []string
	// Err says why the depth could not be read ("" when it was).
	Err string
}

// GroupKeys are the keys the Groups screen groups by, in the order the
// g key cycles through them, as Item.Keys holds their values.
var GroupKeys = []struct {
	// Name is shown; Key is the `group --by` key.
	Name, Key string
}{
	{"error", "error"},
	{"class", "class"},
	{"source", "source"},
	{"type", "event_type"},
	{"encoding", "encoding"},
	{"tenant", "tenant"},
}

// Item is one message read, as the Groups and Messages screens need it.
type Item struct {
	// Keys are the message's values for GroupKeys, in that order (the
	// class key: the class, with the confidence note when the decision
	// is below --min-confidence, so that --class selects the group).
	Keys [6]string
	// Rec is the message record (redacted).
	Rec record.Record
}

// ReadUpdate is a part of a read, in order: one Start, any number of
// Items batches, one End.
type ReadUpdate struct {
	// Start: Warnings say what peeking changes (SQS receive counts, FIFO
	// group locks; RabbitMQ quorum delivery counts); Depth is the depth at
	// the start (0: unknown).
	Start    bool
	Warnings []string
	Depth    int64
	// Items read since the last update.
	Items []Item
	// End: Complete is true when the whole queue was read; Note says why
	// not (FIFO groups locked, in-flight limit, --sample); Err is an error
	// that stopped the read.
	End      bool
	Complete bool
	Note     string
	Err      error
}

// Detail is the message screen's content for one record.
type Detail struct {
	// Body is the body pretty-printed (JSON indented, decoded payloads).
	Body string
	// Explain is the classification with its evidence, as
	// `classify --explain` prints it.
	Explain string
	// Origin is where `redrive --to source` would send it.
	Origin string
}

// RunEvent is one NDJSON line of a child run ({"type":"progress"|…}).
type RunEvent struct {
	Type string
	// Fields is the whole event.
	Fields map[string]any
}

// RunResult is how a child run ended.
type RunResult struct {
	// Code is the exit code (0 ok, 2 bad input, 3 verdict failed, 4
	// partial, 130 interrupted, -1: it could not be started).
	Code int
	// Summary is the last "summary" event (or the last JSON object the
	// run printed); nil when there was none.
	Summary map[string]any
	// Stderr is what the run printed on stderr (its last lines).
	Stderr string
	Err    error
}

// Preparer turns a message read into an Item: classified with the rules
// (as `classify` does), its group key values computed (as `group --by`
// does) and the record redacted (as `sample` shows it). It is safe for
// concurrent use.
type Preparer struct {
	rules    *classify.Rules
	grouper  *inspect.Grouper
	redactor *inspect.Redactor
	minConf  float64
}

// NewPreparer classifies with rules (the built-in rules when nil) and
// masks secret-looking values with redactor (nil: shows them).
func NewPreparer(rules *classify.Rules, redactor *inspect.Redactor) *Preparer {
	if rules == nil {
		rules = classify.Builtin()
	}
	keys, err := inspect.ParseGroupKeys([]string{"error,source,event_type,encoding,tenant"})
	if err != nil {
		panic(err) // named keys: cannot fail
	}
	return &Preparer{rules: rules, grouper: inspect.NewGrouper(keys, time.Time{}), redactor: redactor, minConf: classify.DefaultMinConfidence}
}

// Item prepares rec (parsed is its decoded body, see inspect.Decode).
func (p *Preparer) Item(rec *record.Record, parsed any) *Item {
	o := p.rules.Classify(rec, parsed)
	v := p.grouper.Values(rec, parsed)
	class := o.Class
	if class != classify.ClassUnknown && o.Confidence < p.minConf {
		class += LowConfidence
	}
	it := &Item{Keys: [6]string{v[0], class, v[1], v[2], v[3], v[4]}, Rec: *rec}
	if p.redactor != nil {
		it.Rec = p.redactor.Record(*rec)
	}
	return it
}
