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

// wrapperTypes are exception classes that wrap the failure that happened
// (by simple name): Spring's listener wrappers, reflection's and
// concurrency's, .NET's.
var wrapperTypes = map[string]bool{
	"ListenerExecutionFailedException": true, // spring-kafka, spring-amqp
	"InvocationTargetException":        true, // java.lang.reflect
	"UndeclaredThrowableException":     true,
	"ExecutionException":               true, // java.util.concurrent
	"CompletionException":              true,
	"TargetInvocationException":        true, // System.Reflection
	"AggregateException":               true, // System
}

func isWrapperType(s string) bool {
	if i := strings.LastIndexAny(s, ".$"); i >= 0 {
		s = s[i+1:]
	}
	return wrapperTypes[s]
}

// unwrapReason makes failure.reason (and failure.type) the failure's own
// when what was found first is a wrapper's (wrapperPhrases,
// wrapperTypes): the root cause a stack trace gave (evidence root_cause),
// else what follows the last "nested exception is" of a Spring 5 message.
// Without the cause they stay the wrapper's. The wrapper's words stay in
// the evidence. failure.type and failure.reason are what error
// fingerprints (group --by error, archives' error_fingerprint) and the
// tables' failure column are made of: with the wrapper's, every failure of
// one listener method looked the same.
func unwrapReason(f *record.Failure) {
	wrapMsg, wrapType := f.Reason != "" && isWrapperMessage(f.Reason), isWrapperType(f.Type)
	if !wrapMsg && !wrapType {
		return
	}
	root := ""
	for _, e := range f.Evidence {
		if e.Kind == record.EvidenceRootCause {
			root = e.Text
			break
		}
	}
	if root == "" && wrapMsg {
		const nested = "nested exception is "
		if i := strings.LastIndex(f.Reason, nested); i >= 0 {
			root = strings.TrimSpace(f.Reason[i+len(nested):])
		}
	}
	if root == "" {
		return
	}
	typ, msg := splitTypeMessage(root)
	switch {
	case typ == "":
		if wrapMsg {
			f.Reason = root // a cause without a class: its message
		}
	case msg == "":
		// A class without a message says no more than the type.
	case wrapType || f.Type == "" || typ == f.Type:
		f.Type, f.Reason = typ, msg
	case wrapMsg:
		f.Reason = root // a deeper cause than the type names: its class too
	}
}
