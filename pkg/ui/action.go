package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// Options are what `dlqctl ui`'s flags say about the actions.
type Options struct {
	// ReadOnly: no action keys at all.
	ReadOnly bool
	// NoColor: plain text (NO_COLOR, --no-color, TERM=dumb).
	NoColor bool
	// To is redrive's --to ("" or "source": each message's source).
	To string
	// Canary is how many messages the canary moves (default 10).
	Canary int
	// VerifyFor is the canary's --verify-for (0: the broker's window).
	VerifyFor time.Duration
	// Ramp and RampEvery are redrive's --ramp and --ramp-every ("": no ramp).
	Ramp      string
	RampEvery time.Duration
	// ArchiveTo is archive's --to s3://BUCKET/PREFIX ("": no archive key).
	ArchiveTo string
	// Global are the global flags to pass on to every child run
	// (--endpoint-url, --state-dir, --region, …), as given.
	Global []string
	// Now is the reference time for ages (tests; default time.Now).
	Now func() time.Time
}

// selection is what an action acts on.
type selection struct {
	// What describes it in words ("group error = …", "3 marked messages").
	What string
	// Args are the selection flags (--class C, --filter EXPR).
	Args []string
	// N is how many of the messages read it holds (0: unknown, a typed
	// filter); Partial is true when it names only the messages read of a
	// group that holds more.
	N       int
	Partial bool
	// Of is the group's size in the read (with Partial).
	Of int
}

// idsFilter is the --filter that selects exactly these message ids.
func idsFilter(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = strconv.Quote(id)
	}
	return ".message_id | IN(" + strings.Join(q, ", ") + ")"
}

// LowConfidence is the suffix of a class group whose decisions are below
// --min-confidence (--class does not select them).
const LowConfidence = " (low confidence)"

// groupSelection is the selection of group g under key k: the exact
// selection flags where one exists (--class, a filter on the field the key
// reads), else the ids of the messages read.
func groupSelection(k int, g *group, total int, complete bool) selection {
	key := GroupKeys[k].Name
	s := selection{What: fmt.Sprintf("group %s = %s", key, g.Value), N: g.Count}
	quoted := strconv.Quote(g.Value)
	none := g.Value == inspect.None
	switch GroupKeys[k].Key {
	case "class":
		if !strings.HasSuffix(g.Value, LowConfidence) {
			s.Args = []string{"--class", g.Value}
			return s
		}
	case "source":
		if none {
			s.Args = []string{"--filter", `.system.source_queue == ""`}
		} else {
			s.Args = []string{"--filter", ".system.source_queue == " + quoted}
		}
		return s
	case "event_type":
		if none {
			s.Args = []string{"--filter", `(.envelope.event_type // "") == ""`}
		} else {
			s.Args = []string{"--filter", ".envelope.event_type == " + quoted}
		}
		return s
	case "encoding":
		if none {
			s.Args = []string{"--filter", `(.payload_encoding // "") == ""`}
		} else {
			s.Args = []string{"--filter", ".payload_encoding == " + quoted}
		}
		return s
	}
	// No field says it exactly (an error fingerprint, a tenant read from
	// several places): the ids of the messages read.
	s.Args = []string{"--filter", idsFilter(g.IDs)}
	s.N = len(g.IDs)
	s.Partial, s.Of = len(g.IDs) < g.Count || !complete, g.Count
	return s
}

// markedSelection selects marked message ids.
func markedSelection(marked map[string]bool) selection {
	ids := make([]string, 0, len(marked))
	for id := range marked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return selection{What: fmt.Sprintf("%d marked message(s)", len(ids)), Args: []string{"--filter", idsFilter(ids)}, N: len(ids)}
}

// actionKind is one of the actions.
type actionKind int

const (
	actDryRun actionKind = iota
	actCanary
	actRedrive
	actArchive
)

func (k actionKind) String() string {
	return [...]string{"dry run", "canary", "redrive", "archive"}[k]
}

// action is a command line ready to confirm and run.
type action struct {
	Kind actionKind
	Sel  selection
	// Args are dlqctl's arguments (without the program name).
	Args []string
}

// buildAction builds the command line of kind on sel for the DLQ ref.
func buildAction(kind actionKind, ref string, sel selection, o Options) action {
	var a []string
	switch kind {
	case actArchive:
		a = []string{"archive", ref, "--to", o.ArchiveTo}
		a = append(a, sel.Args...)
		a = append(a, "--delete")
	default:
		a = []string{"redrive", ref}
		a = append(a, sel.Args...)
		if o.To != "" && o.To != "source" {
			a = append(a, "--to", o.To)
		}
		switch kind {
		case actDryRun:
			a = append(a, "--dry-run")
		case actCanary:
			n := o.Canary
			if n <= 0 {
				n = 10
			}
			if sel.N > 0 && n > sel.N {
				n = sel.N
			}
			a = append(a, "--canary", strconv.Itoa(n))
			if o.VerifyFor > 0 {
				a = append(a, "--verify-for", o.VerifyFor.String())
			}
		case actRedrive:
			if o.Ramp != "" {
				a = append(a, "--ramp", o.Ramp)
				if o.RampEvery > 0 {
					a = append(a, "--ramp-every", o.RampEvery.String())
				}
			}
		}
	}
	a = append(a, o.Global...)
	if kind != actDryRun {
		a = append(a, "--yes")
	}
	a = append(a, "-o", "ndjson")
	return action{Kind: kind, Sel: sel, Args: a}
}

// CommandLine is args as one shell command line starting with dlqctl,
// quoted for a POSIX shell (copyable into a terminal or a runbook), with
// the password of a reference (amqp://USER:PASS@…) shown as ***: the
// commands take it from DLQCTL_AMQP_PASSWORD as well.
func CommandLine(args []string) string {
	parts := []string{"dlqctl"}
	for _, a := range args {
		parts = append(parts, shellQuote(maskPassword(a)))
	}
	return strings.Join(parts, " ")
}

// maskPassword replaces the password of a URL argument with ***.
func maskPassword(a string) string {
	i := strings.Index(a, "://")
	if i < 0 {
		return a
	}
	at := strings.Index(a[i+3:], "@")
	if at < 0 {
		return a
	}
	userinfo := a[i+3 : i+3+at]
	if strings.ContainsAny(userinfo, "/?#") {
		return a // the @ is in the path, not credentials
	}
	user, _, ok := strings.Cut(userinfo, ":")
	if !ok {
		return a
	}
	return a[:i+3] + user + ":***" + a[i+3+at:]
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
