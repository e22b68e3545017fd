package classify

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// SourceExpectation says what bodies one source's consumer reads: a
// rules file's `sources:` entry.
//
//	sources:
//	  - queue: orders            # name, URL, ARN or glob (orders-*)
//	    expects: json            # or a list: [json, base64/json]
type SourceExpectation struct {
	// Queue is a queue name (or glob), matched against the message's
	// source queue (system.source_queue_arn) and the queue it was read
	// from; URLs and ARNs are reduced to the name.
	Queue string
	// Expects are payload encodings (docs/triage.md): a body matches
	// when its payload_encoding is one of them; "text" also accepts csv,
	// "binary" also accepts avro and protobuf, "any" accepts everything.
	Expects []string
	// Line is the entry's line in the rules file.
	Line int
}

// ExpectEncodings are the encodings a `sources:` entry may expect (layers
// such as base64/json are accepted too).
var ExpectEncodings = []string{inspect.EncodingJSON, inspect.EncodingNDJSON, inspect.EncodingXML, inspect.EncodingHTML, inspect.EncodingCSV, inspect.EncodingText,
	inspect.EncodingBinary, inspect.EncodingAvro, inspect.EncodingProtobuf, "any"}

// validExpect reports whether e is a known encoding, optionally under
// base64/gzip/zlib layers.
func validExpect(e string) bool {
	parts := strings.Split(e, "/")
	for _, l := range parts[:len(parts)-1] {
		if l != inspect.EncodingBase64 && l != inspect.EncodingGzip && l != inspect.EncodingZlib {
			return false
		}
	}
	last := parts[len(parts)-1]
	return slices.Contains(ExpectEncodings, last) && (last != "any" || len(parts) == 1)
}

// accepts reports whether a body of encoding enc is what s expects.
func (s *SourceExpectation) accepts(enc string) bool {
	for _, e := range s.Expects {
		switch {
		case e == "any" || e == enc:
			return true
		case strings.HasSuffix(e, inspect.EncodingText) && strings.TrimSuffix(e, inspect.EncodingText)+inspect.EncodingCSV == enc:
			return true
		case strings.HasSuffix(e, inspect.EncodingBinary):
			pre := strings.TrimSuffix(e, inspect.EncodingBinary)
			if enc == pre+inspect.EncodingAvro || enc == pre+inspect.EncodingProtobuf {
				return true
			}
		}
	}
	return false
}

// queueName reduces a queue reference (name, URL or ARN) to its name.
func queueName(ref string) string {
	switch {
	case strings.HasPrefix(ref, "arn:"):
		if i := strings.LastIndexByte(ref, ':'); i >= 0 {
			return ref[i+1:]
		}
	case strings.Contains(ref, "://"):
		return ref[strings.LastIndexByte(strings.TrimRight(ref, "/"), '/')+1:]
	}
	return ref
}

// matches reports whether the entry is about rec's source queue (or the
// queue rec was read from).
func (s *SourceExpectation) matches(rec *record.Record) bool {
	pat := queueName(s.Queue)
	for _, ref := range [...]string{rec.System.SourceQueueARN, rec.Queue} {
		if ref == "" {
			continue
		}
		if ok, _ := path.Match(pat, queueName(ref)); ok {
			return true
		}
	}
	return false
}

func sourceFor(srcs []SourceExpectation, rec *record.Record) *SourceExpectation {
	for i := range srcs {
		if srcs[i].matches(rec) {
			return &srcs[i]
		}
	}
	return nil
}

// bodyMatcher is rule body-not-json: the body is evidence only when it is
// broken JSON, or when a sources: entry says its consumer expects
// something else. Any other body that is not JSON (XML, CSV, text,
// base64, binary) is what some consumer reads: no evidence at all.
func bodyMatcher(srcs []SourceExpectation) funcMatcher {
	return func(x *subject) (bool, string, error) {
		enc := x.rec.PayloadEncoding
		if enc == "" {
			enc = inspect.DetectPayload(x.rec, x.parsed).Encoding
		}
		if v := x.verdict(); v.Family != "" {
			if !x.explaining {
				return false, "the failure context decides, not the body", nil
			}
			return false, "the failure context names " + v.familyPhrase() + "; that decides, not the body", nil
		}
		if src := sourceFor(srcs, x.rec); src != nil {
			if !src.accepts(enc) {
				return true, fmt.Sprintf("the body is %s, but the rules file (line %d) says the consumer of %s expects %s", encodingPhrase(x.rec, x.parsed, enc, x.explaining), src.Line, src.Queue, strings.Join(src.Expects, " or ")), nil
			}
			if inspect.PayloadUnparseable(x.rec) {
				return true, "the original payload the body wraps looks like JSON but does not parse", nil
			}
			return false, fmt.Sprintf("the body is %s, which the consumer of %s expects (rules file line %d)", enc, src.Queue, src.Line), nil
		}
		if inspect.Innermost(enc) == inspect.EncodingMalformedJSON {
			if !x.explaining {
				return true, "the body starts like JSON and does not parse", nil
			}
			return true, "the body starts like JSON and does not parse: " + inspect.DescribePayload(x.rec).Description, nil
		}
		if inspect.PayloadUnparseable(x.rec) {
			return true, "the original payload the body wraps looks like JSON but does not parse", nil
		}
		if enc == inspect.EncodingJSON {
			return false, "the body is JSON", nil
		}
		if inspect.Innermost(enc) == inspect.EncodingJSON {
			return false, "the body is " + encodingPhrase(x.rec, x.parsed, enc, x.explaining), nil
		}
		return false, fmt.Sprintf("the body is %s, not broken JSON; nothing says its consumer expects JSON (a rules file's sources: can say so)", encodingPhrase(x.rec, x.parsed, enc, x.explaining)), nil
	}
}

// encodingPhrase describes the body for explanations.
func encodingPhrase(rec *record.Record, parsed any, enc string, explaining bool) string {
	if enc == inspect.EncodingJSON {
		return "JSON"
	}
	if !explaining {
		return enc
	}
	return inspect.DetectPayload(rec, parsed).Description + " (" + enc + ")"
}
