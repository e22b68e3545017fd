package report

import (
	"fmt"

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
