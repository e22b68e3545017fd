// Package errs defines the error kinds every dlqctl command shares and the one
// place that maps them to process exit codes (ExitCodesHelp: the
// `dlqctl help exit-codes` topic, summarised in one line at the end of every
// command's help, and README.md).
//
// Domain packages wrap their failures with these helpers; cmd turns the result
// into an exit code with Code. Nothing below cmd calls os.Exit.
package errs

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes, stable and documented in every command's help.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitVerdict     = 3
	ExitPartial     = 4
	ExitInterrupted = 130
)

// ExitCodesHelp is the `dlqctl help exit-codes` topic's table.
const ExitCodesHelp = `Exit codes:
  0    ok (also when nothing matched)
  1    error
  2    usage or bad input (a flag the queue's broker cannot honour too),
       no AWS credentials or region, or the queue could not be opened
       before anything started, on every broker alike: endpoint
       unreachable, credentials or access refused (the message names the
       IAM action), queue, topic or vhost missing; nothing was changed
  3    a verdict failed (canary, guard, audit or check)
  4    partial: some messages could not be processed, or the queue could not
       be read whole (FIFO groups locked behind held messages, messages in
       flight elsewhere, the in-flight limit); the report says which
  130  interrupted; in-flight work was finished or released`

type kindError struct {
	code int
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// BadInput marks err as a usage / bad input error (exit 2): the user can fix
// it and nothing was changed. The message should name the problem and the fix.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{code: ExitUsage, err: err}
}

// BadInputf is BadInput(fmt.Errorf(...)).
func BadInputf(format string, a ...any) error { return BadInput(fmt.Errorf(format, a...)) }

// Verdict marks a failed verdict (exit 3): canary, guard, audit or check.
func Verdict(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{code: ExitVerdict, err: err}
}

// Verdictf is Verdict(fmt.Errorf(...)).
func Verdictf(format string, a ...any) error { return Verdict(fmt.Errorf(format, a...)) }

// Partial marks a run where some messages could not be processed (exit 4).
func Partial(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{code: ExitPartial, err: err}
}

// Partialf is Partial(fmt.Errorf(...)).
func Partialf(format string, a ...any) error { return Partial(fmt.Errorf(format, a...)) }

// ErrInterrupted is returned when a run stopped cleanly on SIGINT/SIGTERM.
var ErrInterrupted = errors.New("interrupted")

// Silent wraps an error whose message was already reported to the user (for
// example a verdict printed as a table); cmd prints nothing more for it.
type Silent struct{ Err error }

func (s *Silent) Error() string { return s.Err.Error() }
func (s *Silent) Unwrap() error { return s.Err }

// Code maps an error to its exit code.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	var k *kindError
	if errors.As(err, &k) {
		return k.code
	}
	if errors.Is(err, ErrInterrupted) || errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	return ExitError
}
