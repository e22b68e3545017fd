// Package transform repairs messages on their way out of a dead-letter
// queue: a jq expression (the language of --filter, over the same message
// record) returns the record to send — its body (or .json, re-encoded) and
// its attributes or headers. Every path that sends a repaired copy (redrive
// on each broker, restore from an archive, the dry run's diff) calls the
// same Apply, so what the dry run shows is what the run sends.
//
// The package knows no broker: the limits a copy must respect (size,
// attribute count) are given as Limits, and a failure never changes
// anything — the caller leaves the message where it is and counts it
// (Tally).
package transform

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Attribute is the provenance marker every repaired copy carries: an
// attribute (SQS) or header (RabbitMQ) whose value is the JSON of Marker.
const Attribute = "dlqctl-transform"

// Marker is the provenance of a repaired copy: the run that made it, the
// SHA-256 of the expression, and the DLQ message id of the original (the
// first one, for a message repaired before).
type Marker struct {
	RunID      string `json:"run"`
	ExprSHA256 string `json:"expr_sha256"`
	OriginalID string `json:"orig"`
}

// Failure reasons (Error.Reason): the categories failures are counted by.
const (
	ReasonExpression = "expression error"                        // the expression raised an error
	ReasonNoRecord   = "no record returned"                      // it yielded nothing, or not an object
	ReasonBoth       = "changed both .body and .json"            // ambiguous result
	ReasonNotJSON    = "not JSON where JSON was"                 // a JSON body made into something else
	ReasonAttribute  = "invalid attribute"                       // an attribute without a string value or type
	ReasonTooLarge   = "over the destination's size limit"       // body + attributes too large
	ReasonTooMany    = "too many attributes for the destination" // over the attribute limit
	// Kafka records (kafka.go): their ordered headers and key.
	ReasonHeaders     = "invalid headers"                                    // .system.kafka.headers is not a list of {key, value|base64}
	ReasonKey         = "invalid key"                                        // .system.kafka.key(_base64) is not a string, null or base64
	ReasonBothHeaders = "changed both .attributes and .system.kafka.headers" // ambiguous result
)

// Error is one message the transform failed on; the message is not sent.
type Error struct {
	MessageID string
	Reason    string // one of the Reason* categories
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("transform failed on message %s: %s: %v", e.MessageID, e.Reason, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Limits are what the destination accepts (0: no limit). MaxAttributes
// counts the provenance marker; dlqctl's redrive marker is the broker's to
// add or leave out.
type Limits struct {
	MaxMessageBytes int
	MaxAttributes   int
}

// Transform is a compiled --transform expression. It is safe for
// concurrent use.
type Transform struct {
	expr   *inspect.Expr
	src    string
	sha    string
	limits Limits
	tally  *Tally
}

// Compile compiles the expression src (its syntax is --filter's). A syntax
// error is a bad-input error naming the expression.
func Compile(src string, limits Limits) (*Transform, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errs.BadInputf("--transform is empty; give a jq expression that returns the message record, e.g. '.json.amount |= tonumber'")
	}
	e, err := inspect.CompileExpr(src)
	if err != nil {
		return nil, errs.BadInputf("--transform: %v", err)
	}
	sum := sha256.Sum256([]byte(src))
	return &Transform{expr: e, src: src, sha: hex.EncodeToString(sum[:]), limits: limits, tally: newTally(src)}, nil
}

// Source is the expression's text.
func (t *Transform) Source() string { return t.src }

// SHA256 is the hex SHA-256 of the expression's text (the provenance
// marker's expr_sha256).
func (t *Transform) SHA256() string { return t.sha }

// SetLimits sets the destination's limits (before the first Apply).
func (t *Transform) SetLimits(l Limits) { t.limits = l }

// Tally is the count of what Apply did.
func (t *Transform) Tally() *Tally { return t.tally }

// Result is one message transformed.
type Result struct {
	// Record is the record to send: a copy of the original with the new
	// body and attributes (and the provenance marker). The original is not
	// changed.
	Record *record.Record
	// Changed: the body or an attribute other than the marker differs.
	Changed bool
}

// Apply runs the expression on rec (parsed is its parsed body, nil when
// not JSON) and returns the record to send, marked with the provenance of
// runID. A failure is an *Error (the message must stay where it is); once
// the tally refused the run (the expression failed on every message
// read), the error is that refusal (a bad-input error).
func (t *Transform) Apply(rec *record.Record, parsed any, runID string) (Result, error) {
	res, err := t.apply(rec, parsed, runID)
	if err != nil {
		var te *Error
		if errors.As(err, &te) {
			return Result{}, t.tally.failed(te)
		}
		return Result{}, err
	}
	if err := t.tally.clean(res.Changed); err != nil {
		return Result{}, err
	}
	return res, nil
}

// Preview is Apply without counting: the dry run's diff of a message
// already counted.
func (t *Transform) Preview(rec *record.Record, parsed any, runID string) (Result, error) {
	return t.apply(rec, parsed, runID)
}

func (t *Transform) apply(rec *record.Record, parsed any, runID string) (Result, error) {
	fail := func(reason string, err error) (Result, error) {
		return Result{}, &Error{MessageID: rec.MessageID, Reason: reason, Err: err}
	}
	in := inspect.Input(rec, parsed)
	var kview map[string]any
	if k := rec.System.Kafka; k != nil {
		// A Kafka record's key and ordered headers (kafka.go).
		kview = kafkaView(k)
		if sys, ok := in["system"].(map[string]any); ok {
			sys["kafka"] = kview
		}
	}
	out, err := t.expr.Eval(in)
	if err != nil {
		return fail(ReasonExpression, unwrapExpr(err))
	}
	obj, ok := out.(map[string]any)
	if !ok {
		if out == nil {
			return fail(ReasonNoRecord, errors.New("the expression yielded null or nothing; it must return the message record (e.g. '.json.amount |= tonumber', not '.json.amount | tonumber')"))
		}
		return fail(ReasonNoRecord, fmt.Errorf("the expression yielded %s, not the message record; update fields with |= or = (e.g. '.json.amount |= tonumber') so the whole record is returned", jqType(out)))
	}
	body := rec.Body
	bodyChanged := false
	newJSON, hasJSON := obj["json"]
	jsonChanged := hasJSON && !sameJSON(parsed, newJSON)
	if nb, ok := obj["body"]; ok {
		s, isStr := nb.(string)
		if !isStr {
			return fail(ReasonNoRecord, fmt.Errorf(".body must be a string (got %s); change .json to change a JSON body", jqType(nb)))
		}
		bodyChanged = s != rec.Body
		body = s
	}
	switch {
	case jsonChanged && bodyChanged:
		return fail(ReasonBoth, errors.New("the expression changed both .body and .json; change one of them"))
	case jsonChanged:
		if newJSON == nil {
			return fail(ReasonNotJSON, errors.New(".json became null: the body would no longer be JSON"))
		}
		b, err := encodeJSON(newJSON)
		if err != nil {
			return fail(ReasonNotJSON, err)
		}
		body = b
	case bodyChanged && parsed != nil && !json.Valid([]byte(body)):
		return fail(ReasonNotJSON, errors.New("the original body was JSON and the new .body is not; change .json instead"))
	}
	attrs, err := attributesOf(obj, rec)
	if err != nil {
		return fail(ReasonAttribute, err)
	}
	orig := rec.MessageID
	if prev, ok := rec.Attributes[Attribute]; ok {
		var m Marker
		if json.Unmarshal([]byte(prev.Value), &m) == nil && m.OriginalID != "" {
			orig = m.OriginalID
		}
	} else if rec.Redrive != nil && rec.Redrive.OriginalID != "" {
		orig = rec.Redrive.OriginalID
	}
	mk, _ := json.Marshal(Marker{RunID: runID, ExprSHA256: t.sha, OriginalID: orig})
	var kc kafkaCopy
	changed := body != rec.Body
	if kview != nil {
		var reason string
		if kc, reason, err = applyKafka(obj, kview, rec, attrs, string(mk)); err != nil {
			return fail(reason, err)
		}
		attrs = kc.attrs
		changed = changed || kc.changed
	} else {
		changed = changed || !sameAttributes(attrs, rec.Attributes)
		attrs[Attribute] = record.Attribute{Type: "String", Value: string(mk)}
	}

	if n := countAttrs(attrs); t.limits.MaxAttributes > 0 && n > t.limits.MaxAttributes {
		return fail(ReasonTooMany, fmt.Errorf("the copy would carry %d attributes with the %s marker; the destination takes %d", n, Attribute, t.limits.MaxAttributes))
	}
	if size := record.MessageSize(body, withoutRedriveMarker(attrs)); t.limits.MaxMessageBytes > 0 && size > t.limits.MaxMessageBytes {
		return fail(ReasonTooLarge, fmt.Errorf("the copy would be %d bytes; the destination takes %d", size, t.limits.MaxMessageBytes))
	}

	cp := *rec
	cp.Body = body
	cp.Attributes = attrs
	if body != rec.Body {
		cp.BodySHA256 = record.SHA256Hex(body)
	}
	cp.SizeBytes = record.MessageSize(body, attrs)
	if kc.sys != nil {
		cp.System.Kafka = kc.sys
		cp.OrderingKey = kc.sys.Key
		if cp.OrderingKey == "" {
			cp.OrderingKey = kc.sys.KeyBase64
		}
		cp.SizeBytes = kafkaSize(body, kc.sys)
	}
	if a := rec.System.AMQP; a != nil {
		// The copy is made from the record, not from the delivery read.
		na := *a
		na.Native = nil
		if body != rec.Body {
			na.BodyEncoding = ""
		}
		cp.System.AMQP = &na
	}
	return Result{Record: &cp, Changed: changed}, nil
}

// unwrapExpr drops the "expression …:" prefix the evaluator adds (the
// report names the expression once).
func unwrapExpr(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

func countAttrs(a map[string]record.Attribute) int {
	n := len(a)
	if _, ok := a[record.MarkerAttribute]; ok {
		n--
	}
	return n
}

func withoutRedriveMarker(a map[string]record.Attribute) map[string]record.Attribute {
	if _, ok := a[record.MarkerAttribute]; !ok {
		return a
	}
	out := make(map[string]record.Attribute, len(a))
	for k, v := range a {
		if k != record.MarkerAttribute {
			out[k] = v
		}
	}
	return out
}

// attributesOf reads the output's .attributes: absent keeps the
// original's; null removes them all.
func attributesOf(obj map[string]any, rec *record.Record) (map[string]record.Attribute, error) {
	raw, ok := obj["attributes"]
	if !ok {
		out := make(map[string]record.Attribute, len(rec.Attributes)+1)
		for k, v := range rec.Attributes {
			out[k] = v
		}
		return out, nil
	}
	out := map[string]record.Attribute{}
	if raw == nil {
		return out, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(".attributes must be an object of {type, value} (got %s)", jqType(raw))
	}
	for name, v := range m {
		am, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("attribute %q must be an object {\"type\": …, \"value\": …} (got %s)", name, jqType(v))
		}
		a := record.Attribute{}
		switch t := am["type"].(type) {
		case string:
			a.Type = t
		case nil:
			a.Type = "String"
		default:
			return nil, fmt.Errorf("attribute %q: type must be a string (got %s)", name, jqType(t))
		}
		if b, ok := am["base64"]; ok && b != nil {
			s, ok := b.(string)
			if !ok {
				return nil, fmt.Errorf("attribute %q: base64 must be a string (got %s)", name, jqType(b))
			}
			a.Base64 = s
			if !a.IsBinary() {
				a.Type = "Binary"
			}
		} else {
			switch val := am["value"].(type) {
			case string:
				a.Value = val
			default:
				return nil, fmt.Errorf("attribute %q: value must be a string (got %s; use tostring)", name, jqType(val))
			}
			if a.IsBinary() {
				return nil, fmt.Errorf("attribute %q: a %s attribute takes base64, not value", name, a.Type)
			}
		}
		out[name] = a
	}
	return out, nil
}

func sameAttributes(a, b map[string]record.Attribute) bool {
	n := 0
	for k, v := range a {
		if k == Attribute || k == record.MarkerAttribute {
			continue
		}
		n++
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	m := 0
	for k := range b {
		if k != Attribute && k != record.MarkerAttribute {
			m++
		}
	}
	return n == m
}

// sameJSON reports whether two parsed JSON values are equal.
func sameJSON(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ea, err1 := encodeJSON(a)
	eb, err2 := encodeJSON(b)
	return err1 == nil && err2 == nil && ea == eb
}

var toJSON = func() *gojq.Code {
	q, err := gojq.Parse("tojson")
	if err != nil {
		panic(err)
	}
	c, err := gojq.Compile(q)
	if err != nil {
		panic(err)
	}
	return c
}()

// encodeJSON encodes v as jq does (compact, keys sorted, numbers as jq
// prints them).
func encodeJSON(v any) (string, error) {
	it := toJSON.Run(v)
	out, ok := it.Next()
	if !ok {
		return "", errors.New("the new .json could not be encoded")
	}
	if err, isErr := out.(error); isErr {
		return "", fmt.Errorf("the new .json could not be encoded: %w", err)
	}
	s, _ := out.(string)
	return s, nil
}

func jqType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
