// Package iampolicy evaluates identity-based IAM policies the way IAM does
// for the parts dlqctl's documented policies use: Allow and Deny
// statements, Action / NotAction and Resource / NotResource as a string or
// a list, with the * and ? wildcards (actions match without regard to
// case, resources with it). An explicit Deny wins over any Allow; with no
// matching Allow the request is implicitly denied. Conditions are not
// evaluated: a policy with one is rejected by Parse rather than judged
// wrongly. It exists so tests can prove that docs/iam.md's role policies
// allow every call their runbooks make.
package iampolicy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Policy is an IAM policy document.
type Policy struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a policy.
type Statement struct {
	Sid         string          `json:"Sid"`
	Effect      string          `json:"Effect"`
	Action      List            `json:"Action"`
	NotAction   List            `json:"NotAction"`
	Resource    List            `json:"Resource"`
	NotResource List            `json:"NotResource"`
	Principal   json.RawMessage `json:"Principal"`
	Condition   json.RawMessage `json:"Condition"`
}

// List is a policy element that may be a string or a list of strings.
type List []string

// UnmarshalJSON accepts "x" or ["x", "y"].
func (l *List) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = List{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings, got %s", b)
	}
	*l = many
	return nil
}

// Parse reads a policy document and checks it is one this package can
// judge: Version 2012-10-17, every statement Allow or Deny with exactly one
// of Action/NotAction and one of Resource/NotResource, no Condition and no
// Principal (identity policies have none).
func Parse(doc []byte) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("policy: %w", err)
	}
	if p.Version != "2012-10-17" {
		return p, fmt.Errorf("policy: Version %q, want 2012-10-17 (the older version does not expand policy variables)", p.Version)
	}
	if len(p.Statement) == 0 {
		return p, fmt.Errorf("policy: no statements")
	}
	for i, s := range p.Statement {
		where := fmt.Sprintf("policy: statement %d (%s)", i, s.Sid)
		switch {
		case s.Effect != "Allow" && s.Effect != "Deny":
			return p, fmt.Errorf("%s: Effect %q, want Allow or Deny", where, s.Effect)
		case (len(s.Action) == 0) == (len(s.NotAction) == 0):
			return p, fmt.Errorf("%s: needs exactly one of Action and NotAction", where)
		case (len(s.Resource) == 0) == (len(s.NotResource) == 0):
			return p, fmt.Errorf("%s: needs exactly one of Resource and NotResource", where)
		case len(s.Condition) > 0:
			return p, fmt.Errorf("%s: Condition is not evaluated by this package", where)
		case len(s.Principal) > 0:
			return p, fmt.Errorf("%s: Principal belongs in resource policies, not identity policies", where)
		}
		for _, a := range append(append(List{}, s.Action...), s.NotAction...) {
			if a != "*" && !strings.Contains(a, ":") {
				return p, fmt.Errorf("%s: action %q is not service:Action", where, a)
			}
		}
	}
	return p, nil
}

// Decision is the outcome of evaluating one request.
type Decision struct {
	Allowed bool
	// By is the Sid (or index) of the deciding statement: the Deny that
	// matched, or the first Allow that matched; "" for an implicit deny.
	By string
}

func (d Decision) String() string {
	switch {
	case d.Allowed:
		return "allowed by " + d.By
	case d.By != "":
		return "explicitly denied by " + d.By
	}
	return "implicitly denied (no statement allows it)"
}

// Evaluate decides whether the policy allows action ("sqs:SendMessage")
// on resource (an ARN, or "*" for actions without a resource).
func (p Policy) Evaluate(action, resource string) Decision {
	allow := ""
	for i, s := range p.Statement {
		if !s.matches(action, resource) {
			continue
		}
		name := s.Sid
		if name == "" {
			name = fmt.Sprintf("statement %d", i)
		}
		if s.Effect == "Deny" {
			return Decision{Allowed: false, By: name}
		}
		if allow == "" {
			allow = name
		}
	}
	return Decision{Allowed: allow != "", By: allow}
}

func (s Statement) matches(action, resource string) bool {
	actionOK := false
	if len(s.Action) > 0 {
		actionOK = anyMatch(s.Action, action, true)
	} else {
		actionOK = !anyMatch(s.NotAction, action, true)
	}
	if !actionOK {
		return false
	}
	if len(s.Resource) > 0 {
		return anyMatch(s.Resource, resource, false)
	}
	return !anyMatch(s.NotResource, resource, false)
}

func anyMatch(patterns []string, v string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			if Match(strings.ToLower(p), strings.ToLower(v)) {
				return true
			}
		} else if Match(p, v) {
			return true
		}
	}
	return false
}

// Match reports whether s matches the IAM pattern p: * matches any run of
// characters (including none, and across ":" and "/"), ? exactly one.
func Match(p, s string) bool {
	// Iterative glob with backtracking to the last star.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
