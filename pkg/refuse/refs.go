package refuse

import (
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// RefsFunc returns a command's references from its positional arguments
// and its flags' values (flag returns "" for a flag it does not have).
type RefsFunc func(args []string, flag func(name string) string) []Ref

// CommandRefs says, for every command (its path without "dlqctl "),
// where its references are: which positional arguments and flags name the
// queues it reads and sends to. A command missing here fails cmd's
// TestEveryFlagDeclaresItsBrokers.
var CommandRefs = map[string]RefsFunc{
	"sample":   argRefs(Source, false),
	"group":    argRefs(Source, false),
	"classify": argRefs(Source, false),
	"redrive": func(args []string, flag func(string) string) []Ref {
		refs := argRefs(Source, false)(args, flag)
		to := flag("to")
		switch {
		case strings.EqualFold(strings.TrimSpace(to), "source") || to == "":
			// Each message goes back to its source, on the DLQ's broker.
			for _, r := range refs {
				refs = append(refs, Ref{Broker: r.Broker, Display: r.Display, Role: Dest})
			}
		default:
			refs = append(refs, ParseRefs(Dest, to)...)
		}
		return refs
	},
	"redrive resume": func(_ []string, flag func(string) string) []Ref { return ParseRefs(Source, flag("dlq")) },
	"redrive status": argRefs(Source, false),
	"redrive cancel": argRefs(Source, false),
	"archive":        argRefs(Source, false),
	"archive verify": noRefs,
	"restore": func(_ []string, flag func(string) string) []Ref {
		if strings.EqualFold(strings.TrimSpace(flag("to")), "source") {
			// The archived DLQ's broker, known once the manifest is read
			// (the command checks the flags against it then).
			return nil
		}
		return ParseRefs(Dest, flag("to"))
	},
	"queues": argRefs(Source, true),
	"audit":  argRefs(Source, true),
	"check":  argRefs(Source, false),
	"watch":  argRefs(Source, false),
	"doctor": func(args []string, flag func(string) string) []Ref {
		return append(argRefs(Source, true)(args, flag), ParseRefs(Dest, flag("to"))...)
	},
	"runs":       noRefs,
	"filters":    noRefs,
	"exit-codes": noRefs,
	"addresses":  noRefs,
	"ui":         argRefs(Source, true),
}

func noRefs([]string, func(string) string) []Ref { return nil }

// argRefs: the positional arguments are references; orSQS: with none, the
// command looks at SQS (queues, audit, doctor without arguments).
func argRefs(role Role, orSQS bool) RefsFunc {
	return func(args []string, _ func(string) string) []Ref {
		if len(args) == 0 && orSQS {
			return []Ref{{Broker: broker.SQS, Display: "the account's SQS queues", Role: role}}
		}
		return ParseRefs(role, args...)
	}
}

// ParseRefs parses references the way every command does; one that does
// not parse is left to the command, which says why.
func ParseRefs(role Role, raw ...string) []Ref {
	var out []Ref
	for _, s := range raw {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if r, err := broker.ParseRef(s); err == nil {
			out = append(out, Ref{Broker: r.Broker, Display: r.Display, Role: role})
		}
	}
	return out
}
