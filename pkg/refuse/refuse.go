// Package refuse decides, before anything connects, whether a broker can
// honour the flags a command was given, and words the refusal.
//
// Each row of Table says what a flag needs of a broker (a broker.Need,
// read from the broker's Capabilities) and of which of the command's
// references: the queue it reads (Source), the one it sends to (Dest), or
// any of them (Any: a broker's own connection flags). The refusal sentence
// is generated from the row for every broker that lacks the need:
//
//	--delete-records needs a broker that deletes records by offset (Kafka);
//	Amazon SQS removes messages one by one: drop --delete-records
//
// cmd checks a command's flags right after its references are parsed
// (Checker.Command, from root's PersistentPreRunE), and again with the
// resolved queue's capabilities where they depend on it (Checker.Resolved).
// The package knows no broker package and no flag library: the brokers'
// capabilities come in a Checker, the flags as Given values.
package refuse

import (
	"sort"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Role is which of a command's references a flag needs something of.
type Role int

const (
	// Source: the queue or topic the command reads.
	Source Role = iota + 1
	// Dest: the queue or topic the command sends to.
	Dest
	// Any: any reference of the command (a broker's connection flags).
	Any
)

// Row is one row of the table.
type Row struct {
	// Flag is the flag's name, without "--".
	Flag string
	// Value, when set, limits the row to that value ("--engine native").
	Value string
	// Cmds, when set, limits the row to these commands (their paths
	// without "dlqctl ": "audit", "redrive status").
	Cmds []string
	Role Role
	Need broker.Need
	// Instead is the way out; "drop --FLAG" when empty.
	Instead string
}

// Ref is one reference of a command: its broker and how it is shown.
type Ref struct {
	Broker  string
	Display string
	Role    Role
	// Caps, when set, are the resolved queue's (Checker.Resolved); else
	// the broker's before anything connects.
	Caps *broker.Capabilities
}

// Given is a flag the user set, with its value as the flag prints it.
type Given struct {
	Name  string
	Value string
}

// Checker applies the table to the brokers dlqctl speaks, with their
// capabilities as known before anything connects.
type Checker struct {
	Brokers []broker.Capabilities
}

// Caps returns the capabilities of broker id before anything connects.
func (k Checker) Caps(id string) (broker.Capabilities, bool) {
	for _, c := range k.Brokers {
		if c.Broker == id {
			return c, true
		}
	}
	return broker.Capabilities{}, false
}

// HaveLabels names the brokers that have need ("Amazon SQS and RabbitMQ").
func (k Checker) HaveLabels(need broker.Need) string {
	var have []string
	for _, c := range k.Brokers {
		if need.Has(c) {
			have = append(have, c.Label)
		}
	}
	switch len(have) {
	case 0:
		return ""
	case 1:
		return have[0]
	}
	return strings.Join(have[:len(have)-1], ", ") + " and " + have[len(have)-1]
}

// NeedsFor returns the rows for flag of command cmd.
func NeedsFor(cmd, flag string) []Row {
	var out []Row
	for _, n := range Table {
		if n.Flag != flag {
			continue
		}
		if len(n.Cmds) > 0 && !contains(n.Cmds, cmd) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// Refusal is row n's sentence for flag (as typed) on caps.
func (k Checker) Refusal(n Row, flag string, caps broker.Capabilities) error {
	instead := n.Instead
	if instead == "" {
		instead = "drop --" + n.Flag
	}
	have := ""
	if n.Role != Any {
		have = k.HaveLabels(n.Need)
	}
	return n.Need.Refusal(flag, caps, have, instead)
}

// Command refuses, in one sentence naming the broker (exit 2), the first
// flag of given (in the order of their names) that a broker of refs cannot
// honour for command cmd, and a redrive between two brokers.
func (k Checker) Command(cmd string, refs []Ref, given []Given) error {
	if len(refs) == 0 {
		return nil
	}
	if err := k.CrossBroker(cmd, refs); err != nil {
		return err
	}
	sorted := append([]Given(nil), given...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, g := range sorted {
		for _, n := range NeedsFor(cmd, g.Name) {
			if err := k.Check(n, g, refs); err != nil {
				return err
			}
		}
	}
	return nil
}

// Check applies row n to the flag as given and the command's references.
func (k Checker) Check(n Row, g Given, refs []Ref) error {
	flag := "--" + g.Name
	if n.Value != "" {
		if g.Value != n.Value {
			return nil
		}
		flag += " " + n.Value
	}
	var first *broker.Capabilities
	for _, r := range refs {
		if n.Role != Any && r.Role != n.Role {
			continue
		}
		caps, ok := k.Caps(r.Broker)
		if r.Caps != nil {
			caps, ok = *r.Caps, true
		}
		if !ok {
			continue
		}
		if n.Need.Has(caps) {
			if n.Role == Any {
				return nil
			}
			continue
		}
		if n.Role != Any {
			return k.Refusal(n, flag, caps)
		}
		if first == nil {
			first = &caps
		}
	}
	if first != nil {
		return k.Refusal(n, flag, *first)
	}
	return nil
}

// CrossBroker refuses a redrive whose destination is on another broker
// than its DLQ: redrive moves messages within one broker (archive and
// restore move them across).
func (k Checker) CrossBroker(cmd string, refs []Ref) error {
	if cmd != "redrive" {
		return nil
	}
	var src, dst *Ref
	for i := range refs {
		switch {
		case refs[i].Role == Source && src == nil:
			src = &refs[i]
		case refs[i].Role == Dest && dst == nil:
			dst = &refs[i]
		}
	}
	if src == nil || dst == nil || src.Broker == dst.Broker {
		return nil
	}
	sc, _ := k.Caps(src.Broker)
	dc, _ := k.Caps(dst.Broker)
	return errs.BadInputf("redrive moves messages within one broker: the DLQ %s is on %s and --to %s on %s; redrive --to source or to a destination on %s, or move them across with 'dlqctl archive' and 'dlqctl restore --to %s'",
		src.Display, sc.Label, dst.Display, dc.Label, sc.Label, dst.Display)
}

// Resolved checks the flags the user set (given) against a resolved
// queue's capabilities, for what depends on the queue itself (a RabbitMQ
// stream holds nothing); native says --engine native was asked for. The
// rows are those of the table about the queue read.
func (k Checker) Resolved(caps broker.Capabilities, given []Given, native bool) error {
	for _, n := range NeedsFor("", "engine") {
		if native && !n.Need.Has(caps) {
			return k.Refusal(n, "--"+n.Flag+" "+n.Value, caps)
		}
	}
	for _, g := range given {
		for _, n := range Table {
			if n.Flag != g.Name || len(n.Cmds) > 0 || n.Role != Source {
				continue
			}
			if err := k.Check(n, g, []Ref{{Broker: caps.Broker, Role: Source, Caps: &caps}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// ResolvedDest checks the flags the user set (given) for command cmd
// against its resolved destination's capabilities, for what depends on
// the queue itself (an SQS FIFO queue): the table's destination rows of
// cmd.
func (k Checker) ResolvedDest(cmd string, caps broker.Capabilities, given []Given) error {
	for _, g := range given {
		for _, n := range NeedsFor(cmd, g.Name) {
			if n.Role != Dest {
				continue
			}
			if err := k.Check(n, g, []Ref{{Broker: caps.Broker, Role: Dest, Caps: &caps}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Only is what the help of flag of command cmd adds to say which brokers
// honour it ("(Kafka only)", from the same rows the refusals come from),
// or "" when every broker or none does, or the help (usage) already starts
// with the one broker's name.
func (k Checker) Only(cmd, flag, usage string) string {
	rows := NeedsFor(cmd, flag)
	if len(rows) == 0 {
		return ""
	}
	var have []string
	for _, b := range k.Brokers {
		ok := true
		for _, n := range rows {
			ok = ok && n.Need.Has(b)
		}
		if ok {
			have = append(have, b.Label)
		}
	}
	if len(have) == 0 || len(have) == len(k.Brokers) {
		return ""
	}
	if len(have) == 1 && strings.HasPrefix(usage, strings.TrimPrefix(have[0], "Amazon ")) {
		return ""
	}
	only := strings.Join(have, " and ")
	if rows[0].Value != "" {
		only = "--" + flag + " " + rows[0].Value + ": " + only
	}
	return " (" + only + " only)"
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// RestoreToSource checks the flags of restore --to source (given) against
// the broker of the archived DLQ (caps, shown as display), once its
// manifest named it: every row of restore, as Command checks them before
// anything connects for a named --to, but those that need the destination
// to name its own DLQ (the canary's). With --to source that DLQ is the
// archived one itself, which the canary watches as redrive --to source's
// does: the redrive rows decide those flags.
func (k Checker) RestoreToSource(caps broker.Capabilities, display string, given []Given) error {
	var rest, canary []Given
	for _, g := range given {
		watchesDestDLQ := false
		for _, n := range NeedsFor("restore", g.Name) {
			watchesDestDLQ = watchesDestDLQ || n.Need.What == broker.NeedDestinationDLQ.What
		}
		if watchesDestDLQ {
			canary = append(canary, g)
		} else {
			rest = append(rest, g)
		}
	}
	dest := Ref{Broker: caps.Broker, Display: display, Role: Dest, Caps: &caps}
	if err := k.Command("restore", []Ref{dest}, rest); err != nil {
		return err
	}
	src := dest
	src.Role = Source
	return k.Command("redrive", []Ref{src, dest}, canary)
}
