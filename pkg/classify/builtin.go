package classify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
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
	RuleBrokerCapacity   = "broker-capacity"
	RuleBodyNotJSON      = "body-not-json"
	RuleSchemaMismatch   = "schema-mismatch"
	RuleTransient        = "transient-failure"
	RuleBusiness         = "business-rejection"
	RulePermanentFailure = "permanent-failure"
	RuleConflicting      = "conflicting-signals"
	RuleConfiguration    = "configuration-error"
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
	// Sources say what body their consumers expect (the rules file's
	// `sources:` list): a body of another encoding is unreadable to its
	// consumer (rule body-not-json).
	Sources []SourceExpectation
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
		v := x.verdict()
		switch v.Family {
		case FamilySchema:
			return true, x.verdictWhy(v), nil
		case "":
		default:
			if !x.explaining {
				return false, "", nil
			}
			return false, "the failure context names " + v.familyPhrase() + " first; explicit failure evidence outranks the envelope", nil
		}
		e := x.rec.Envelope
		if e != nil && e.EventVersion != nil {
			switch {
			case !e.VersionIsSchema:
				// fall through to the schema_ref check and the summary below
			case !vset[versionKey(e.EventVersion)]:
				if !x.explaining {
					return true, "", nil
				}
				return true, fmt.Sprintf("envelope event_version %v is not a supported version (%s)", e.EventVersion, vlist), nil
			}
		}
		if rset != nil && e != nil && e.SchemaRef != "" && !rset[e.SchemaRef] {
			if !x.explaining {
				return true, "", nil
			}
			return true, fmt.Sprintf("envelope schema_ref %q is not a known schema", e.SchemaRef), nil
		}
		switch {
		case !x.explaining:
			return false, "", nil
		case e == nil:
			return false, "no envelope, and the failure context names no schema problem", nil
		case e.EventVersion == nil:
			return false, "the envelope has no event_version, and the failure context names no schema problem", nil
		case !e.VersionIsSchema:
			return false, fmt.Sprintf("version %v is not the event's schema version (the %s format's own version), and the failure context names no schema problem", e.EventVersion, formatName(x.rec)), nil
		default:
			return false, fmt.Sprintf("event_version %v is supported and the failure context names no schema problem", e.EventVersion), nil
		}
	}
}

func formatName(rec *record.Record) string {
	if rec.Failure != nil && rec.Failure.Format != "" {
		return rec.Failure.Format
	}
	return "envelope"
}

// familyMatcher matches when the failure evidence decides family.
func familyMatcher(family, none string) funcMatcher {
	return func(x *subject) (bool, string, error) {
		if !x.rec.Failure.HasContext() {
			if !x.explaining {
				return false, "", nil
			}
			return false, noContextWhy(x.rec), nil
		}
		v := x.verdict()
		if v.Family == family {
			return true, x.verdictWhy(v), nil
		}
		if v.Family != "" {
			if !x.explaining {
				return false, "", nil
			}
			return false, "the failure context names " + v.familyPhrase(), nil
		}
		return false, none, nil
	}
}

func noContextWhy(rec *record.Record) string {
	if src := logsSearched(rec); src != nil {
		return "the message carries no failure context and " + src.Note
	}
	if rec.Failure != nil && rec.Failure.Format != "" {
		return "the message carries no failure context (" + rec.Failure.Format + " records no reason)"
	}
	return "the message carries no failure context"
}

func builtinRules(o BuiltinOptions) []*Rule {
	versions := o.EventVersions
	if len(versions) == 0 {
		versions = DefaultEventVersions
	}
	return []*Rule{
		{
			conf: fixedConf(1), Name: RuleRedriveLoop, Class: ClassRedriveLoop, Action: ActionInvestigate, Builtin: true,
			When: `.redrive != null  # carries the dlqctl-redrive marker: redriven before and dead-lettered again`,
			Note: "redriven before and failed again; find the cause before replaying it once more",
			m: funcMatcher(func(x *subject) (bool, string, error) {
				if r := x.rec.Redrive; r != nil {
					return true, fmt.Sprintf("carries the %s marker (run %s, redriven %d time(s)) and is back in a dead-letter queue", record.MarkerAttribute, r.RunID, r.Count), nil
				}
				if _, ok := x.rec.Attributes[record.MarkerAttribute]; ok {
					return true, fmt.Sprintf("carries the %s attribute and is back in a dead-letter queue", record.MarkerAttribute), nil
				}
				return false, "no " + record.MarkerAttribute + " marker", nil
			}),
		},
		{
			conf: fixedConf(0.9), Name: RuleBrokerCapacity, Class: ClassTransient, Action: ActionRedrive, Builtin: true,
			When: `.system.amqp.last_death.reason is "expired" or "maxlen"  # RabbitMQ dead-lettered it for a TTL or a length limit`,
			Note: "the broker's capacity decision (TTL expiry, queue length limit), not the message's fault; redrive once consumers keep up, and check the queue's TTL and max-length",
			m: funcMatcher(func(x *subject) (bool, string, error) {
				a := x.rec.System.AMQP
				if a == nil {
					return false, "not dead-lettered by RabbitMQ", nil
				}
				reason, queue := "", ""
				switch {
				case a.LastDeath != nil && a.LastDeath.Reason != "":
					reason, queue = a.LastDeath.Reason, a.LastDeath.Queue
				case len(a.Deaths) > 0:
					reason, queue = a.Deaths[0].Reason, a.Deaths[0].Queue
				}
				switch reason {
				case "expired":
					return true, fmt.Sprintf("RabbitMQ dead-lettered it from %s because its TTL ran out (x-death reason expired)", queue), nil
				case "maxlen":
					return true, fmt.Sprintf("RabbitMQ dead-lettered it from %s because the queue reached its length limit (x-death reason maxlen)", queue), nil
				case "":
					return false, "no x-death record", nil
				}
				return false, fmt.Sprintf("RabbitMQ dead-lettered it for %s, which needs failure evidence", reason), nil
			}),
		},
		{
			conf: fixedConf(0.9), Name: RuleBodyNotJSON, Class: ClassPermanent, Action: ActionArchive, Builtin: true,
			When: `the body (or the payload it wraps) starts like JSON and does not parse, or is not what a rules file's sources: entry says its consumer expects; and no failure evidence names a cause`,
			Note: "its consumer cannot read this body; archive it",
			m:    bodyMatcher(o.Sources),
		},
		{
			conf: schemaConf, Name: RuleSchemaMismatch, Class: ClassSchemaMismatch, Action: ActionRedriveToRecovery, Builtin: true,
			When: fmt.Sprintf(`failure names an unsupported version/schema, unknown event or message type or no handler; or, with no failure evidence, an event schema version not in [%s] or an unknown .envelope.schema_ref`, strings.Join(versions, ", ")),
			Note: "the consumer does not know this version or type; send it where an upgraded consumer can take it",
			m:    schemaMatcher(o),
		},
		{
			conf: fixedConf(0.5), Name: RuleConflicting, Class: ClassUnknown, Action: ActionInvestigate, Builtin: true,
			When: `failure evidence names a transient failure and, just as strongly, a permanent, schema, business or configuration one`,
			Note: "the evidence contradicts itself: neither replaying (a loop) nor archiving (data loss) is safe without a look",
			m: funcMatcher(func(x *subject) (bool, string, error) {
				v := x.verdict()
				if v.Family == FamilyConflict {
					return true, x.verdictWhy(v), nil
				}
				return false, "the failure evidence does not contradict itself", nil
			}),
		},
		{
			conf: verdictConf, Name: RuleTransient, Class: ClassTransient, Action: ActionRedrive, Builtin: true,
			When: `failure names a network error, timeout, throttling/429, 5xx or gRPC unavailable, or a transient database error (deadlock, lock timeout, SQLSTATE 40001/40P01/08xxx)`,
			Note: "the dependency failed, not the message; redrive once it has recovered",
			m:    familyMatcher(FamilyTransient, "the failure context names no network error, timeout, throttling, 5xx or transient database error"),
		},
		{
			conf: verdictConf, Name: RuleBusiness, Class: ClassBusiness, Action: ActionInvestigate, Builtin: true,
			When: `failure names a business rejection (rule violation, insufficient funds, declined, already processed, order not found)`,
			Note: "a business rule rejected it: it should not have been dead-lettered; fix the consumer's error handling",
			m:    familyMatcher(FamilyBusiness, "the failure context names no business rejection"),
		},
		{
			conf: verdictConf, Name: RulePermanentFailure, Class: ClassPermanent, Action: ActionArchive, Builtin: true,
			When: `failure names a parse or deserialization error, a validation error, bad data (SQLSTATE 22/23) or an HTTP 4xx other than 408/425/429`,
			Note: "the message itself is bad; redriving cannot help",
			m:    familyMatcher(FamilyPermanent, "the failure context names no parse, validation or bad-request error"),
		},
		{
			conf: verdictConf, Name: RuleConfiguration, Class: ClassUnknown, Action: ActionInvestigate, Builtin: true,
			When: `failure names a permission or configuration problem (access denied, no permissions, missing resource, expired credentials)`,
			Note: "the message may be fine: fix the permission or resource, then redrive",
			m:    familyMatcher(FamilyConfig, "the failure context names no permission or configuration problem"),
		},
	}
}

func fixedConf(c float64) func(*subject) float64 { return func(*subject) float64 { return c } }

// verdictConf is the confidence of a decision by the failure evidence.
func verdictConf(x *subject) float64 { return x.verdict().Confidence }

// schemaConf: the failure evidence's confidence when it named the schema
// problem; an envelope version or schema_ref alone is less sure.
func schemaConf(x *subject) float64 {
	if v := x.verdict(); v.Family == FamilySchema {
		return v.Confidence
	}
	return 0.8
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
