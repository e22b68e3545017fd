package classify

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/queue"
)

// Classes assigned by the built-in rules.
const (
	ClassRedriveLoop    = "redrive-loop"
	ClassPermanent      = "permanent"
	ClassSchemaMismatch = "schema-mismatch"
	ClassTransient      = "transient"
	ClassBusiness       = "business"
	ClassUnknown        = "unknown"
)

// Names of the built-in rules, in evaluation order.
const (
	RuleRedriveLoop      = "redrive-loop"
	RuleBodyNotJSON      = "body-not-json"
	RuleSchemaMismatch   = "schema-mismatch"
	RuleTransient        = "transient-failure"
	RuleBusiness         = "business-rejection"
	RulePermanentFailure = "permanent-failure"
)

// DefaultEventVersions are the envelope event versions the built-in rules
// accept when a rules file does not list its own (builtin.event_versions).
var DefaultEventVersions = []string{"1", "2", "3"}

// BuiltinOptions tune the built-in rules (the `builtin:` block of a rules
// file).
type BuiltinOptions struct {
	// EventVersions are the envelope event versions consumers support;
	// an envelope with another version is a schema mismatch. Empty means
	// DefaultEventVersions.
	EventVersions []string
	// SchemaRefs, when not empty, are the schema references consumers
	// know; an envelope naming another one is a schema mismatch.
	SchemaRefs []string
}

// Failure vocabularies. Each is matched against the consumer's failure
// context: type, then reason, then error class. The first field that names
// a category decides it, so a ValidationError whose message mentions a
// timeout field stays permanent, and a BusinessRuleViolation stays business
// although consumers often report its error class as just "permanent".
//
// Texts are canonicalised first (see canonical: lower case, camelCase and
// snake_case split into words), so "DatabaseTimeout", "database_timeout"
// and "Database timeout" all read "database timeout". Vocabularies are
// literal phrases checked with strings.Index plus a few regular
// expressions that only run when their gate phrase is present: matching a
// message costs a few microseconds, not a regex scan per alternative.
var (
	transientVocab = vocab{
		lits: []string{"transient", "timeout", "time out", "timed out", "deadline exceeded", "throttl", "rate limit", "ratelimit",
			"rate exceeded", "too many requests", "slow down", "slowdown", "5xx", "internal server error", "bad gateway", "unavailable",
			"connection reset", "connection refused", "connection closed", "connection aborted", "connection lost", "connection error",
			"econnreset", "econnrefused", "etimedout", "broken pipe", "socket hang up", "socket hangup", "network error",
			"deadlock", "lock wait", "try again", "temporarily", "temporary", "circuit breaker", "overloaded", "capacity exceeded"},
		res: []gated{{anyOf: "45", re: regexp.MustCompile(`\b(?:http|status|code|error)\D{0,3}(?:429|5\d\d)\b|\b(?:429|5\d\d) (?:too many|internal|bad gateway|service|gateway|error)`)}},
	}
	businessVocab = vocab{
		lits: []string{"business", "rule violation", "policy violation", "insufficient funds", "insufficient balance",
			"insufficient stock", "insufficient inventory", "insufficient credit", "already cancelled", "already canceled",
			"already processed", "already exists", "already paid", "already refunded", "already shipped", "already fulfilled",
			"already closed", "declined", "rejected", "not allowed", "not permitted", "out of stock", "limit exceeded",
			"duplicate order", "duplicate payment", "duplicate request", "account closed", "account suspended", "account frozen", "fraud"},
		res: []gated{{gate: "exceed", re: regexp.MustCompile(`exceeds? (?:the |its )?(?:\w+ )?limit`)}},
	}
	permanentVocab = vocab{
		lits: []string{"permanent", "poison", "validation", "invalid", "malformed", "too large", "too big", "payload size",
			"deserializ", "unmarshal", "cannot parse", "could not parse", "parse error", "parsing error", "syntax error",
			"bad request", "unprocessable", "missing required", "missing field", "missing property", "missing attribute",
			"required field", "null pointer", "nullpointer", "type error", "typeerror", "not a valid"},
		res: []gated{{anyOf: "4", re: regexp.MustCompile(`\b(?:http|status|code)\D{0,3}(?:400|413|422)\b`)}},
	}
	schemaVocab = vocab{
		res: []gated{
			{gate: "version", re: regexp.MustCompile(`(?:unsupported|unknown|unexpected|incompatible) (?:event ?)?version|version (?:not supported|mismatch|unknown|not found)|no handler for (?:event )?version`)},
			{gate: "schema", re: regexp.MustCompile(`(?:unsupported|unknown|unexpected|incompatible) schema|schema (?:not supported|mismatch|unknown|not found)|schema ?ref`)},
		},
	}
)

// vocab is a set of phrases naming one kind of failure.
type vocab struct {
	lits []string
	res  []gated
}

// gated is a regular expression that runs only when the text contains gate
// (or, with anyOf, one of its bytes).
type gated struct {
	gate, anyOf string
	re          *regexp.Regexp
}

// find returns the first phrase of v in the canonical text c ("" if none).
func (v *vocab) find(c string) string {
	for _, l := range v.lits {
		if strings.Contains(c, l) {
			return l
		}
	}
	for _, g := range v.res {
		if (g.gate != "" && !strings.Contains(c, g.gate)) || (g.anyOf != "" && !strings.ContainsAny(c, g.anyOf)) {
			continue
		}
		if m := g.re.FindString(c); m != "" {
			return m
		}
	}
	return ""
}

// canonical lower-cases s and splits camelCase, snake_case and kebab-case
// into space-separated words: "TransientDatabaseTimeout" and
// "transient_database-timeout" both become "transient database timeout".
// Runs of capitals stay one word ("ECONNRESET", "HTTPError" -> "httperror").
func canonical(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	var prev byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			if prev >= 'a' && prev <= 'z' {
				b.WriteByte(' ')
			}
			b.WriteByte(c + ('a' - 'A'))
		case c == '_' || c == '-' || c == '\t' || c == '\n' || c == '\r':
			if prev != ' ' {
				b.WriteByte(' ')
			}
			c = ' '
		case c == ' ':
			if prev != ' ' {
				b.WriteByte(' ')
			}
		default:
			b.WriteByte(c)
		}
		prev = c
	}
	return b.String()
}

// failureVerdict caches the failure-context reading of one message: which
// category (transient, business, permanent) its failure names, and where.
type failureVerdict struct {
	class string // ClassTransient, ClassBusiness, ClassPermanent or ""
	field string // "failure.type", "failure.reason" or "failure.error_class"
	text  string // the matched text
}

func (x *subject) failure() *failureVerdict {
	if x.fail != nil {
		return x.fail
	}
	v := &failureVerdict{}
	if f := x.rec.Failure; f != nil {
		fields := [...]struct{ name, val string }{
			{"failure.type", f.Type},
			{"failure.reason", f.Reason},
			{"failure.error_class", f.ErrorClass},
		}
	outer:
		for _, fl := range fields {
			if fl.val == "" {
				continue
			}
			c := canonical(fl.val)
			for _, k := range [...]struct {
				class string
				v     *vocab
			}{{ClassTransient, &transientVocab}, {ClassBusiness, &businessVocab}, {ClassPermanent, &permanentVocab}} {
				if m := k.v.find(c); m != "" {
					v.class, v.field, v.text = k.class, fl.name, m
					break outer
				}
			}
		}
	}
	x.fail = v
	return v
}

type funcMatcher func(x *subject) (bool, string, error)

func (f funcMatcher) match(x *subject) (bool, string, error) { return f(x) }

// failureMatcher matches when the failure context names class.
func failureMatcher(class, none string) funcMatcher {
	return func(x *subject) (bool, string, error) {
		if x.rec.Failure == nil {
			return false, "the message carries no failure context", nil
		}
		v := x.failure()
		if v.class == class {
			return true, fmt.Sprintf("%s %q names a %s failure (%q)", v.field, fieldValue(x.rec.Failure, v.field), class, v.text), nil
		}
		if v.class != "" {
			return false, fmt.Sprintf("%s names a %s failure first (%q)", v.field, v.class, v.text), nil
		}
		return false, none, nil
	}
}

func fieldValue(f *queue.Failure, field string) string {
	switch field {
	case "failure.error_class":
		return f.ErrorClass
	case "failure.type":
		return f.Type
	}
	return f.Reason
}

// versionKey normalises an event version for comparison: 3, 3.0, "3" and
// "v3" are the same version.
func versionKey(v any) string {
	var s string
	switch t := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(t, 10)
	case int:
		return strconv.Itoa(t)
	case float64:
		s = strconv.FormatFloat(t, 'f', -1, 64)
	case string:
		s = t
	default:
		s = fmt.Sprint(t)
	}
	s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "v")
	s = strings.TrimSuffix(s, ".0")
	return s
}

func schemaMatcher(o BuiltinOptions) funcMatcher {
	versions := o.EventVersions
	if len(versions) == 0 {
		versions = DefaultEventVersions
	}
	vset := make(map[string]bool, len(versions))
	for _, v := range versions {
		vset[versionKey(v)] = true
	}
	var rset map[string]bool
	if len(o.SchemaRefs) > 0 {
		rset = make(map[string]bool, len(o.SchemaRefs))
		for _, r := range o.SchemaRefs {
			rset[r] = true
		}
	}
	vlist := strings.Join(versions, ", ")
	return func(x *subject) (bool, string, error) {
		if e := x.rec.Envelope; e != nil {
			if e.EventVersion != nil && !vset[versionKey(e.EventVersion)] {
				return true, fmt.Sprintf("envelope event_version %v is not a supported version (%s)", e.EventVersion, vlist), nil
			}
			if rset != nil && e.SchemaRef != "" && !rset[e.SchemaRef] {
				return true, fmt.Sprintf("envelope schema_ref %q is not a known schema", e.SchemaRef), nil
			}
		}
		if f := x.rec.Failure; f != nil {
			for _, fl := range [...]struct{ name, val string }{{"failure.error_class", f.ErrorClass}, {"failure.type", f.Type}, {"failure.reason", f.Reason}} {
				if fl.val == "" {
					continue
				}
				if m := schemaVocab.find(canonical(fl.val)); m != "" {
					return true, fmt.Sprintf("%s %q names a schema/version problem (%q)", fl.name, fl.val, m), nil
				}
			}
		}
		switch e := x.rec.Envelope; {
		case e == nil:
			return false, "no envelope, and the failure context names no schema problem", nil
		case e.EventVersion == nil:
			return false, "the envelope has no event_version, and the failure context names no schema problem", nil
		default:
			return false, fmt.Sprintf("event_version %v is supported and the failure context names no schema problem", e.EventVersion), nil
		}
	}
}

func builtinRules(o BuiltinOptions) []*Rule {
	versions := o.EventVersions
	if len(versions) == 0 {
		versions = DefaultEventVersions
	}
	return []*Rule{
		{
			Name: RuleRedriveLoop, Class: ClassRedriveLoop, Action: ActionInvestigate, Builtin: true,
			When: `.redrive != null  # carries the dlqctl-redrive marker: redriven before and dead-lettered again`,
			Note: "redriven before and failed again; find the cause before replaying it once more",
			m: funcMatcher(func(x *subject) (bool, string, error) {
				if r := x.rec.Redrive; r != nil {
					return true, fmt.Sprintf("carries the %s marker (run %s, redriven %d time(s)) and is back in a dead-letter queue", queue.MarkerAttribute, r.RunID, r.Count), nil
				}
				if _, ok := x.rec.Attributes[queue.MarkerAttribute]; ok {
					return true, fmt.Sprintf("carries the %s attribute and is back in a dead-letter queue", queue.MarkerAttribute), nil
				}
				return false, "no " + queue.MarkerAttribute + " marker", nil
			}),
		},
		{
			Name: RuleBodyNotJSON, Class: ClassPermanent, Action: ActionArchive, Builtin: true,
			When: `.json == null  # the body is not parseable JSON`,
			Note: "no consumer can parse this body; archive it",
			m: funcMatcher(func(x *subject) (bool, string, error) {
				if x.parsed != nil {
					return false, "the body is JSON", nil
				}
				t := strings.TrimSpace(x.rec.Body)
				if t != "" && (t[0] == '{' || t[0] == '[') {
					return true, "the body looks like JSON but does not parse", nil
				}
				return true, "the body is not JSON (plain text or binary)", nil
			}),
		},
		{
			Name: RuleSchemaMismatch, Class: ClassSchemaMismatch, Action: ActionRedriveToRecovery, Builtin: true,
			When: fmt.Sprintf(`.envelope.event_version not in [%s], or an unknown .envelope.schema_ref, or a failure naming an unsupported version/schema`, strings.Join(versions, ", ")),
			Note: "the consumer does not know this version; send it where an upgraded consumer can take it",
			m:    schemaMatcher(o),
		},
		{
			Name: RuleTransient, Class: ClassTransient, Action: ActionRedrive, Builtin: true,
			When: `failure context names a timeout, throttling/429, a 5xx, a connection reset or an unavailable dependency`,
			Note: "the dependency failed, not the message; redrive once it has recovered",
			m:    failureMatcher(ClassTransient, "the failure context names no timeout, throttling, 5xx, connection reset or unavailable dependency"),
		},
		{
			Name: RuleBusiness, Class: ClassBusiness, Action: ActionInvestigate, Builtin: true,
			When: `failure context names a business rejection (rule violation, insufficient funds, already cancelled, declined)`,
			Note: "a business rule rejected it: it should not have been dead-lettered; fix the consumer's error handling",
			m:    failureMatcher(ClassBusiness, "the failure context names no business rejection"),
		},
		{
			Name: RulePermanentFailure, Class: ClassPermanent, Action: ActionArchive, Builtin: true,
			When: `failure context names a permanent error (validation, invalid, malformed, payload too large, deserialization)`,
			Note: "the message itself is bad; redriving cannot help",
			m:    failureMatcher(ClassPermanent, "the failure context names no permanent error"),
		},
	}
}

// Builtin returns the built-in rules with default options.
func Builtin() *Rules { return BuiltinWith(BuiltinOptions{}) }

// BuiltinWith returns the built-in rules tuned by o.
func BuiltinWith(o BuiltinOptions) *Rules {
	return &Rules{
		Source:  "built-in rules",
		Rules:   builtinRules(o),
		Default: Outcome{Class: ClassUnknown, Action: ActionInvestigate, Note: "no rule recognised the failure; look at it"},
	}
}
