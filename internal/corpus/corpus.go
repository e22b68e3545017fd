// Package corpus loads the triage corpus (testdata/triage): dead-letter
// messages in the formats real producers and frameworks write, one file per
// format, each message with the class the built-in rules must give it.
// Tests of the decoders, the rules and the classify command share it.
package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker/sqs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Message is one corpus entry.
type Message struct {
	ID string `json:"id"`
	// Format is the fixture file the message comes from ("plain" for
	// messages without failure context).
	Format string `json:"-"`
	// Stack is the language or platform that wrote the failure: go, java,
	// dotnet, python, node, ruby, php, elixir, rust, azure or aws.
	Stack  string `json:"stack"`
	Expect string `json:"expect"`
	Why    string `json:"why,omitempty"`
	// Body is the message body: a JSON string is sent as is, any other
	// JSON value is sent marshalled.
	Body       json.RawMessage            `json:"body"`
	Attributes map[string]json.RawMessage `json:"attributes,omitempty"`
	Decoded    *Decoded                   `json:"decoded,omitempty"`
}

// Decoded lists what decoding must find (only the fields given are checked).
type Decoded struct {
	Format         *string `json:"format,omitempty"`
	EventType      string  `json:"event_type,omitempty"`
	EventVersion   *int64  `json:"event_version,omitempty"`
	NoEventVersion bool    `json:"no_event_version,omitempty"`
	Producer       string  `json:"producer,omitempty"`
	FailureType    string  `json:"failure_type,omitempty"`
	PayloadKey     string  `json:"payload_key,omitempty"`
	Attempts       int     `json:"attempts,omitempty"`
	NoFailure      bool    `json:"no_failure,omitempty"`
	// Encoding is the payload_encoding the body must be detected as.
	Encoding string `json:"encoding,omitempty"`
}

// Dir returns the corpus directory from a package directory of this module.
func Dir(fromPkg string) string { return filepath.Join(fromPkg, "testdata", "triage") }

// Load reads every fixture file of dir, sorted by format then id.
func Load(dir string) ([]Message, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no corpus files in %s", dir)
	}
	var out []Message
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var ms []Message
		if err := json.Unmarshal(data, &ms); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		format := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, m := range ms {
			if seen[m.ID] {
				return nil, fmt.Errorf("%s: duplicate id %s", f, m.ID)
			}
			seen[m.ID] = true
			m.Format = format
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Message) int { return strings.Compare(a.Format+"/"+a.ID, b.Format+"/"+b.ID) })
	return out, nil
}

// BodyText is the body as sent to SQS.
func (m Message) BodyText() string {
	var s string
	if json.Unmarshal(m.Body, &s) == nil {
		return s
	}
	return string(m.Body)
}

// Attrs returns the message attributes: a JSON string is a String
// attribute, {"type", "value"} any other type.
func (m Message) Attrs() (map[string]record.Attribute, error) {
	out := make(map[string]record.Attribute, len(m.Attributes))
	for k, raw := range m.Attributes {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[k] = record.Attribute{Type: "String", Value: s}
			continue
		}
		var a record.Attribute
		if err := json.Unmarshal(raw, &a); err != nil || a.Type == "" {
			return nil, fmt.Errorf("%s: attribute %s: want a string or {\"type\", \"value\"}", m.ID, k)
		}
		out[k] = a
	}
	return out, nil
}

// Record builds the message record of m (as `sample -o ndjson` would print
// it before decoding), with m.ID as its message id.
func (m Message) Record() (record.Record, error) {
	attrs, err := m.Attrs()
	if err != nil {
		return record.Record{}, err
	}
	body := m.BodyText()
	return record.Record{
		MessageID: m.ID, Queue: "arn:aws:sqs:eu-west-1:111122223333:corpus-dlq",
		Body: body, BodySHA256: record.SHA256Hex(body), SizeBytes: sqs.MessageSize(body, attrs),
		Attributes: attrs,
	}, nil
}

// Tally counts correct answers per format, per payload encoding and per
// stack, and the dangerous mistakes: a permanent message called transient
// (replayed into a loop) or a transient one called permanent (archived,
// taken out of the DLQ).
type Tally struct {
	Right, Total map[string]int
	// ByEncoding and ByStack count [right, total] per payload encoding
	// and per stack.
	ByEncoding, ByStack map[string]*[2]int
	Wrong               []string
	Dangerous           []string
	// DangerousBy counts the dangerous mistakes per format.
	DangerousBy map[string]int
}

// NewTally returns an empty tally.
func NewTally() *Tally {
	return &Tally{Right: map[string]int{}, Total: map[string]int{}, ByEncoding: map[string]*[2]int{}, ByStack: map[string]*[2]int{}, DangerousBy: map[string]int{}}
}

// Add records one answer.
func (t *Tally) Add(m Message, got, rule string) { t.AddEncoded(m, "", got, rule) }

// AddEncoded records one answer for a message whose body was detected as
// encoding (its payload_encoding).
func (t *Tally) AddEncoded(m Message, encoding, got, rule string) {
	count := func(by map[string]*[2]int, k string, right bool) {
		if k == "" {
			return
		}
		c := by[k]
		if c == nil {
			c = &[2]int{}
			by[k] = c
		}
		if right {
			c[0]++
		}
		c[1]++
	}
	right := got == m.Expect
	count(t.ByEncoding, encoding, right)
	count(t.ByStack, m.Stack, right)
	t.Total[m.Format]++
	if right {
		t.Right[m.Format]++
		return
	}
	t.Wrong = append(t.Wrong, fmt.Sprintf("%s (%s): got %s by %s, want %s%s", m.ID, m.Stack, got, rule, m.Expect, whyNote(m.Why)))
	if (m.Expect == "permanent" && got == "transient") || (m.Expect == "transient" && got == "permanent") {
		t.Dangerous = append(t.Dangerous, fmt.Sprintf("%s (%s): %s called %s", m.ID, m.Stack, m.Expect, got))
		t.DangerousBy[m.Format]++
	}
}

func whyNote(w string) string {
	if w == "" {
		return ""
	}
	return " — " + w
}

// Report renders per-format accuracy and dangerous mistakes.
func (t *Tally) Report() string {
	var b strings.Builder
	formats := make([]string, 0, len(t.Total))
	for f := range t.Total {
		formats = append(formats, f)
	}
	slices.Sort(formats)
	right, total := 0, 0
	for _, f := range formats {
		fmt.Fprintf(&b, "  %-24s %3d/%-3d %5.1f%%  dangerous %d\n", f, t.Right[f], t.Total[f], 100*float64(t.Right[f])/float64(t.Total[f]), t.DangerousBy[f])
		right += t.Right[f]
		total += t.Total[f]
	}
	fmt.Fprintf(&b, "  %-24s %3d/%-3d %5.1f%%  dangerous %d\n", "all", right, total, 100*float64(right)/float64(max(total, 1)), len(t.Dangerous))
	return b.String()
}

// ReportBy renders accuracy per payload encoding ("encoding") or per
// stack ("stack"), and the dangerous mistakes.
func (t *Tally) ReportBy(what string) string {
	by := t.ByStack
	if what == "encoding" {
		by = t.ByEncoding
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		c := by[k]
		fmt.Fprintf(&b, "  %-24s %3d/%-3d %5.1f%%\n", k, c[0], c[1], 100*float64(c[0])/float64(c[1]))
	}
	fmt.Fprintf(&b, "  dangerous (permanent <-> transient): %d\n", len(t.Dangerous))
	return b.String()
}
