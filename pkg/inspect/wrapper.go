package inspect

import (
	"strings"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// wrapperPhrases are exception messages that say only that a listener or
// handler threw, never what failed: Spring's ListenerExecutionFailedException
// (spring-kafka and spring-amqp: "Listener method '…' threw exception",
// "Listener failed", "Listener threw exception"), .NET's
// TargetInvocationException and AggregateException. Spring Framework 6
// no longer appends "; nested exception is …" to them, so the message of a
// Spring Boot 3 listener's failure is the wrapper's alone and the cause's
// message is only in the stack trace.
var wrapperPhrases = []struct{ prefix, contains string }{
	{"Listener method ", " threw exception"},
	{"Listener method could not be invoked", ""},
	{"Listener failed", ""},
	{"Listener threw exception", ""},
	{"Exception has been thrown by the target of an invocation", ""},
	{"One or more errors occurred", ""},
}

func isWrapperMessage(s string) bool {
	for _, w := range wrapperPhrases {
		if strings.HasPrefix(s, w.prefix) && strings.Contains(s, w.contains) {
			return true
		}
	}
	return false
}

// unwrapReason makes failure.reason the failure's own message when the
// first message found is a wrapper's (wrapperPhrases): the root cause a
// stack trace gave (evidence root_cause), else what follows the last
// "nested exception is" of a Spring 5 message. Without the cause the
// reason stays the wrapper's. The wrapper's message stays in the evidence.
// failure.reason is what error fingerprints (group --by error, archives'
// error_fingerprint) and the tables' failure column are made of: with the
// wrapper's text, every failure of one listener method looked the same.
func unwrapReason(f *record.Failure) {
	if f.Reason == "" || !isWrapperMessage(f.Reason) {
		return
	}
	root := ""
	for _, e := range f.Evidence {
		if e.Kind == record.EvidenceRootCause {
			root = e.Text
			break
		}
	}
	if root == "" {
		const nested = "nested exception is "
		i := strings.LastIndex(f.Reason, nested)
		if i < 0 {
			return
		}
		root = strings.TrimSpace(f.Reason[i+len(nested):])
	}
	typ, msg := splitTypeMessage(root)
	switch {
	case typ != "" && msg == "":
		return // a class without a message says no more than the type
	case typ != "" && (typ == f.Type || f.Type == ""):
		if f.Type == "" {
			f.Type = typ
		}
		f.Reason = msg
	default:
		f.Reason = root // a deeper cause than the type names: its class too
	}
}
