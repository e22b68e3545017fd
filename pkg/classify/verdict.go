package classify

import (
	"fmt"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// FamilyConflict is the Verdict family when the evidence names a transient
// failure and, as strongly, a non-transient one.
const FamilyConflict = "conflict"

// Reading is one piece of failure evidence and the family it names.
type Reading struct {
	Field  string `json:"field"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Family string `json:"family,omitempty"`
	// Group is the signal group within the family (network, timeout,
	// throttling, parse, validation, http, …).
	Group string `json:"group,omitempty"`
	// Signal is the phrase that named the family.
	Signal string `json:"signal,omitempty"`
	Strong bool   `json:"strong,omitempty"`
	// Weak is true for evidence found by its look in a field not named
	// as failure context (a hint: never strong).
	Weak bool `json:"weak,omitempty"`
}

// Verdict is what a message's failure evidence says, read by the built-in
// failure families.
type Verdict struct {
	// Family is transient, permanent, schema-mismatch, business,
	// configuration, conflict, or "" when the evidence names none.
	Family string `json:"family,omitempty"`
	// Decisive is the reading that decided (for a conflict: the transient one).
	Decisive *Reading `json:"decisive,omitempty"`
	// Against is, for a conflict, the reading that contradicts Decisive.
	Against  *Reading  `json:"against,omitempty"`
	Readings []Reading `json:"evidence,omitempty"`
	// Confidence is how sure the family is, 0 to 1: a root cause or an
	// exception type, code or status that names it specifically is surer
	// than a message's words; generic words alone are a guess; a root
	// cause that overrode a wrapper's contrary words is a little less sure
	// than one nothing contradicts; a conflict is 0.5.
	Confidence float64 `json:"confidence,omitempty"`
}

// Confidences of the failure evidence (see Verdict.Confidence).
const (
	ConfRoot      = 0.95 // the root cause of a chain names the family specifically
	ConfSpecific  = 0.9  // an exception type, error code or status names it specifically
	ConfMessage   = 0.85 // a message names it with a specific phrase
	ConfCondition = 0.75 // only the platform's give-up condition names it
	ConfWeak      = 0.55 // only generic words ("timeout", "invalid") name it
	ConfConflict  = 0.5
	// ConfOverruled is taken off when the decisive reading overrules a
	// specific reading of another family (a root cause under a wrapper
	// that says otherwise).
	ConfOverruled = 0.1
)

// DefaultMinConfidence is the confidence below which --class does not
// select a decision (other than unknown): chosen on the corpus
// (testdata/triage) so that no dangerous confusion (permanent called
// transient or the reverse) is selected, while every decision named by
// specific evidence is. Generic words alone (ConfWeak) stay below it.
const DefaultMinConfidence = 0.6

// kindTier orders evidence kinds from most to least specific: an exception
// type or error code outranks a message, which outranks the platform's
// give-up condition and the consumer's own label.
func kindTier(kind string) int {
	switch kind {
	case record.EvidenceType, record.EvidenceCode, record.EvidenceStatus:
		return 0
	case record.EvidenceMessage, record.EvidenceCause, record.EvidenceRootCause:
		return 1
	case record.EvidenceCondition:
		return 2
	}
	return 3
}

// evidenceOf returns the failure evidence of rec: as decoded, or built from
// type, reason and error class for records that carry only those.
func evidenceOf(f *record.Failure) []record.Evidence {
	if f == nil {
		return nil
	}
	if len(f.Evidence) > 0 {
		return f.Evidence
	}
	var ev []record.Evidence
	for _, e := range [...]record.Evidence{
		{Field: "failure.type", Kind: record.EvidenceType, Text: f.Type},
		{Field: "failure.reason", Kind: record.EvidenceMessage, Text: f.Reason},
		{Field: "failure.error_class", Kind: record.EvidenceClass, Text: f.ErrorClass},
	} {
		if e.Text != "" {
			ev = append(ev, e)
		}
	}
	return ev
}

// familyRank orders non-transient families when several are named
// strongly: a schema problem is the most specific, a configuration problem
// the least.
var familyRank = map[string]int{FamilySchema: 0, FamilyBusiness: 1, FamilyPermanent: 2, FamilyConfig: 3}

// outranks orders strong non-transient readings: a schema problem anywhere
// is the most specific; otherwise the more specific field (an exception
// type over a message), then the family (business, permanent,
// configuration), then the earlier phrase.
func outranks(a, b *candidate) bool {
	as, bs := a.family == FamilySchema, b.family == FamilySchema
	if as != bs {
		return as
	}
	if a.tier != b.tier {
		return a.tier < b.tier
	}
	if familyRank[a.family] != familyRank[b.family] {
		return familyRank[a.family] < familyRank[b.family]
	}
	return earlier(a, b)
}

// verdict reads the failure evidence once per message.
func (x *subject) verdict() *Verdict {
	if x.v == nil {
		x.v = readEvidence(evidenceOf(x.rec.Failure))
	}
	return x.v
}

type candidate struct {
	family  string
	strong  bool
	tier    int
	idx     int // evidence index
	pos     int
	reading int
	root    bool // read from a root cause
}

func readEvidence(ev []record.Evidence) *Verdict {
	v := &Verdict{}
	if len(ev) == 0 {
		return v
	}
	v.Readings = make([]Reading, 0, len(ev))
	var candBuf [16]candidate // most messages have a few: no allocation
	cands := candBuf[:0]
	sc := getScanner()
	defer putScanner(sc)
	for i, e := range ev {
		r := Reading{Field: e.Field, Kind: e.Kind, Text: e.Text, Weak: e.Weak}
		var hits []hit
		if e.Kind == record.EvidenceStatus && isDigits(strings.TrimSpace(e.Text)) {
			code := strings.TrimSpace(e.Text)
			if f := httpStatusFamily(code); f != "" {
				hits = []hit{{family: f, group: "http", phrase: "HTTP " + code, strong: true}}
			}
		} else if h, ok := bareCode(e); ok {
			hits = []hit{h}
		} else {
			hits = builtinVocab.scan(e.Text, sc)
		}
		tier := kindTier(e.Kind)
		best := -1
		// An exception type or error code is specific: its words count as
		// strong, unless it also holds a specific phrase, which then
		// decides over its generic words (TimeoutRejectedException is a
		// timeout, not a "rejected" business outcome).
		native := false
		for _, h := range hits {
			native = native || h.strong
		}
		for k, h := range hits {
			strong := h.strong
			switch {
			case e.Weak:
				strong = false // found by its look in the message's data: a hint
			case tier == 0:
				strong = strong || !native
			case tier == 3:
				strong = false // the consumer's own label is a hint
			}
			hits[k].strong = strong
			if best < 0 || better(hits[k], hits[best]) {
				best = k
			}
			if e.Weak {
				continue // a hint: shown, never decides
			}
			cands = append(cands, candidate{family: h.family, strong: strong, tier: tier, idx: i, pos: h.pos, reading: len(v.Readings), root: e.Kind == record.EvidenceRootCause})
		}
		if best >= 0 {
			h := hits[best]
			r.Family, r.Group, r.Signal, r.Strong = h.family, h.group, h.phrase, h.strong
		}
		v.Readings = append(v.Readings, r)
	}
	if len(cands) == 0 {
		return v
	}
	// The root cause decides when it names a family specifically: the
	// wrappers' words (a "ListenerExecutionFailedException", "failed to
	// deserialize: …: connection reset") describe where it surfaced.
	rootDecides := false
	for i := range cands {
		if cands[i].root && cands[i].strong {
			rootDecides = true
			break
		}
	}
	var firstT, firstN *candidate
	for i := range cands {
		c := &cands[i]
		if !c.strong || rootDecides && !c.root {
			continue
		}
		if c.family == FamilyTransient {
			if firstT == nil || earlier(c, firstT) {
				firstT = c
			}
		} else if firstN == nil || outranks(c, firstN) {
			firstN = c
		}
	}
	pick := func(c *candidate) *Reading {
		r := v.Readings[c.reading]
		if r.Family != c.family {
			// The reading's best hit is another family: describe this one.
			r.Family = c.family
			r.Signal = signalFor(ev[c.idx].Text, c.family)
			r.Strong = c.strong
		}
		return &r
	}
	var decisive *candidate
	switch {
	case firstT != nil && firstN != nil:
		v.Family, v.Decisive, v.Against = FamilyConflict, pick(firstT), pick(firstN)
		v.Confidence = ConfConflict
		return v
	case firstT != nil:
		v.Family, v.Decisive = FamilyTransient, pick(firstT)
		decisive = firstT
	case firstN != nil:
		v.Family, v.Decisive = firstN.family, pick(firstN)
		decisive = firstN
	default:
		// Weak signals only: the most specific field decides, then the
		// earliest phrase.
		var b *candidate
		for i := range cands {
			if b == nil || earlier(&cands[i], b) {
				b = &cands[i]
			}
		}
		v.Family, v.Decisive = b.family, pick(b)
		v.Confidence = ConfWeak
		return v
	}
	switch {
	case decisive.root:
		v.Confidence = ConfRoot
	case decisive.tier == 0:
		v.Confidence = ConfSpecific
	case decisive.tier == 1:
		v.Confidence = ConfMessage
	default:
		v.Confidence = ConfCondition
	}
	if rootDecides {
		// Did the root overrule a specific reading of another family?
		for i := range cands {
			c := &cands[i]
			if !c.root && c.strong && c.family != decisive.family && (c.family == FamilyTransient) != (decisive.family == FamilyTransient) {
				v.Confidence -= ConfOverruled
				break
			}
		}
	}
	return v
}

// bareCode reads an error code given alone: a SQLSTATE ("40P01",
// "23505"), or a MySQL error number in a field that names it (errno,
// mysql, sql: "1213").
func bareCode(e record.Evidence) (hit, bool) {
	if e.Kind != record.EvidenceCode {
		return hit{}, false
	}
	code := strings.TrimSpace(e.Text)
	switch {
	case len(code) == 5 && code[0] >= '0' && code[0] <= '9' && code[1] >= '0' && code[1] <= '9':
		if f, g := sqlStateFamily(strings.ToLower(code)); f != "" {
			return hit{family: f, group: g, phrase: "SQLSTATE " + strings.ToUpper(code), strong: true}, true
		}
	case len(code) == 4 && isDigits(code):
		field := strings.ToLower(e.Field)
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:]
		}
		if strings.Contains(field, "errno") || strings.Contains(field, "mysql") || strings.Contains(field, "sql") {
			if f, g := mysqlErrnoFamily(code); f != "" {
				return hit{family: f, group: g, phrase: "MySQL error " + code, strong: true}, true
			}
		}
	}
	return hit{}, false
}

func better(a, b hit) bool {
	if a.strong != b.strong {
		return a.strong
	}
	return a.pos < b.pos
}

func earlier(a, b *candidate) bool {
	if a.tier != b.tier {
		return a.tier < b.tier
	}
	if a.idx != b.idx {
		return a.idx < b.idx
	}
	return a.pos < b.pos
}

// signalFor returns the phrase of family in text.
func signalFor(text, family string) string {
	sc := getScanner()
	defer putScanner(sc)
	hits := builtinVocab.scan(text, sc)
	for _, h := range hits {
		if h.family == family {
			return h.phrase
		}
	}
	return ""
}

// familyPhrase names the verdict's family for explanations.
func (v *Verdict) familyPhrase() string {
	switch v.Family {
	case FamilyConflict:
		return "conflicting failures (transient and " + v.Against.Family + ")"
	case FamilyConfig:
		return "a configuration/permission problem"
	case "":
		return "no failure family"
	}
	return "a " + v.Family + " failure"
}

// why explains the decisive reading.
func (v *Verdict) why() string {
	d := v.Decisive
	if d == nil {
		return "the failure context names no failure family"
	}
	if v.Family == FamilyConflict {
		a := v.Against
		return fmt.Sprintf("%s %q names a transient failure (%q) but %s %q names a %s one (%q); both are specific, so neither wins",
			d.Field, clip(d.Text), d.Signal, a.Field, clip(a.Text), a.Family, a.Signal)
	}
	strength := ""
	switch {
	case !d.Strong:
		strength = ", a weak signal nothing outweighs"
	case d.Kind == record.EvidenceRootCause:
		strength = ", the root cause: the wrappers' words do not decide"
	}
	family := v.Family
	if family == FamilyConfig {
		family = "configuration/permission"
	}
	return fmt.Sprintf("%s %q names a %s failure (%q%s)", d.Field, clip(d.Text), family, d.Signal, strength)
}

func clip(s string) string {
	if len(s) <= 120 {
		return s
	}
	return truncateUTF8(s, 117) + "..."
}

func truncateUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}

type funcMatcher func(x *subject) (bool, string, error)

func (f funcMatcher) match(x *subject) (bool, string, error) { return f(x) }
