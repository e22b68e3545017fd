package transform

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"unicode/utf8"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// A Kafka record carries an ordered header list whose keys may repeat;
// its attributes are the last value of each key (record.Record). The
// expression sees both, and the record's key:
//
//	.attributes              the last value of each header (as on every broker)
//	.system.kafka.headers    every header in order, repeats kept: [{"key", "value"|"base64"}]
//	.system.kafka.key        the record key (null for a null key), or
//	.system.kafka.key_base64 a key that is not UTF-8
//
// and it may change either .attributes or .system.kafka.headers, not both:
//
//   - neither: the copy's headers are the original's, in order, repeats
//     and byte values kept;
//   - .attributes: the change is applied to the ordered list — a header
//     whose attribute is removed goes (every repeat of it), one whose value
//     changed gets the new value in its last occurrence (earlier repeats
//     kept, in place), a new attribute is appended (new names in name
//     order);
//   - .system.kafka.headers: the list returned is the copy's list.
//
// dlqctl's markers are its own: the list's dlqctl-transform header is
// replaced by this run's provenance marker (appended last), and the
// original's dlqctl-redrive marker is kept whatever the expression did (a
// redrive counts replays with it). The dead-letter headers are dropped
// from the copy by the broker, as in a plain redrive.

// kafkaView is the .system.kafka the expression sees.
func kafkaView(k *record.KafkaSystem) map[string]any {
	v := map[string]any{
		"topic": k.Topic, "partition": int(k.Partition), "offset": int(k.Offset),
		"key": nil, "key_base64": nil, "headers": headersView(k.Headers),
	}
	if !k.Timestamp.IsZero() {
		v["timestamp"] = k.Timestamp.UTC().Format(record.TimeFormat)
	}
	switch {
	case k.KeyBase64 != "":
		v["key_base64"] = k.KeyBase64
	case k.Key != "":
		v["key"] = k.Key
	}
	return v
}

func headersView(hs []record.Header) []any {
	out := make([]any, len(hs))
	for i, h := range hs {
		m := map[string]any{"key": h.Key}
		if h.Base64 != "" {
			m["base64"] = h.Base64
		} else {
			m["value"] = h.Value
		}
		out[i] = m
	}
	return out
}

// kafkaCopy is what the expression made of a Kafka record's headers and
// key.
type kafkaCopy struct {
	sys *record.KafkaSystem
	// attrs are the copy's attributes: the last value of each header.
	attrs map[string]record.Attribute
	// changed: the headers (markers aside) or the key differ.
	changed bool
}

// applyKafka builds the copy's Kafka part from the expression's output obj
// (view is the .system.kafka it was given, attrs the .attributes it
// returned) and the provenance marker mk.
func applyKafka(obj map[string]any, view map[string]any, rec *record.Record, attrs map[string]record.Attribute, mk string) (kafkaCopy, string, error) {
	k := rec.System.Kafka
	var out map[string]any
	if sys, ok := obj["system"]; ok && sys != nil {
		sm, ok := sys.(map[string]any)
		if !ok {
			return kafkaCopy{}, ReasonHeaders, fmt.Errorf(".system must be an object (got %s)", jqType(sys))
		}
		if kv, ok := sm["kafka"]; ok && kv != nil {
			if out, ok = kv.(map[string]any); !ok {
				return kafkaCopy{}, ReasonHeaders, fmt.Errorf(".system.kafka must be an object (got %s)", jqType(kv))
			}
		}
	}
	cp := *k
	cp.Native, cp.Rewritten = k.Native, true
	keyChanged := false
	if out != nil {
		key, b64, changed, err := keyOf(out, view)
		if err != nil {
			return kafkaCopy{}, ReasonKey, err
		}
		if changed {
			cp.Key, cp.KeyBase64, keyChanged = key, b64, true
		}
	}
	var hs []record.Header
	var hsOut any
	headersChanged := false
	if out != nil {
		if v, ok := out["headers"]; ok && !reflect.DeepEqual(v, view["headers"]) {
			hsOut, headersChanged = v, true
		}
	}
	attrsChanged := !sameAttributes(attrs, rec.Attributes)
	switch {
	case headersChanged && attrsChanged:
		return kafkaCopy{}, ReasonBothHeaders, errors.New("the expression changed both .attributes and .system.kafka.headers; change one of them")
	case headersChanged:
		var err error
		if hs, err = parseHeaders(hsOut); err != nil {
			return kafkaCopy{}, ReasonHeaders, err
		}
	case attrsChanged:
		var err error
		if hs, err = applyAttributes(k.Headers, rec.Attributes, attrs); err != nil {
			return kafkaCopy{}, ReasonAttribute, err
		}
	default:
		hs = withoutMarkers(k.Headers)
	}
	changed := keyChanged || !sameHeaders(hs, withoutMarkers(k.Headers))
	// dlqctl's markers: the original's redrive marker (replays are counted
	// from it), then this run's provenance.
	for i := len(k.Headers) - 1; i >= 0; i-- {
		if k.Headers[i].Key == record.MarkerAttribute {
			hs = append(hs, k.Headers[i])
			break
		}
	}
	hs = append(hs, record.Header{Key: Attribute, Value: mk})
	cp.Headers = hs
	return kafkaCopy{sys: &cp, attrs: headerAttributes(hs), changed: changed}, "", nil
}

// keyOf reads the key the expression returned: key (UTF-8, null for a
// null key) or key_base64; changed reports whether it differs from the
// original's.
func keyOf(out, view map[string]any) (key, b64 string, changed bool, err error) {
	kv, kIn := out["key"]
	bv, bIn := out["key_base64"]
	kChanged := kIn && !reflect.DeepEqual(kv, view["key"])
	bChanged := bIn && !reflect.DeepEqual(bv, view["key_base64"])
	switch {
	case kChanged && bChanged && kv != nil && bv != nil:
		return "", "", false, errors.New("the expression changed both .system.kafka.key and .system.kafka.key_base64; set one of them")
	case bChanged && bv != nil:
		s, ok := bv.(string)
		if !ok {
			return "", "", false, fmt.Errorf(".system.kafka.key_base64 must be a string or null (got %s)", jqType(bv))
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", "", false, fmt.Errorf(".system.kafka.key_base64 is not base64: %v", err)
		}
		if utf8.Valid(b) {
			return string(b), "", true, nil
		}
		return "", s, true, nil
	case kChanged:
		switch s := kv.(type) {
		case nil:
			return "", "", true, nil
		case string:
			return s, "", true, nil
		default:
			return "", "", false, fmt.Errorf(".system.kafka.key must be a string or null (got %s; use tostring)", jqType(kv))
		}
	case bChanged:
		// key_base64 set to null on a binary key: a null key.
		return "", "", true, nil
	}
	return "", "", false, nil
}

// parseHeaders reads the .system.kafka.headers the expression returned.
func parseHeaders(v any) ([]record.Header, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf(".system.kafka.headers must be an array of {key, value} (got %s)", jqType(v))
	}
	out := make([]record.Header, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf(".system.kafka.headers[%d] must be an object {\"key\": …, \"value\": …} (got %s)", i, jqType(e))
		}
		key, ok := m["key"].(string)
		if !ok {
			return nil, fmt.Errorf(".system.kafka.headers[%d].key must be a string (got %s)", i, jqType(m["key"]))
		}
		h := record.Header{Key: key}
		val, hasVal := m["value"]
		b, hasB := m["base64"]
		if hasVal && val == nil {
			hasVal = false
		}
		if hasB && b == nil {
			hasB = false
		}
		switch {
		case hasVal && hasB:
			return nil, fmt.Errorf("header %q: give value or base64, not both", key)
		case hasB:
			s, ok := b.(string)
			if !ok {
				return nil, fmt.Errorf("header %q: base64 must be a string (got %s)", key, jqType(b))
			}
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("header %q: base64: %v", key, err)
			}
			h = headerOf(key, raw)
		case hasVal:
			s, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("header %q: value must be a string (got %s; use tostring)", key, jqType(val))
			}
			h.Value = s
		}
		if key == Attribute || key == record.MarkerAttribute {
			continue // dlqctl's own (added back below)
		}
		out = append(out, h)
	}
	return out, nil
}

// applyAttributes applies the change from the attributes before to after
// to the ordered list hs (see the package comment above), markers left out.
func applyAttributes(hs []record.Header, before, after map[string]record.Attribute) ([]record.Header, error) {
	last := map[string]int{}
	for i, h := range hs {
		last[h.Key] = i
	}
	out := make([]record.Header, 0, len(hs)+len(after))
	for i, h := range hs {
		if h.Key == Attribute || h.Key == record.MarkerAttribute {
			continue
		}
		a, ok := after[h.Key]
		if !ok {
			continue // removed: every repeat of it
		}
		if i == last[h.Key] && a != before[h.Key] {
			nh, err := attrHeader(h.Key, a)
			if err != nil {
				return nil, err
			}
			h = nh
		}
		out = append(out, h)
	}
	var added []string
	for name := range after {
		if _, ok := last[name]; !ok && name != Attribute && name != record.MarkerAttribute {
			added = append(added, name)
		}
	}
	sort.Strings(added)
	for _, name := range added {
		h, err := attrHeader(name, after[name])
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// attrHeader is the header of attribute a named name.
func attrHeader(name string, a record.Attribute) (record.Header, error) {
	if !a.IsBinary() {
		return record.Header{Key: name, Value: a.Value}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(a.Base64)
	if err != nil {
		return record.Header{}, fmt.Errorf("attribute %q: base64: %v", name, err)
	}
	return headerOf(name, raw), nil
}

// headerOf is a header's record form, as a read writes it: the value when
// it is UTF-8, else its base64.
func headerOf(key string, v []byte) record.Header {
	if utf8.Valid(v) {
		return record.Header{Key: key, Value: string(v)}
	}
	return record.Header{Key: key, Base64: base64.StdEncoding.EncodeToString(v)}
}

func withoutMarkers(hs []record.Header) []record.Header {
	out := make([]record.Header, 0, len(hs))
	for _, h := range hs {
		if h.Key != Attribute && h.Key != record.MarkerAttribute {
			out = append(out, h)
		}
	}
	return out
}

func sameHeaders(a, b []record.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// headerAttributes are the attributes of a header list, as a Kafka read
// gives them: the last value of each key, text as String, anything else
// (not UTF-8, control characters) as Binary.
func headerAttributes(hs []record.Header) map[string]record.Attribute {
	out := make(map[string]record.Attribute, len(hs))
	for _, h := range hs {
		switch {
		case h.Base64 != "":
			out[h.Key] = record.Attribute{Type: "Binary", Base64: h.Base64}
		case textValue(h.Value):
			out[h.Key] = record.Attribute{Type: "String", Value: h.Value}
		default:
			out[h.Key] = record.Attribute{Type: "Binary", Base64: base64.StdEncoding.EncodeToString([]byte(h.Value))}
		}
	}
	return out
}

// textValue: UTF-8 without control characters other than tab and line
// breaks (what a Kafka read shows as a String attribute).
func textValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// kafkaSize is a Kafka copy's size as a read counts it: value, key and
// every header's key and value.
func kafkaSize(body string, k *record.KafkaSystem) int {
	n := len(body) + len(k.Key) + base64.StdEncoding.DecodedLen(len(k.KeyBase64))
	for _, h := range k.Headers {
		n += len(h.Key) + len(h.Value) + base64.StdEncoding.DecodedLen(len(h.Base64))
	}
	return n
}
