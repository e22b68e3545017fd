package sqs

import (
	"encoding/json"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// The seed corpora of these targets are in testdata/fuzz/<Target>/ and run
// with every `go test`; `make fuzz` explores further (FUZZTIME per target).

var fuzzRegion = regexp.MustCompile(`^` + regionPattern + `$`)

// FuzzParseRef: any text is either a clear bad-input error or a reference
// with a name; parsing is stable, and a region read from a URL host is a
// region and appears in that host.
func FuzzParseRef(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			if errs.Code(err) != errs.ExitUsage {
				t.Fatalf("ParseRef(%q) error %v is not a bad-input error", s, err)
			}
			return
		}
		if r.Name == "" {
			t.Fatalf("ParseRef(%q) = %+v without a name", s, r)
		}
		if r.Raw != strings.TrimSpace(s) {
			t.Fatalf("ParseRef(%q).Raw = %q", s, r.Raw)
		}
		switch r.Kind {
		case RefName:
			if r.Name != r.Raw || r.Region != "" || r.Account != "" {
				t.Fatalf("name reference %q parsed as %+v", s, r)
			}
		case RefARN:
			if NameFromARN(r.Raw) != r.Name {
				t.Fatalf("ARN %q: ParseRef name %q, NameFromARN %q", s, r.Name, NameFromARN(r.Raw))
			}
		case RefURL:
			u, err := url.Parse(r.URL)
			if r.URL != r.Raw || err != nil || r.Name != path.Base(strings.TrimRight(u.Path, "/")) {
				t.Fatalf("URL %q parsed as %+v: the name is not the last element of the path", s, r)
			}
			if r.Region != "" && (!fuzzRegion.MatchString(r.Region) || !strings.Contains(strings.ToLower(r.URL), r.Region) && r.Region != "us-east-1") {
				t.Fatalf("URL %q: region %q is not the host's", s, r.Region)
			}
		default:
			t.Fatalf("ParseRef(%q): unknown kind %d", s, r.Kind)
		}
		again, err := ParseRef(r.Raw)
		if err != nil || again != r {
			t.Fatalf("ParseRef is not stable on %q: %+v, then %+v (%v)", s, r, again, err)
		}
	})
}

// FuzzRedrivePolicy: a RedrivePolicy attribute either parses or fails; it
// never panics, and what parsed survives a round trip.
func FuzzRedrivePolicy(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var p RedrivePolicy
		if json.Unmarshal(data, &p) != nil {
			return
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal %+v: %v", p, err)
		}
		var back RedrivePolicy
		if err := json.Unmarshal(b, &back); err != nil || back != p {
			t.Fatalf("round trip of %q: %+v -> %s -> %+v (%v)", data, p, b, back, err)
		}
	})
}

// FuzzScrubReceiptHandles: a known handle never survives scrubbing, nor
// does any handle-like token of 100+ base64 characters, wherever it is in
// the text.
func FuzzScrubReceiptHandles(f *testing.F) {
	f.Fuzz(func(t *testing.T, text, known string, at uint16) {
		out := ScrubReceiptHandles(text, known)
		if len(known) >= 8 && !strings.ContainsAny(known, "<>") && strings.Contains(out, known) {
			t.Fatalf("known handle %q survived in %q", known, out)
		}
		// An unknown handle (base64 alphabet, long enough) spliced in.
		var h strings.Builder
		for _, c := range known + text {
			if c < 128 && (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
				h.WriteRune(c)
			}
		}
		handle := h.String()
		for len(handle) < 100 {
			handle += "AQEBx9Zk/+="
		}
		i := int(at) % (len(text) + 1)
		spliced := text[:i] + handle + text[i:]
		if out := ScrubReceiptHandles(spliced); strings.Contains(out, handle) {
			t.Fatalf("handle-like token survived in %q", out)
		}
	})
}

// FuzzRecordJSON: a message record read from JSON (offline input, archive
// parts) can always be written back, and writing is stable.
func FuzzRecordJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Record
		if json.Unmarshal(data, &r) != nil {
			return
		}
		b1, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("a record read from %q cannot be written: %v", data, err)
		}
		var back Record
		if err := json.Unmarshal(b1, &back); err != nil {
			t.Fatalf("a written record %s cannot be read: %v", b1, err)
		}
		b2, err := json.Marshal(back)
		if err != nil || string(b1) != string(b2) {
			t.Fatalf("record JSON is not stable:\n%s\n%s (%v)", b1, b2, err)
		}
		if _, err := SQSAttributes(back.Attributes); err == nil && !reflect.DeepEqual(back.Attributes, r.Attributes) && len(r.Attributes) > 0 {
			t.Fatalf("attributes changed in a round trip: %v -> %v", r.Attributes, back.Attributes)
		}
	})
}
