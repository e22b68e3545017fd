package report

import (
	"fmt"
	"sync/atomic"

	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// FilterErrorsRow is a summary's "filter errors" line (fe non-nil); left
// says where the messages stay ("in the DLQ").
func FilterErrorsRow(fe *inspect.FilterErrors, left string) string {
	return fmt.Sprintf("%d not selected, %s: %s raised an error (first: message %s: %s)", fe.Count, left, fe.Expression, fe.FirstID, fe.FirstError)
}

// WarnFilterErrors says on stderr that the selection failed on some
// messages (a run the selection refused says so in its error instead).
func WarnFilterErrors(s *output.IOStreams, fe *inspect.FilterErrors, left string) {
	if fe == nil {
		return
	}
	s.Warnf("%s raised an error on %d message(s) (first: message %s: %s); they were not selected and %s; fix the expression, or write `(EXPR)?` to skip such messages explicitly (-v lists the first %d)",
		fe.Expression, fe.Count, fe.FirstID, fe.FirstError, left, classify.VerboseErrors)
}

// WatchFilterErrors makes verbosef (-v) print the first evaluation errors
// of sel as they happen (classify.VerboseErrors of them; the rest are
// counted).
func WatchFilterErrors(sel *classify.Selector, verbosef func(format string, a ...any)) {
	var told atomic.Int32
	sel.OnError(func(e classify.EvalError) {
		more := ""
		if told.Add(1) == classify.VerboseErrors {
			more = fmt.Sprintf(" (the first %d errors are shown; the rest are only counted)", classify.VerboseErrors)
		}
		verbosef("%s; not selected%s", e.Error(), more)
	})
}

// EndSelection ends the selection of a command that read without moving
// (sample, group, classify, a dry run): the refusal when it failed on every
// message read, else what it failed on (nil: nothing), also said on
// stderr. left says what became of those messages.
func EndSelection(s *output.IOStreams, sel interface {
	Refusal() error
	Errors() *inspect.FilterErrors
}, left string) (*inspect.FilterErrors, error) {
	if sel == nil {
		return nil, nil
	}
	if err := sel.Refusal(); err != nil {
		return nil, err
	}
	fe := sel.Errors()
	WarnFilterErrors(s, fe, left)
	return fe, nil
}
