package classify

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// RefuseAfter is how many messages a selection may fail on, with no
// message evaluated cleanly, before it refuses the run: a --filter or a
// rule that raises an error on every message read (`.body | tonumber` on
// text bodies) is a broken expression, not an empty selection. A run that
// reads fewer messages refuses at its end (Refusal).
const RefuseAfter = 100

// VerboseErrors is how many evaluation errors OnError is told about; the
// rest are only counted.
const VerboseErrors = 20

// EvalError is a --filter or a rule that raised an error on one message.
// The message is not selected.
type EvalError struct {
	MessageID string
	// What names the expression: --filter '…' or rule "NAME" (FILE:LINE).
	What string
	// Expr is the expression's source.
	Expr string
	// Rule is true when a rule's `when` failed (else the --filter).
	Rule bool
	Err  error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("%s raised an error on message %s: %s", e.What, e.MessageID, e.Reason())
}

// Reason is the expression's own error, without the expression repeated.
func (e *EvalError) Reason() string {
	if u := errors.Unwrap(e.Err); u != nil {
		return u.Error()
	}
	return e.Err.Error()
}

// Unwrap returns the expression's error.
func (e *EvalError) Unwrap() error { return e.Err }

// fix says how to repair the expression.
func (e *EvalError) fix() string {
	if e.Rule {
		return fmt.Sprintf("fix the rule's when (e.g. `(%s)?` skips the messages it cannot evaluate) and run again", e.Expr)
	}
	return fmt.Sprintf("fix the filter (e.g. `(%s)?` skips the messages it cannot evaluate) and run again", e.Expr)
}

// Selection states of an evalTally.
const (
	evalUndecided int32 = iota // no message evaluated yet, or only errors
	evalClean                  // some message evaluated without an error
	evalRefused                // failed on every message read: the run stops
)

// evalTally counts the messages a selection failed on and decides the
// refusal. It is safe for concurrent use. Once one message evaluated
// cleanly the selection is never refused; once it is refused, no message
// is selected any more — so a refused run has selected (and moved)
// nothing, whatever the order the workers evaluated messages in.
type evalTally struct {
	state atomic.Int32

	mu      sync.Mutex
	count   int
	first   *EvalError
	refusal error
	told    int
	onError func(EvalError)
}

// clean notes a message evaluated without an error; it returns the
// refusal when the run was already refused (the message must not be
// selected).
func (t *evalTally) clean() error {
	if t.state.Load() == evalClean {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state.Load() == evalRefused {
		return t.refusal
	}
	t.state.Store(evalClean)
	return nil
}

// failed notes a message the selection failed on. It returns the refusal
// when this (or an earlier) failure refused the run, else e.
func (t *evalTally) failed(e *EvalError) error {
	t.mu.Lock()
	t.count++
	if t.first == nil {
		t.first = e
	}
	tell := t.onError != nil && t.told < VerboseErrors
	if tell {
		t.told++
	}
	if t.state.Load() == evalUndecided && t.count >= RefuseAfter {
		t.refuseLocked()
	}
	err := t.refusal
	onError := t.onError
	t.mu.Unlock()
	if tell {
		onError(*e)
	}
	if err != nil {
		return err
	}
	return e
}

// refuseLocked refuses the run (mu is held).
func (t *evalTally) refuseLocked() {
	f := t.first
	t.refusal = errs.BadInputf("%s failed on every message read (%d message(s); first: message %s: %s); %s; nothing was changed",
		f.What, t.count, f.MessageID, f.Reason(), f.fix())
	t.state.Store(evalRefused)
}

// refused returns the refusal at the end of a run: the selection failed on
// every message it evaluated (nil when it evaluated none, or one cleanly).
func (t *evalTally) refused() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state.Load() == evalUndecided && t.count > 0 {
		t.refuseLocked()
	}
	return t.refusal
}

func (t *evalTally) summary() *inspect.FilterErrors {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 {
		return nil
	}
	return &inspect.FilterErrors{Count: t.count, FirstID: t.first.MessageID, FirstError: t.first.Reason(), Expression: t.first.What}
}

// IsRefusal reports whether err from Select is the selection's refusal (a
// bad-input error: stop, nothing may move) rather than one message's
// EvalError.
func IsRefusal(err error) bool { return errs.Code(err) == errs.ExitUsage }
