package classify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// Load reads and validates a rules file. Every problem is a bad-input error
// naming the file, the line and the reason; no message is read before the
// rules are valid.
func Load(path string) (*Rules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errs.BadInputf("cannot read rules file %s: %v; pass a YAML rules file (see 'dlqctl help rules')", path, err)
	}
	return Parse(data, path)
}

// Parse validates a rules file's contents; name is used in error messages.
//
//	rules:
//	  - name: card-declined
//	    when: '.failure.type == "CardDeclined"'
//	    class: business
//	    action: investigate
//	    note: "payments team owns these"
//	  - include: builtin            # the built-in rules, here in the order
//	default: {class: unknown, action: investigate}
//	builtin: {event_versions: [1, 2], schema_refs: ["orders/1"]}
//	sources:
//	  - {queue: orders, expects: json}
func Parse(data []byte, name string) (*Rules, error) {
	p := &parser{name: name}
	rs, err := p.parse(data)
	if err != nil {
		return nil, errs.BadInput(err)
	}
	return rs, nil
}

type parser struct{ name string }

func (p *parser) errf(line int, format string, a ...any) error {
	if line > 0 {
		return fmt.Errorf("%s:%d: %s", p.name, line, fmt.Sprintf(format, a...))
	}
	return fmt.Errorf("%s: %s", p.name, fmt.Sprintf(format, a...))
}

func (p *parser) parse(data []byte) (*Rules, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf(0, "the rules file is empty; it needs a `rules:` list (see 'dlqctl help rules')")
		}
		return nil, p.yamlErr(err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root.Line, "the rules file must be a mapping with a `rules:` list (see 'dlqctl help rules')")
	}
	rs := &Rules{Source: p.name, Default: Outcome{Class: ClassUnknown, Action: ActionInvestigate}}
	var rulesNode *yaml.Node
	var opts BuiltinOptions
	var sources []SourceExpectation
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "rules":
			if v.Kind != yaml.SequenceNode {
				return nil, p.errf(v.Line, "`rules` must be a list of rules")
			}
			rulesNode = v
		case "default":
			if err := p.parseDefault(v, rs); err != nil {
				return nil, err
			}
		case "builtin":
			o, err := p.parseBuiltin(v)
			if err != nil {
				return nil, err
			}
			opts = o
		case "sources":
			srcs, err := p.parseSources(v)
			if err != nil {
				return nil, err
			}
			sources = srcs
		case "version":
			if v.Value != "1" {
				return nil, p.errf(v.Line, "unsupported rules file version %q; this dlqctl reads version 1", v.Value)
			}
		default:
			return nil, p.errf(k.Line, "unknown key %q; a rules file has rules, default, builtin, sources and version", k.Value)
		}
	}
	if rulesNode == nil {
		return nil, p.errf(root.Line, "no `rules:` list; add at least one rule or `- include: builtin`")
	}
	if len(rulesNode.Content) == 0 {
		return nil, p.errf(rulesNode.Line, "`rules` is empty; add at least one rule or `- include: builtin`")
	}
	opts.Sources = sources
	builtins := builtinRules(opts)
	names := map[string]int{}
	add := func(r *Rule, line int) error {
		if prev, dup := names[r.Name]; dup {
			return p.errf(line, "duplicate rule name %q (first used on line %d); rule names must be unique", r.Name, prev)
		}
		names[r.Name] = line
		rs.Rules = append(rs.Rules, r)
		return nil
	}
	for _, n := range rulesNode.Content {
		if n.Kind != yaml.MappingNode {
			return nil, p.errf(n.Line, "each rule must be a mapping with name, when, class and action")
		}
		if inc := mapValue(n, "include"); inc != nil {
			if len(n.Content) != 2 {
				return nil, p.errf(n.Line, "an include entry has only `include:`; put other fields in a rule of their own")
			}
			picked, err := p.include(inc, builtins)
			if err != nil {
				return nil, err
			}
			for _, b := range picked {
				r := *b
				r.Line = inc.Line
				if err := add(&r, inc.Line); err != nil {
					return nil, err
				}
			}
			continue
		}
		r, err := p.parseRule(n)
		if err != nil {
			return nil, err
		}
		if err := add(r, n.Line); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// yamlErr turns a yaml.v3 error ("yaml: line 3: did not find expected key")
// into "FILE:3: did not find expected key".
func (p *parser) yamlErr(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
		if i := strings.Index(msg, ":"); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
		return p.errf(line, "not valid YAML: %s", msg)
	}
	return p.errf(0, "not valid YAML: %s", msg)
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func (p *parser) scalar(k, v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", p.errf(v.Line, "`%s` must be a single value", k.Value)
	}
	return strings.TrimSpace(v.Value), nil
}

func (p *parser) parseRule(n *yaml.Node) (*Rule, error) {
	r := &Rule{Line: n.Line}
	whenLine := n.Line
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		s, err := p.scalar(k, v)
		if err != nil {
			return nil, err
		}
		switch k.Value {
		case "name":
			r.Name = s
		case "when":
			r.When, whenLine = s, v.Line
		case "class":
			r.Class = s
		case "action":
			r.Action = s
		case "note":
			r.Note = s
		default:
			return nil, p.errf(k.Line, "unknown rule field %q; a rule has name, when, class, action and note", k.Value)
		}
	}
	label := "rule"
	if r.Name != "" {
		label = fmt.Sprintf("rule %q", r.Name)
	}
	switch {
	case r.Name == "":
		return nil, p.errf(n.Line, "rule without a name; give every rule a unique `name`")
	case !validName(r.Name):
		return nil, p.errf(n.Line, "%s: names may use letters, digits, '-', '_', '.', '/' and ':' only", label)
	case r.Name == DefaultRuleName:
		return nil, p.errf(n.Line, "%s: %q is reserved for the default outcome; pick another name", label, DefaultRuleName)
	case r.When == "":
		return nil, p.errf(n.Line, "%s has no `when` expression; use `when: \"true\"` to match everything", label)
	case r.Class == "":
		return nil, p.errf(n.Line, "%s has no `class`", label)
	case !validName(r.Class):
		return nil, p.errf(n.Line, "%s: class %q may use letters, digits, '-', '_', '.', '/' and ':' only", label, r.Class)
	case r.Action == "":
		return nil, p.errf(n.Line, "%s has no `action`; use one of %s", label, strings.Join(Actions, ", "))
	case !validAction(r.Action):
		return nil, p.errf(actionLine(n), "%s: unknown action %q; use one of %s", label, r.Action, strings.Join(Actions, ", "))
	}
	e, err := inspect.CompileExpr(r.When)
	if err != nil {
		return nil, p.errf(whenLine, "%s: `when` does not compile: %s", label, exprReason(err, r.When))
	}
	r.m = exprMatcher{e}
	return r, nil
}

func actionLine(n *yaml.Node) int {
	if v := mapValue(n, "action"); v != nil {
		return v.Line
	}
	return n.Line
}

// exprReason strips the expression (already shown by the caller) from a
// compile error.
func exprReason(err error, src string) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, fmt.Sprintf("invalid expression %q: ", src))
	msg = strings.TrimSuffix(msg, "; see `dlqctl help filters`")
	return msg + " (see `dlqctl filters`)"
}

func (p *parser) parseDefault(v *yaml.Node, rs *Rules) error {
	if v.Kind != yaml.MappingNode {
		return p.errf(v.Line, "`default` must be a mapping with class and action")
	}
	rs.DefaultLine = v.Line
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		s, err := p.scalar(k, val)
		if err != nil {
			return err
		}
		switch k.Value {
		case "class":
			if !validName(s) {
				return p.errf(val.Line, "default class %q may use letters, digits, '-', '_', '.', '/' and ':' only", s)
			}
			rs.Default.Class = s
		case "action":
			if !validAction(s) {
				return p.errf(val.Line, "default: unknown action %q; use one of %s", s, strings.Join(Actions, ", "))
			}
			rs.Default.Action = s
		case "note":
			rs.Default.Note = s
		default:
			return p.errf(k.Line, "unknown default field %q; default has class, action and note", k.Value)
		}
	}
	return nil
}

func (p *parser) parseBuiltin(v *yaml.Node) (BuiltinOptions, error) {
	var o BuiltinOptions
	if v.Kind != yaml.MappingNode {
		return o, p.errf(v.Line, "`builtin` must be a mapping with event_versions and/or schema_refs")
	}
	list := func(k, val *yaml.Node) ([]string, error) {
		if val.Kind != yaml.SequenceNode {
			return nil, p.errf(val.Line, "`%s` must be a list", k.Value)
		}
		var out []string
		for _, it := range val.Content {
			if it.Kind != yaml.ScalarNode || strings.TrimSpace(it.Value) == "" {
				return nil, p.errf(it.Line, "`%s` entries must be single values", k.Value)
			}
			out = append(out, strings.TrimSpace(it.Value))
		}
		return out, nil
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		var err error
		switch k.Value {
		case "event_versions":
			o.EventVersions, err = list(k, val)
			if err == nil && len(o.EventVersions) == 0 {
				err = p.errf(val.Line, "`event_versions` is empty; list the versions consumers support or remove the key")
			}
		case "schema_refs":
			o.SchemaRefs, err = list(k, val)
		default:
			err = p.errf(k.Line, "unknown builtin option %q; use event_versions or schema_refs", k.Value)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// parseSources reads the `sources:` list: what body each source's
// consumer expects.
//
//	sources:
//	  - queue: orders
//	    expects: json
//	  - queue: "legacy-*"
//	    expects: [csv, text]
func (p *parser) parseSources(v *yaml.Node) ([]SourceExpectation, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, p.errf(v.Line, "`sources` must be a list of {queue, expects} entries")
	}
	var out []SourceExpectation
	for _, n := range v.Content {
		if n.Kind != yaml.MappingNode {
			return nil, p.errf(n.Line, "each `sources` entry must be a mapping with queue and expects")
		}
		s := SourceExpectation{Line: n.Line}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "queue":
				q, err := p.scalar(k, val)
				if err != nil {
					return nil, err
				}
				if q == "" {
					return nil, p.errf(val.Line, "`queue` is empty; give the source queue's name, URL or ARN (globs such as orders-* work)")
				}
				if _, err := path.Match(queueName(q), ""); err != nil {
					return nil, p.errf(val.Line, "`queue` %q is not a valid glob: %v", q, err)
				}
				s.Queue = q
			case "expects":
				items := []*yaml.Node{val}
				if val.Kind == yaml.SequenceNode {
					items = val.Content
				}
				for _, it := range items {
					e := strings.ToLower(strings.TrimSpace(it.Value))
					if it.Kind != yaml.ScalarNode || !validExpect(e) {
						return nil, p.errf(it.Line, "`expects` %q is not a payload encoding; use %s (layers such as base64/json too)", it.Value, strings.Join(ExpectEncodings, ", "))
					}
					s.Expects = append(s.Expects, e)
				}
			default:
				return nil, p.errf(k.Line, "unknown sources field %q; an entry has queue and expects", k.Value)
			}
		}
		switch {
		case s.Queue == "":
			return nil, p.errf(n.Line, "a `sources` entry has no `queue`; name the source queue its consumer reads")
		case len(s.Expects) == 0:
			return nil, p.errf(n.Line, "the `sources` entry for %s has no `expects`; say what its consumer reads, e.g. `expects: json`", s.Queue)
		}
		out = append(out, s)
	}
	return out, nil
}

// include resolves `include: builtin` (all built-in rules) or
// `include: builtin/NAME` (one of them).
func (p *parser) include(v *yaml.Node, builtins []*Rule) ([]*Rule, error) {
	if v.Kind != yaml.ScalarNode {
		return nil, p.errf(v.Line, "`include` takes `builtin` or `builtin/RULE`")
	}
	s := strings.TrimSpace(v.Value)
	if s == "builtin" {
		return builtins, nil
	}
	if name, ok := strings.CutPrefix(s, "builtin/"); ok {
		for _, b := range builtins {
			if b.Name == name {
				return []*Rule{b}, nil
			}
		}
	}
	var names []string
	for _, b := range builtins {
		names = append(names, "builtin/"+b.Name)
	}
	return nil, p.errf(v.Line, "cannot include %q; use builtin or one of %s", s, strings.Join(names, ", "))
}
