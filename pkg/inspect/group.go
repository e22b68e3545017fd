package inspect

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// None is the group value of a key the message does not have.
const None = "(none)"

// GroupKey is one --by key: a named key or a jq expression over the record.
type GroupKey struct {
	// Name is the key as given (a key name or the expression).
	Name string
	// NeedsClass is true for `class`: records must be classified first.
	NeedsClass bool

	value func(g *groupCtx) string
	expr  *Expr
}

// groupCtx carries one record through the key functions; the jq input is
// built at most once.
type groupCtx struct {
	rec    *record.Record
	parsed any
	now    time.Time
	in     map[string]any
}

func (c *groupCtx) input() map[string]any {
	if c.in == nil {
		c.in = Input(c.rec, c.parsed)
	}
	return c.in
}

func orNone(s string) string {
	if s == "" {
		return None
	}
	return s
}

// namedKeys are the built-in group keys.
var namedKeys = map[string]struct {
	help string
	fn   func(c *groupCtx) string
}{
	"source": {"the queue (Kafka: the original topic) the message was dead-lettered from", func(c *groupCtx) string {
		return orNone(c.rec.SourceQueue())
	}},
	"reason": {"why the broker dead-lettered it (RabbitMQ: the newest x-death reason — rejected, expired, maxlen, delivery_limit; a Spring recoverer's copy: recoverer)", func(c *groupCtx) string {
		return orNone(c.rec.DeadLetterReason())
	}},
	"stage": {"Kafka: the record's topic in its retry chain, as stage and topic (retry-1 orders-retry-1, dlt orders-dlq); group reads the whole chain", func(c *groupCtx) string {
		if k := c.rec.System.Kafka; k != nil && k.Stage != "" {
			return k.Stage + " " + k.Topic
		}
		return None
	}},
	"event_type": {"envelope event type", func(c *groupCtx) string {
		if e := c.rec.Envelope; e != nil {
			return orNone(e.EventType)
		}
		return None
	}},
	"event_version": {"envelope event version", func(c *groupCtx) string {
		if e := c.rec.Envelope; e != nil && e.EventVersion != nil {
			return scalarString(e.EventVersion)
		}
		return None
	}},
	"producer": {"envelope producer", func(c *groupCtx) string {
		if e := c.rec.Envelope; e != nil {
			return orNone(e.Producer)
		}
		return None
	}},
	"tenant": {"envelope tenant id", func(c *groupCtx) string {
		if e := c.rec.Envelope; e != nil && e.TenantID != "" {
			return e.TenantID
		}
		for _, k := range []string{"tenant", "tenantId", "tenant_id"} {
			if a, ok := c.rec.Attributes[k]; ok && !a.IsBinary() && a.Value != "" {
				return a.Value
			}
		}
		return None
	}},
	"error_class": {"the consumer's error class (its failure type when it reports no class)", func(c *groupCtx) string {
		if f := c.rec.Failure; f != nil {
			if f.ErrorClass != "" {
				return f.ErrorClass
			}
			return orNone(f.Type)
		}
		return None
	}},
	"error": {"normalised failure fingerprint (numbers, ids, quoted values, timestamps replaced; a listener wrapper such as Spring's ListenerExecutionFailedException gives way to its cause)", func(c *groupCtx) string {
		return ErrorFingerprint(c.rec)
	}},
	"format": {"the DLQ format recognised (failure.format: lambda-async, eventbridge, sns, …)", func(c *groupCtx) string {
		if f := c.rec.Failure; f != nil {
			return orNone(f.Format)
		}
		return None
	}},
	"encoding": {"what the body is (payload_encoding: json, xml, csv, text, base64/json, gzip/json, binary, malformed-json, …)", func(c *groupCtx) string {
		return orNone(c.rec.PayloadEncoding)
	}},
	"shape": {"fingerprint of the body's JSON structure (not-json when unparseable)", func(c *groupCtx) string {
		return ShapeFingerprint(c.parsed)
	}},
	"consumer_version": {"consumer version from the failure context", func(c *groupCtx) string {
		if f := c.rec.Failure; f != nil {
			return orNone(f.ConsumerVersion)
		}
		return None
	}},
	"class": {"class assigned by the rules (built-in unless --rules)", func(c *groupCtx) string {
		return orNone(c.rec.Class)
	}},
	"action": {"action assigned by the rules", func(c *groupCtx) string {
		return orNone(c.rec.Action)
	}},
	"age": {"age bucket: <1h, <1d, <3d, <7d, older", func(c *groupCtx) string {
		return AgeBucket(recordAge(c.rec, c.now))
	}},
	"receive_count": {"ApproximateReceiveCount", func(c *groupCtx) string {
		return strconv.Itoa(c.rec.System.ReceiveCount)
	}},
}

// GroupKeyNames lists the named group keys with a short description, for
// help texts.
func GroupKeyNames() string {
	names := make([]string, 0, len(namedKeys))
	for n := range namedKeys {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-17s %s\n", n, namedKeys[n].help)
	}
	return strings.TrimRight(b.String(), "\n")
}

// AgeBuckets are the age group values, youngest first.
var AgeBuckets = []string{"<1h", "<1d", "<3d", "<7d", "older"}

// AgeBucket returns the age bucket of d.
func AgeBucket(d time.Duration) string {
	switch {
	case d < time.Hour:
		return AgeBuckets[0]
	case d < 24*time.Hour:
		return AgeBuckets[1]
	case d < 72*time.Hour:
		return AgeBuckets[2]
	case d < 7*24*time.Hour:
		return AgeBuckets[3]
	}
	return AgeBuckets[4]
}

// recordAge is the message's age at now: from sent_at when known (so
// records read from a file age correctly), else age_seconds.
func recordAge(rec *record.Record, now time.Time) time.Duration {
	if !rec.System.SentAt.IsZero() && !now.IsZero() {
		return max(0, now.Sub(rec.System.SentAt))
	}
	return time.Duration(rec.AgeSeconds) * time.Second
}

// ParseGroupKeys parses --by values. Each value may hold several keys
// separated by commas outside brackets and quotes; a key is a named key
// (see GroupKeyNames) or a jq expression starting with '.', '(' or another
// non-letter ("--by source,error", "--by 'source,.attributes.tenant.value'").
func ParseGroupKeys(specs []string) ([]*GroupKey, error) {
	var keys []*GroupKey
	seen := map[string]bool{}
	for _, spec := range specs {
		parts, err := splitTopLevel(spec)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if p == "" {
				return nil, errs.BadInputf("--by %q has an empty key; separate keys with single commas, e.g. --by source,error", spec)
			}
			if seen[p] {
				return nil, errs.BadInputf("--by names %q twice; list each key once", p)
			}
			seen[p] = true
			if nk, ok := namedKeys[p]; ok {
				keys = append(keys, &GroupKey{Name: p, NeedsClass: p == "class" || p == "action", value: nk.fn})
				continue
			}
			if isIdent(p) {
				return nil, errs.BadInputf("unknown group key %q; use one of %s, or a jq expression such as .attributes.%s.value", p, strings.Join(sortedKeyNames(), ", "), p)
			}
			e, err := CompileExpr(p)
			if err != nil {
				return nil, err
			}
			gk := &GroupKey{Name: p, expr: e, NeedsClass: strings.Contains(p, ".class") || strings.Contains(p, ".action") || strings.Contains(p, ".rule")}
			gk.value = func(c *groupCtx) string {
				v, err := e.Eval(c.input())
				if err != nil {
					return "(error)"
				}
				return valueString(v)
			}
			keys = append(keys, gk)
		}
	}
	if len(keys) == 0 {
		return nil, errs.BadInputf("--by needs at least one key, e.g. --by source,error")
	}
	return keys, nil
}

func sortedKeyNames() []string {
	names := make([]string, 0, len(namedKeys))
	for n := range namedKeys {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// splitTopLevel splits s on commas outside (), [], {} and string literals.
func splitTopLevel(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if inStr || depth != 0 {
		return nil, errs.BadInputf("--by %q has unbalanced brackets or quotes", s)
	}
	return append(parts, strings.TrimSpace(s[start:])), nil
}

func scalarString(v any) string {
	switch t := v.(type) {
	case string:
		return orNone(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case int:
		return strconv.Itoa(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	}
	return valueString(v)
}

// valueString renders an expression result as a group value.
func valueString(v any) string {
	switch t := v.(type) {
	case nil:
		return None
	case string, int64, int, float64, bool:
		return scalarString(t)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Group is one group of messages sharing the same key values.
type Group struct {
	// Key maps each --by key to this group's value.
	Key map[string]string `json:"key"`
	// Values are the key values in --by order.
	Values []string `json:"-"`
	Count  int      `json:"count"`
	// Share is Count divided by the messages grouped (0..1).
	Share         float64   `json:"share"`
	OldestSentAt  time.Time `json:"oldest_sent_at,omitzero"`
	NewestSentAt  time.Time `json:"newest_sent_at,omitzero"`
	SoonestExpiry time.Time `json:"soonest_expiry,omitzero"`
	ReceiveCount  struct {
		Min int `json:"min"`
		Max int `json:"max"`
	} `json:"receive_count"`
	// Examples are up to two message ids of the group.
	Examples []string `json:"examples"`
	// Estimate is set when only a sample of a queue of known depth was read.
	Estimate *Estimate `json:"estimate,omitempty"`
}

// Grouper counts records into groups. It is not safe for concurrent use.
type Grouper struct {
	keys   []*GroupKey
	now    time.Time
	groups map[string]*Group
	total  int
	buf    []string
	sb     []byte // the group id of the record being added
}

// NewGrouper groups by keys; now is the reference time for age buckets
// (zero: ages come from the records' age_seconds).
func NewGrouper(keys []*GroupKey, now time.Time) *Grouper {
	return &Grouper{keys: keys, now: now, groups: map[string]*Group{}, buf: make([]string, len(keys))}
}

// NeedsClass reports whether some key needs classified records.
func (g *Grouper) NeedsClass() bool {
	for _, k := range g.keys {
		if k.NeedsClass {
			return true
		}
	}
	return false
}

// Add counts rec (with its parsed body, see Decode) into its group.
func (g *Grouper) Add(rec *record.Record, parsed any) {
	c := groupCtx{rec: rec, parsed: parsed, now: g.now}
	for i, k := range g.keys {
		g.buf[i] = k.value(&c)
	}
	g.AddValues(rec, g.buf)
}

// Values returns rec's group key values. Unlike Add it is safe for
// concurrent use, so the values (fingerprints, expressions) can be
// computed in parallel and counted in order with AddValues.
func (g *Grouper) Values(rec *record.Record, parsed any) []string {
	c := groupCtx{rec: rec, parsed: parsed, now: g.now}
	out := make([]string, len(g.keys))
	for i, k := range g.keys {
		out[i] = k.value(&c)
	}
	return out
}

// AddValues counts rec into the group of values (from Values).
func (g *Grouper) AddValues(rec *record.Record, values []string) {
	g.sb = g.sb[:0]
	for i, v := range values {
		if i > 0 {
			g.sb = append(g.sb, 0)
		}
		g.sb = append(g.sb, v...)
	}
	grp, ok := g.groups[string(g.sb)] // no copy of the key to look it up
	if !ok {
		// The values may share the bytes of a whole body (see
		// valueParser.str): a group keeps copies.
		vals := make([]string, len(values))
		for i, v := range values {
			vals[i] = strings.Clone(v)
		}
		grp = &Group{Key: make(map[string]string, len(g.keys)), Values: vals}
		for i, k := range g.keys {
			grp.Key[k.Name] = vals[i]
		}
		grp.ReceiveCount.Min = rec.System.ReceiveCount
		g.groups[string(g.sb)] = grp
	}
	g.total++
	grp.Count++
	if len(grp.Examples) < 2 && rec.MessageID != "" {
		grp.Examples = append(grp.Examples, rec.MessageID)
	}
	if t := rec.System.SentAt; !t.IsZero() {
		if grp.OldestSentAt.IsZero() || t.Before(grp.OldestSentAt) {
			grp.OldestSentAt = t
		}
		if t.After(grp.NewestSentAt) {
			grp.NewestSentAt = t
		}
	}
	if t := rec.ExpiresAt; !t.IsZero() && (grp.SoonestExpiry.IsZero() || t.Before(grp.SoonestExpiry)) {
		grp.SoonestExpiry = t
	}
	grp.ReceiveCount.Min = min(grp.ReceiveCount.Min, rec.System.ReceiveCount)
	grp.ReceiveCount.Max = max(grp.ReceiveCount.Max, rec.System.ReceiveCount)
}

// Total is the number of records added.
func (g *Grouper) Total() int { return g.total }

// Keys returns the group keys.
func (g *Grouper) Keys() []*GroupKey { return g.keys }

// Groups returns the groups by count (largest first; ties by key values),
// with Share filled in.
func (g *Grouper) Groups() []*Group {
	out := make([]*Group, 0, len(g.groups))
	for _, grp := range g.groups {
		if g.total > 0 {
			grp.Share = float64(grp.Count) / float64(g.total)
		}
		out = append(out, grp)
	}
	slices.SortFunc(out, func(a, b *Group) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return slices.Compare(a.Values, b.Values)
	})
	return out
}
