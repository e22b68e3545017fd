package transform

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Change is one difference between an original and its repaired copy: a
// JSON path of the body (".json.amount"), ".body" for a body that is not
// JSON, or ".attributes.NAME". Before and After are JSON values; one is
// absent when the path was added or removed.
type Change struct {
	Path   string          `json:"path"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// Diff lists what differs between the original (rec, parsed body) and the
// copy, by path, in order. The provenance and redrive markers are left
// out: every copy carries them.
func Diff(rec *record.Record, parsed any, copy *record.Record) []Change {
	var out []Change
	if copy.Body != rec.Body {
		var after any
		afterJSON := json.Unmarshal([]byte(copy.Body), &after) == nil && (strings.HasPrefix(strings.TrimSpace(copy.Body), "{") || strings.HasPrefix(strings.TrimSpace(copy.Body), "["))
		if parsed != nil && afterJSON {
			var before any
			_ = json.Unmarshal([]byte(rec.Body), &before)
			out = diffValues(".json", before, after, out)
		} else {
			out = append(out, Change{Path: ".body", Before: rawString(rec.Body), After: rawString(copy.Body)})
		}
	}
	names := map[string]bool{}
	for k := range rec.Attributes {
		names[k] = true
	}
	for k := range copy.Attributes {
		names[k] = true
	}
	for _, k := range sortedNames(names) {
		if k == Attribute || k == record.MarkerAttribute {
			continue
		}
		a, inA := rec.Attributes[k]
		b, inB := copy.Attributes[k]
		if inA && inB && a == b {
			continue
		}
		c := Change{Path: ".attributes." + pathKey(k)}
		if inA {
			c.Before = rawAttr(a)
		}
		if inB {
			c.After = rawAttr(b)
		}
		out = append(out, c)
	}
	return append(out, diffKafka(rec, copy)...)
}

// diffKafka lists a Kafka copy's changed key, and its header list when
// the attributes' changes do not tell it (a repeat added or removed, an
// earlier repeat changed, the order changed).
func diffKafka(rec, copy *record.Record) []Change {
	a, b := rec.System.Kafka, copy.System.Kafka
	if a == nil || b == nil || a == b {
		return nil
	}
	var out []Change
	if a.Key != b.Key || a.KeyBase64 != b.KeyBase64 {
		c := Change{Path: ".system.kafka.key", Before: rawKey(a), After: rawKey(b)}
		if a.KeyBase64 != "" || b.KeyBase64 != "" {
			c.Path = ".system.kafka.key_base64"
		}
		out = append(out, c)
	}
	before, after := withoutMarkers(a.Headers), withoutMarkers(b.Headers)
	if sameHeaders(before, after) {
		return out
	}
	if told, err := applyAttributes(a.Headers, rec.Attributes, copy.Attributes); err == nil && sameHeaders(told, after) {
		return out
	}
	bb, _ := json.Marshal(before)
	ab, _ := json.Marshal(after)
	return append(out, Change{Path: ".system.kafka.headers", Before: bb, After: ab})
}

// rawKey is a Kafka key as JSON: its text, its base64, or null.
func rawKey(k *record.KafkaSystem) json.RawMessage {
	switch {
	case k.KeyBase64 != "":
		return rawString(k.KeyBase64)
	case k.Key != "":
		return rawString(k.Key)
	}
	return json.RawMessage("null")
}

func rawString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func rawAttr(a record.Attribute) json.RawMessage {
	b, _ := json.Marshal(a)
	return b
}

func rawValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return rawString(fmt.Sprint(v))
	}
	return b
}

// diffValues appends the differences of two decoded JSON values at path.
func diffValues(path string, a, b any, out []Change) []Change {
	am, aObj := a.(map[string]any)
	bm, bObj := b.(map[string]any)
	if aObj && bObj {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			av, inA := am[k]
			bv, inB := bm[k]
			p := path + "." + pathKey(k)
			switch {
			case inA && inB:
				out = diffValues(p, av, bv, out)
			case inA:
				out = append(out, Change{Path: p, Before: rawValue(av)})
			default:
				out = append(out, Change{Path: p, After: rawValue(bv)})
			}
		}
		return out
	}
	as, aArr := a.([]any)
	bs, bArr := b.([]any)
	if aArr && bArr && len(as) == len(bs) {
		for i := range as {
			out = diffValues(path+"["+strconv.Itoa(i)+"]", as[i], bs[i], out)
		}
		return out
	}
	ra, rb := rawValue(a), rawValue(b)
	if string(ra) == string(rb) {
		return out
	}
	return append(out, Change{Path: path, Before: ra, After: rb})
}

// pathKey writes a key as jq would in a path: bare when it is an
// identifier, else quoted.
func pathKey(k string) string {
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}
