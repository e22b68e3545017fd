package inspect

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Mask replaces redacted values.
const Mask = "***"

// DefaultSecretKeys are masked at any depth, case-insensitively, ignoring
// '-' and '_' (so "api_key", "apiKey" and "API-KEY" all match).
var DefaultSecretKeys = []string{
	"password", "passwd", "pwd", "secret", "clientsecret", "token", "accesstoken", "refreshtoken", "idtoken",
	"authorization", "auth", "apikey", "xapikey", "privatekey", "cardnumber", "pan", "cvv", "cvc", "cvv2",
	"ssn", "socialsecuritynumber", "iban", "accountnumber", "pin", "sessionid", "cookie", "setcookie",
	"awssecretaccesskey", "secretaccesskey", "credentials",
}

// Redactor masks secret values in records for display.
type Redactor struct {
	keys  map[string]bool
	paths [][]string
	re    *regexp.Regexp
	// needles are the key names as normKey makes them: a text that holds
	// none of them once normalized the same way (lower case, without '_',
	// '-' and ' ') has no secret key to mask, and is returned as it is
	// without being parsed or matched (the slow part).
	needles []string
}

// NewRedactor returns a redactor for the default secret keys plus extra,
// where each extra entry is a key name (matched at any depth) or a dotted
// path from the body root ("payload.customer.email") or an attribute
// ("attributes.NAME").
func NewRedactor(extra []string) *Redactor {
	r := &Redactor{keys: map[string]bool{}}
	names := []string{}
	for _, k := range DefaultSecretKeys {
		r.keys[k] = true
		names = append(names, k)
		r.needles = append(r.needles, k)
	}
	for _, e := range extra {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.Contains(e, ".") {
			r.paths = append(r.paths, strings.Split(strings.TrimPrefix(e, "."), "."))
			continue
		}
		r.keys[normKey(e)] = true
		names = append(names, regexp.QuoteMeta(e))
		r.needles = append(r.needles, normKey(e))
	}
	// Fallback for bodies that are not JSON: key=value, key: value, "key":"value".
	r.re = regexp.MustCompile(`(?i)("?(?:` + strings.Join(names, "|") + `)"?\s*[:=]\s*"?)([^"&\s,;}]+)`)
	return r
}

// normKey lower-cases k and drops '_', '-' and ' ' (allocation-free when
// k is already in that form).
func normKey(k string) string {
	clean := true
	for i := 0; i < len(k); i++ {
		if c := k[i]; c >= 'A' && c <= 'Z' || c == '_' || c == '-' || c == ' ' || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return k
	}
	k = strings.ToLower(k)
	var b strings.Builder
	b.Grow(len(k))
	for _, c := range k {
		if c != '_' && c != '-' && c != ' ' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// mayHoldSecret reports whether s can contain a secret key: a key name
// occurs in it (compared as normKey compares keys), or dotted paths are
// masked (they name keys of any spelling).
func (r *Redactor) mayHoldSecret(s string) bool {
	if len(r.paths) > 0 || strings.Contains(s, `\u`) {
		return true // paths name keys of any spelling; a JSON escape can spell a key
	}
	norm := normKey(s)
	for _, n := range r.needles {
		if strings.Contains(norm, n) {
			return true
		}
	}
	return false
}

// maskText masks "key=value"-style secrets in free text.
func (r *Redactor) maskText(s string) string {
	if s == "" || !r.mayHoldSecret(s) {
		return s
	}
	return r.re.ReplaceAllString(s, "${1}"+Mask)
}

func (r *Redactor) secretKey(k string) bool { return r.keys[normKey(k)] }

// Record returns a copy of rec with secrets masked in the body, the
// attributes, the original payload and the failure texts. body_sha256 keeps identifying the original body.
func (r *Redactor) Record(rec record.Record) record.Record {
	if r == nil {
		return rec
	}
	rec.Body = r.Body(rec.Body)
	if len(rec.Attributes) > 0 {
		attrs := make(map[string]record.Attribute, len(rec.Attributes))
		for k, a := range rec.Attributes {
			if r.secretKey(k) || r.attrPath(k) {
				if a.IsBinary() {
					a.Base64 = Mask
				} else {
					a.Value = Mask
				}
			} else if !a.IsBinary() {
				// Failure attributes quote secrets ("password=… rejected").
				a.Value = r.maskText(a.Value)
			}
			attrs[k] = a
		}
		rec.Attributes = attrs
	}
	if rec.Payload != nil {
		// The original payload is a copy of (part of) the body: mask it the
		// same way.
		if b, err := json.Marshal(rec.Payload); err == nil {
			var p any
			if json.Unmarshal([]byte(r.Body(string(b))), &p) == nil {
				rec.Payload = p
			}
		}
	}
	if f := rec.Failure; f != nil {
		// Error texts quote secrets too ("invalid token abc…").
		c := *f
		c.Reason = r.Body(c.Reason)
		c.Evidence = make([]record.Evidence, len(f.Evidence))
		for i, e := range f.Evidence {
			e.Text = r.Body(e.Text)
			c.Evidence[i] = e
		}
		if src := f.Source; src != nil && len(src.Lines) > 0 {
			// Log lines found by --logs print payloads and headers too.
			sc := *src
			sc.Lines = make([]record.LogLine, len(src.Lines))
			for i, l := range src.Lines {
				l.Message = r.Body(l.Message)
				sc.Lines[i] = l
			}
			c.Source = &sc
		}
		rec.Failure = &c
	}
	return rec
}

func (r *Redactor) attrPath(name string) bool {
	for _, p := range r.paths {
		if len(p) == 2 && p[0] == "attributes" && p[1] == name {
			return true
		}
	}
	return false
}

// Body masks secrets in a body, keeping JSON key order.
func (r *Redactor) Body(body string) string {
	if !r.mayHoldSecret(body) {
		return body
	}
	t := strings.TrimSpace(body)
	if t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		var out bytes.Buffer
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		if r.value(dec, &out, nil, false) == nil {
			return out.String()
		}
	}
	return r.maskText(body)
}

// value copies one JSON value from dec to out, masking where needed.
func (r *Redactor) value(dec *json.Decoder, out *bytes.Buffer, path []string, mask bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			first := true
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if !first {
					out.WriteByte(',')
				}
				first = false
				kb, _ := json.Marshal(k)
				out.Write(kb)
				out.WriteByte(':')
				p := append(path[:len(path):len(path)], k)
				if err := r.value(dec, out, p, mask || r.secretKey(k) || r.matchPath(p)); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			first := true
			for dec.More() {
				if !first {
					out.WriteByte(',')
				}
				first = false
				if err := r.value(dec, out, path, mask); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte(']')
		}
	default:
		if mask && t != nil {
			out.WriteString(`"` + Mask + `"`)
			return nil
		}
		if s, ok := t.(string); ok {
			// JSON nested in a string (e.g. original_payload as text).
			if st := strings.TrimSpace(s); st != "" && (st[0] == '{' || st[0] == '[') && json.Valid([]byte(st)) {
				s = r.Body(s)
			}
			b, _ := json.Marshal(s)
			out.Write(b)
			return nil
		}
		b, _ := json.Marshal(t)
		out.Write(b)
	}
	return nil
}

func (r *Redactor) matchPath(p []string) bool {
	for _, want := range r.paths {
		if len(want) != len(p) {
			continue
		}
		ok := true
		for i := range want {
			if want[i] != "*" && !strings.EqualFold(want[i], p[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
