package inspect

import (
	"strings"
	"sync"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Chain is what a failure text says once its wrappers are peeled: the
// outermost exception (Head) and, when the text chains causes, the root
// cause (Root) and the causes in between.
type Chain struct {
	// Head is the outermost exception line ("pkg.Wrapper: message").
	Head string
	// Root is the innermost cause ("" when the text chains nothing):
	// Java's last "Caused by:", .NET's innermost "--->", the first
	// exception of a chained Python traceback (or its final exception
	// line), PHP's first exception before the "Next" wrappers, Rust's
	// last "Caused by:" entry, Node's last "[cause]:", the last part of a
	// Go-style "a: b: c" wrapped error.
	Root string
	// Middle are the causes between Head and Root.
	Middle []string
	// Group are the parts of an exception group, every one a root cause:
	// Python's ExceptionGroup sub-exceptions, .NET AggregateException's
	// "(Inner Exception #N)" entries, Node's AggregateError "[errors]".
	// All transient means transient; any other part means not transient.
	Group []string
	// Trace is true when the text is a stack trace or traceback (frames).
	Trace bool
}

// maxChainScan caps how much of a text chain analysis reads.
const maxChainScan = 64 << 10

// ParseChain reads the exception chain of a failure text: a stack trace,
// traceback or one-line wrapped error of Java, .NET, Python, Go, Node,
// Ruby, PHP, Elixir or Rust.
func ParseChain(text string) Chain {
	if len(text) > maxChainScan {
		text = text[:maxChainScan]
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if !strings.Contains(text, "\n") {
		return oneLineChain(headLine(strings.TrimSpace(text)))
	}
	lines := strings.Split(text, "\n")
	var c Chain
	switch {
	case strings.Contains(text, "Exception Group Traceback") || strings.Contains(text, "+-+----"):
		return pythonGroupChain(lines)
	case strings.Contains(text, "Traceback (most recent call last)"):
		return pythonChain(lines)
	case strings.Contains(text, "\nNext ") && phpTrace(text):
		return phpChain(lines)
	}
	var causes []string
	rustCauses, inErrors := false, false
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		switch {
		case l == "":
			continue
		case c.Head == "" && strings.Contains(l, ":in `") && strings.Contains(l, "': "):
			c.Head, c.Trace = headLine(l), true // Ruby: the first line is the raise site and the error
			continue
		case isFrame(l):
			c.Trace = true
			continue
		case c.Head == "":
			c.Head = headLine(l)
			if strings.HasPrefix(l, "panic: ") {
				c.Trace = true
			}
			// .NET: "X: msg ---> Y: msg2" on the first line
			if strings.Contains(l, "--->") {
				parts := strings.Split(l, "--->")
				c.Head = strings.TrimSpace(parts[0])
				for _, p := range parts[1:] {
					if p = strings.TrimSpace(p); p != "" {
						causes = append(causes, p)
					}
				}
			}
			continue
		}
		switch {
		case strings.HasPrefix(l, "Caused by:"):
			cause := strings.TrimSpace(strings.TrimPrefix(l, "Caused by:"))
			if cause == "" {
				rustCauses = true // anyhow: "Caused by:" then indented entries
				continue
			}
			causes = append(causes, cause)
		case strings.HasPrefix(l, "--->"):
			cause := strings.TrimSpace(strings.TrimPrefix(l, "--->"))
			if part, ok := innerExceptionN(cause); ok {
				c.Group = appendPart(c.Group, part)
				continue
			}
			causes = append(causes, cause)
		case strings.HasPrefix(l, "[errors]:"):
			inErrors = true // Node AggregateError: the parts follow, one exception per entry
		case inErrors && (l == "]" || strings.HasPrefix(l, "]")):
			inErrors = false
		case inErrors:
			if typ, _ := splitTypeMessage(l); typ != "" && exceptionTypeName(typ) {
				c.Group = appendPart(c.Group, strings.TrimSuffix(l, " {"))
			}
		case strings.HasPrefix(l, "[cause]:"):
			causes = append(causes, strings.TrimSpace(strings.TrimPrefix(l, "[cause]:")))
		case strings.HasPrefix(l, "cause: ") && c.Trace:
			// Node before 20 prints an error's cause as "cause: X: msg {"
			if cause := strings.TrimSuffix(strings.TrimSpace(l[len("cause: "):]), " {"); cause != "" {
				if typ, _ := splitTypeMessage(cause); typ != "" {
					causes = append(causes, cause)
				}
			}
		case strings.HasPrefix(l, "caused by:") || strings.HasPrefix(l, "Caused By:"):
			causes = append(causes, strings.TrimSpace(l[len("caused by:"):]))
		case rustCauses && (raw != l || i > 0) && (strings.HasPrefix(raw, " ") || strings.HasPrefix(raw, "\t")):
			causes = append(causes, strings.TrimSpace(trimIndex(l)))
		case strings.HasPrefix(l, "--- End of") || strings.HasPrefix(l, "Suppressed:") || strings.HasPrefix(l, "..."):
		case strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "Stack trace:") || strings.HasPrefix(l, "stack backtrace:"):
			c.Trace = true
		}
	}
	c.setCauses(causes)
	if c.Root == "" {
		if d := grpcDesc(text); d != "" {
			c.Root = d
		} else if d := grpcCodePrefix(c.Head); d != "" {
			c.Root = d
		}
	}
	if c.Root == "" && !c.Trace {
		// Lines of text that are not a trace: the first one may be a
		// one-line chain.
		oc := oneLineChain(c.Head)
		c.Root, c.Middle = oc.Root, oc.Middle
	}
	return c
}

// innerExceptionN reads a .NET AggregateException part "(Inner
// Exception #1) X: msg" (the "<---" that ends it dropped).
func innerExceptionN(l string) (string, bool) {
	if !strings.HasPrefix(l, "(Inner Exception #") {
		return "", false
	}
	i := strings.IndexByte(l, ')')
	if i < 0 {
		return "", false
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l[i+1:]), "<---")), true
}

// appendPart adds an exception group part once (at most 8 parts).
func appendPart(parts []string, p string) []string {
	p = strings.TrimSpace(p)
	if p == "" || len(parts) >= 8 {
		return parts
	}
	for _, q := range parts {
		if q == p {
			return parts
		}
	}
	return append(parts, p)
}

// pythonGroupChain reads an ExceptionGroup traceback (Python 3.11+): the
// group's line, then each sub-exception in a box of "|" lines. Every
// sub-exception that is not itself a group is a part (its own chained
// tracebacks, if any, are read by pythonChain).
func pythonGroupChain(lines []string) Chain {
	c := Chain{Trace: true}
	var block []string
	flush := func() {
		if len(block) == 0 {
			return
		}
		sub := pythonChain(block)
		root := sub.Root
		if root == "" {
			root = sub.Head
		}
		typ, _ := splitTypeMessage(sub.Head)
		switch {
		case strings.HasSuffix(typ, "ExceptionGroup"):
			if c.Head == "" {
				c.Head = sub.Head
			}
		case root != "":
			c.Group = appendPart(c.Group, root)
		}
		block = block[:0]
	}
	for _, raw := range lines {
		// Strip the box: leading spaces, then "| " (a line) or "+" (a rule
		// between sub-exceptions).
		t := strings.TrimLeft(raw, " ")
		switch {
		case strings.HasPrefix(t, "+"):
			if !strings.Contains(t, "Exception Group Traceback") {
				flush()
			}
		case strings.HasPrefix(t, "| "):
			block = append(block, t[2:])
		case strings.HasPrefix(t, "|"):
		default:
			block = append(block, raw)
		}
	}
	flush()
	if len(c.Group) > 0 {
		c.Root = c.Group[0]
	}
	return c
}

func (c *Chain) setCauses(causes []string) {
	if len(c.Group) > 0 && c.Root == "" {
		c.Root = c.Group[0]
	}
	if len(causes) == 0 {
		return
	}
	c.Root = causes[len(causes)-1]
	c.Middle = causes[:len(causes)-1]
	// A cause may itself end in a one-line chain ("Caused by: X: a: b").
	if oc := oneLineChain(c.Root); oc.Root != "" && oc.Root != c.Root {
		// The whole cause line stays evidence (a cause): its exception
		// type may say more than the last part of its message.
		c.Middle = append(c.Middle[:len(c.Middle):len(c.Middle)], c.Root)
		c.Root = oc.Root
	}
}

// trimIndex drops an anyhow cause index ("0: ", "1: ").
func trimIndex(l string) string {
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i > 0 && strings.HasPrefix(l[i:], ": ") {
		return l[i+2:]
	}
	return l
}

// isFrame reports whether l is a stack frame of some runtime.
func isFrame(l string) bool {
	switch {
	case strings.HasPrefix(l, "at ") && (strings.Contains(l, "(") || strings.Contains(l, ":")): // Java, .NET, Node
		return true
	case strings.HasPrefix(l, "File \"") && strings.Contains(l, "line "): // Python
		return true
	case len(l) > 1 && l[0] == '#' && l[1] >= '0' && l[1] <= '9': // PHP
		return true
	case strings.HasPrefix(l, "from ") && strings.Contains(l, ":in "): // Ruby
		return true
	case strings.Contains(l, ".rb:") && strings.Contains(l, ":in "): // Ruby
		return true
	case strings.HasPrefix(l, "(") && strings.Contains(l, ".ex:"): // Elixir "(app 0.1.0) lib/x.ex:12: X.f/2"
		return true
	case strings.HasPrefix(l, "lib/") && strings.Contains(l, ".ex:"):
		return true
	case strings.HasSuffix(l, ")") && strings.Contains(l, ".go:"): // Go "/src/x.go:12 +0x1d"
		return true
	case strings.Contains(l, ".go:") && strings.Contains(l, " +0x"):
		return true
	case strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, "]:"):
		return true
	case len(l) > 2 && l[0] >= '0' && l[0] <= '9' && strings.Contains(l, ": ") && strings.Contains(l, "::") && !strings.Contains(l, " "+"error"): // Rust backtrace "12: tokio::runtime::..."
		return true
	case strings.HasPrefix(l, "^") || strings.HasPrefix(l, "~"): // Python 3.11 markers
		return true
	case strings.HasPrefix(l, "... ") && strings.HasSuffix(l, "more"): // Java "... 12 more"
		return true
	}
	return false
}

// headLine normalises the first line of a trace: Go's "panic: X", Ruby's
// "file.rb:12:in `m': message (Class)" and Elixir's "** (Type) message"
// become "Type: message".
func headLine(l string) string {
	l = strings.TrimPrefix(l, "panic: ")
	l = strings.TrimPrefix(l, "Uncaught ")
	l = strings.TrimPrefix(l, "PHP Fatal error:  Uncaught ")
	if strings.HasPrefix(l, "{%") || strings.HasPrefix(l, "%") && len(l) > 1 && l[1] >= 'A' && l[1] <= 'Z' {
		// Elixir: %Jason.DecodeError{position: 0, …} (or in a {reason, stack} tuple)
		r := strings.TrimPrefix(strings.TrimPrefix(l, "{"), "%")
		if i := strings.IndexByte(r, '{'); i > 0 && !strings.ContainsAny(r[:i], " ,") {
			return r[:i] + ": " + strings.TrimSpace(r[i+1:])
		}
	}
	if strings.HasPrefix(l, "** (") {
		if i := strings.Index(l, ") "); i > 4 {
			return l[4:i] + ": " + strings.TrimSpace(l[i+2:])
		}
	}
	if i := strings.Index(l, ":in `"); i > 0 && strings.HasSuffix(l, ")") {
		rest := l[i+5:]
		if j := strings.Index(rest, "': "); j >= 0 {
			msg := rest[j+3:]
			if k := strings.LastIndex(msg, " ("); k >= 0 {
				return msg[k+2:len(msg)-1] + ": " + msg[:k]
			}
		}
	}
	return l
}

// pythonChain reads a traceback: the exception line ends each block;
// chained blocks ("The above exception was the direct cause of the
// following exception:", "During handling of the above exception,
// another exception occurred:") are printed cause first.
func pythonChain(lines []string) Chain {
	c := Chain{Trace: true}
	var excs []string
	last := ""
	flush := func() {
		if last != "" {
			excs = append(excs, last)
			last = ""
		}
	}
	// The exception line is the first line after a traceback's frames that
	// is not indented; the lines after it continue its message (pydantic
	// prints its errors there).
	inFrames := false
	for _, raw := range lines {
		l := strings.TrimSpace(raw)
		switch {
		case l == "":
		case strings.HasPrefix(l, "The above exception was the direct cause") || strings.HasPrefix(l, "During handling of the above exception"):
			flush()
		case strings.HasPrefix(l, "Traceback (most recent call last)"):
			flush()
			inFrames = true
		case raw != "" && (raw[0] == ' ' || raw[0] == '\t'):
			// frames, source lines, markers, message continuations
		case inFrames || last == "":
			last, inFrames = l, false
		}
	}
	flush()
	if len(excs) == 0 {
		return c
	}
	c.Head = excs[len(excs)-1]
	if len(excs) > 1 {
		c.Root = excs[0]
		c.Middle = excs[1 : len(excs)-1]
	} else {
		// One traceback: its final exception line is the failure; a
		// one-line chain in it may still name a root cause.
		oc := oneLineChain(c.Head)
		c.Root, c.Middle = oc.Root, oc.Middle
	}
	return c
}

func phpTrace(text string) bool {
	return strings.Contains(text, "Stack trace:") || strings.Contains(text, "\n#0 ")
}

// phpChain: PHP prints the innermost (previous) exception first, then
// each wrapper after "Next ".
func phpChain(lines []string) Chain {
	c := Chain{Trace: true}
	var excs []string
	for _, raw := range lines {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || isFrame(l) || l == "Stack trace:" || strings.HasPrefix(l, "thrown in "):
		case strings.HasPrefix(l, "Next "):
			excs = append(excs, phpLine(strings.TrimPrefix(l, "Next ")))
		case len(excs) == 0:
			excs = append(excs, phpLine(headLine(l)))
		}
	}
	if len(excs) == 0 {
		return c
	}
	c.Head = excs[len(excs)-1]
	if len(excs) > 1 {
		c.Root = excs[0]
		c.Middle = excs[1 : len(excs)-1]
	}
	return c
}

// phpLine drops " in /path/file.php:12" from an exception line.
func phpLine(l string) string {
	if i := strings.LastIndex(l, " in /"); i > 0 && strings.Contains(l[i:], ".php") {
		return l[:i]
	}
	return l
}

// oneLineChain reads a chain written on one line: .NET "A: x ---> B: y",
// Spring "…; nested exception is B: y", "caused by: …", Node/VError
// "a: b: c", Go "a: b: c".
func oneLineChain(l string) Chain {
	c := Chain{Head: l}
	// gRPC status: "rpc error: code = ResourceExhausted desc = grpc:
	// received message larger than max (…)". The description says what
	// happened; it can override the code's usual meaning.
	if desc := grpcDesc(l); desc != "" {
		c.Root = desc
		return c
	}
	if desc := grpcCodePrefix(l); desc != "" {
		c.Root = desc
		return c
	}
	if !strings.Contains(l, "aused by") && !strings.Contains(l, "--->") && !strings.Contains(l, "nested exception is") && !strings.Contains(l, "[cause]") {
		if r := goChain(l); r != "" {
			c.Root = r
		}
		return c
	}
	// urllib3: "…: Max retries exceeded with url: /x (Caused by NewConnectionError(…))"
	if i := strings.LastIndex(l, "(Caused by "); i > 0 {
		root := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l[i+len("(Caused by "):]), ")"))
		if root != "" {
			c.Head, c.Root = strings.TrimSpace(l[:i]), root
			return c
		}
	}
	for _, sep := range [...]string{"--->", "; nested exception is ", "nested exception is ", " Caused by: ", " caused by: ", "; caused by: ", "[cause]: "} {
		if i := strings.LastIndex(l, sep); i > 0 {
			root := strings.TrimSpace(l[i+len(sep):])
			if root == "" {
				continue
			}
			c.Head = strings.TrimSpace(l[:strings.Index(l, sep)])
			c.Root = root
			if oc := goChain(root); oc != "" {
				c.Root = oc
			}
			return c
		}
	}
	if r := goChain(l); r != "" {
		c.Root = r
	}
	return c
}

// grpcDesc returns the description of a gRPC status written "code = X
// desc = Y" (Go's status.Error, grpc-gateway logs), without the "grpc: "
// prefix the library puts on its own errors; "" when l is not one.
func grpcDesc(l string) string {
	i := strings.Index(l, "desc = ")
	if i < 0 || !strings.Contains(l[:i], "code = ") {
		// grpcio: "status = StatusCode.X\n\tdetails = \"…\""
		j := strings.Index(l, "details = ")
		if j < 0 || !strings.Contains(l[:j], "StatusCode.") {
			return ""
		}
		d := l[j+len("details = "):]
		if k := strings.IndexByte(d, '\n'); k >= 0 {
			d = d[:k]
		}
		d = strings.Trim(strings.TrimSpace(d), `"`)
		if len(d) < 4 {
			return ""
		}
		return d
	}
	d := strings.TrimSpace(l[i+len("desc = "):])
	d = strings.TrimPrefix(d, "grpc: ")
	if len(d) < 4 {
		return ""
	}
	return d
}

// grpcCodes are the gRPC status code names, by number from 1 (0 is OK);
// the one table every reading of a gRPC code uses.
var grpcCodes = [...]string{"CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
	"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
	"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// grpcCodeText are the gRPC status codes by number as failure evidence
// writes them and the failure families read them ("code unavailable").
var grpcCodeText = func() (t [len(grpcCodes) + 1]string) {
	t[0] = "code ok"
	for i, name := range grpcCodes {
		t[i+1] = "code " + strings.ToLower(strings.ReplaceAll(name, "_", " "))
	}
	return t
}()

// GRPCCodePhrases returns how failure evidence writes the gRPC status
// codes numbered codes (grpc/doc/statuscodes.md: 14 → "code unavailable"),
// for rules that match them; it panics on a number gRPC does not define.
func GRPCCodePhrases(codes ...int) []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = grpcCodeText[c]
	}
	return out
}

// grpcCodePrefix returns the description of a gRPC status written "CODE:
// description" (grpc-java's StatusRuntimeException, grpc-js's "8
// RESOURCE_EXHAUSTED: …"), after an exception type if any; "" when l is
// not one or the description is empty.
func grpcCodePrefix(l string) string {
	msg := l
	if typ, rest := splitTypeMessage(l); typ != "" {
		msg = rest
	}
	// grpc-js: "14 UNAVAILABLE: …"
	if i := strings.IndexByte(msg, ' '); i > 0 && i <= 2 && isDigitsStr(msg[:i]) {
		msg = msg[i+1:]
	}
	if msg == "" || msg[0] < 'A' || msg[0] > 'Z' {
		return "" // every code is in capitals
	}
	for _, code := range grpcCodes {
		if strings.HasPrefix(msg, code) && strings.HasPrefix(msg[len(code):], ": ") {
			d := strings.TrimSpace(msg[len(code)+2:])
			if len(d) < 4 {
				return ""
			}
			return d
		}
	}
	return ""
}

// goChain returns the last part of a wrapped error "a: b: c" (at least
// two ": " separators, the wrappers short lower-case phrases as Go, Rust
// and VError write them) — or "" when l is not one. An exception type in
// front ("reqwest::Error: a: b: c") is read through; a final part that is
// only a value (a quoted string, a number) keeps the part before it.
func goChain(l string) string {
	msg := l
	if typ, rest := splitTypeMessage(l); typ != "" {
		msg = rest
	}
	if strings.Count(msg, ": ") < 2 || strings.ContainsAny(msg, "{}") {
		return "" // a debug dump ({kind: Request, url: …}), not a wrapped error
	}
	parts := strings.Split(msg, ": ")
	if len(parts) < 3 {
		return ""
	}
	for _, p := range parts[:len(parts)-1] {
		p = strings.TrimSpace(p)
		if strings.Count(p, "(") != strings.Count(p, ")") {
			return "" // a ": " inside parentheses ("(attempted address: h:443, timeout: 10000ms)")
		}
		if p == "" || len(p) > 120 || p[0] >= 'A' && p[0] <= 'Z' && strings.Contains(p, " ") && strings.HasSuffix(p, ".") {
			return "" // sentences, not wrappers
		}
	}
	last := strings.TrimSpace(parts[len(parts)-1])
	if valueOnly(last) && len(parts) > 1 {
		last = strings.TrimSpace(parts[len(parts)-2]) + ": " + last
	}
	return last
}

// valueOnly reports whether s is just a value: quoted, a number, very
// short.
func valueOnly(s string) bool {
	if len(s) < 4 {
		return true
	}
	if (s[0] == '\'' || s[0] == '"' || s[0] == '`') && s[len(s)-1] == s[0] {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' {
			return false
		}
	}
	return true
}

// TextEvidence records a failure text found at field as kind (type,
// message, cause or "stack"): a stack trace gives its head exception and
// its causes; any text that chains causes also gives its root cause
// (kind root_cause), which the failure families weigh before the
// wrapper's words.
func (d *Decoding) TextEvidence(field, kind, text string) {
	d.textEvidence(field, kind, text, false)
}

func (d *Decoding) textEvidence(field, kind, text string, weak bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	c := parseChainMemo(text)
	add := func(kind, t string) {
		if weak {
			d.WeakEvidence(field, kind, t)
		} else {
			d.Evidence(field, kind, t)
		}
	}
	switch {
	case kind == "stack" || c.Trace:
		if c.Head != "" {
			typ, msg := splitTypeMessage(c.Head)
			if kind == "stack" {
				// A trace under a stack key: its head is a cause line
				// (the message is usually read from another key).
				add(record.EvidenceCause, c.Head)
			} else if typ != "" {
				add(record.EvidenceType, typ)
				add(record.EvidenceMessage, msg)
			} else {
				add(kind, c.Head)
			}
		}
	case kind == record.EvidenceMessage || kind == record.EvidenceType:
		typ, msg := splitTypeMessage(c.Head)
		switch {
		case kind == record.EvidenceMessage && typ == "" && isTypeName(c.Head):
			add(record.EvidenceType, c.Head)
		case typ != "" && kind == record.EvidenceMessage:
			add(record.EvidenceType, typ)
			add(record.EvidenceMessage, msg)
		default:
			add(kind, text)
		}
	default:
		add(kind, text)
	}
	if !c.Trace && kind != "stack" && strings.Contains(text, "\n") {
		// Lines of text that are not a trace (an Azure SDK message with
		// "Status: 503" and "ErrorCode: ServerBusy" lines): all of it.
		add(record.EvidenceMessage, text)
	}
	for i, m := range c.Middle {
		if i >= 2 && i != len(c.Middle)-1 {
			continue // the two outermost causes and the innermost
		}
		add(record.EvidenceCause, m)
	}
	if c.Root != "" && c.Root != c.Head {
		add(record.EvidenceRootCause, c.Root)
	}
	for _, p := range c.Group {
		if p != c.Head {
			add(record.EvidenceRootCause, p)
		}
	}
}

// chainMemo holds the chains of failure texts parsed before: the same
// exception or trace comes back from message to message. bytes is the
// size of its keys.
type chainMemo struct {
	m     map[string]Chain
	bytes int
}

// Bounds of a chain memo: longer texts are parsed each time; a memo starts
// afresh past maxChainMemoBytes of texts.
const (
	maxChainMemoText  = 4 << 10
	maxChainMemoBytes = 1 << 20
)

// chainMemos are the memos of the decoding goroutines.
var chainMemos = sync.Pool{New: func() any { return &chainMemo{m: make(map[string]Chain)} }}

// parseChainMemo is ParseChain(text), from a memo when text was parsed
// before. A memo's chain is read, never changed, by its callers; its
// strings are parts of the memo's own copy of the text (never of a body).
func parseChainMemo(text string) Chain {
	if len(text) > maxChainMemoText {
		return ParseChain(text)
	}
	cm := chainMemos.Get().(*chainMemo)
	defer chainMemos.Put(cm)
	if c, ok := cm.m[text]; ok {
		return c
	}
	if cm.bytes+len(text) > maxChainMemoBytes {
		clear(cm.m)
		cm.bytes = 0
	}
	key := strings.Clone(text)
	c := ParseChain(key)
	cm.m[key] = c
	cm.bytes += len(key)
	return c
}

// WeakEvidence records failure evidence found by its look (an exception
// or a stack trace in a field not named as failure context): a hint the
// failure families weigh below evidence read from a failure field.
func (d *Decoding) WeakEvidence(field, kind, text string) {
	n := len(d.fail.Evidence)
	d.Evidence(field, kind, text)
	if len(d.fail.Evidence) > n {
		d.fail.Evidence[n].Weak = true
	}
}

// causeKeys chain a serialised error to its cause: Node's Error.cause,
// .NET's InnerException, Python's __cause__, Java's cause.
var causeKeys = [...]string{"cause", "Cause", "innerException", "InnerException", "inner", "rootCause", "__cause__", "causedBy", "caused_by", "inner_exception"}

// innermostCause follows an error object's cause chain and returns the
// innermost cause as "Type: message" ("" when the object has no cause).
func innermostCause(m map[string]any) string {
	cur, depth := m, 0
	for depth < 8 {
		var next any
		for _, k := range causeKeys {
			if v, ok := cur[k]; ok && v != nil {
				next = v
				break
			}
		}
		switch t := next.(type) {
		case map[string]any:
			cur, depth = t, depth+1
			continue
		case string:
			if depth == 0 && t == "" {
				return ""
			}
			return t
		}
		break
	}
	if depth == 0 {
		return ""
	}
	typ := str(cur, "name", "type", "ClassName", "className", "class", "code", "Code")
	msg := str(cur, "message", "Message", "msg", "detail")
	switch {
	case typ != "" && msg != "":
		return typ + ": " + msg
	case msg != "":
		return msg
	}
	return typ
}
