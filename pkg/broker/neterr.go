package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Kindf is an error with format's text that is (errors.Is) kind as well
// as any %w in format: for a sentence that names the problem and the fix
// without ending in the kind's own words (ErrNotFound, ErrAccessDenied,
// ErrUnreachable).
func Kindf(kind error, format string, a ...any) error {
	return &kindError{err: fmt.Errorf(format, a...), kind: kind}
}

type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// StartError is how every broker's failure to open an endpoint — before
// anything was read or changed — ends: the broker unreachable, the
// credentials refused, the queue or topic missing are bad input (exit 2),
// the same on every broker (docs/exit-codes in README.md). Anything else
// keeps its code. Use it only where nothing has changed yet: the same
// failures in the middle of a run are errors (1) or partial runs (4).
func StartError(err error) error {
	if err == nil || errs.Code(err) != errs.ExitError {
		return err
	}
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrNotFound) {
		return errs.BadInput(err)
	}
	return err
}

// NetProblem reads a network failure out of err, in a few words: what
// went wrong reaching a server ("connection refused", "no such host",
// "timed out", "TLS: x509: certificate signed by unknown authority").
// isTLS says it was the TLS handshake; ok is false when err is not a
// failure to reach a server.
func NetProblem(err error) (problem string, isTLS, ok bool) {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "", false, false
	}
	var (
		dns     *net.DNSError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		header  tls.RecordHeaderError
		alert   tls.AlertError
		nerr    net.Error
	)
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name, false, true
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err, false, true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", false, true
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to host", false, true
	case errors.Is(err, syscall.ENETUNREACH):
		return "network is unreachable", false, true
	case errors.As(err, &verify):
		return "TLS: " + verify.Err.Error(), true, true
	case errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return "TLS: " + firstErrLine(err), true, true
	case errors.As(err, &header):
		return "TLS: the server does not answer in TLS", true, true
	case errors.As(err, &alert):
		return "TLS: the server refused the handshake (" + alert.Error() + ")", true, true
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "timed out", false, true
	}
	// Some clients keep only the text of the cause.
	msg := err.Error()
	for _, p := range []string{"connection refused", "no such host", "no route to host", "network is unreachable", "i/o timeout"} {
		if strings.Contains(msg, p) {
			if p == "i/o timeout" {
				p = "timed out"
			}
			return p, false, true
		}
	}
	if strings.Contains(msg, "x509: ") || strings.Contains(msg, "tls: ") {
		return "TLS: " + firstErrLine(err), true, true
	}
	return "", false, false
}

// firstErrLine is the innermost useful part of err's text: what follows
// the last "x509: " or "tls: ", else the whole first line.
func firstErrLine(err error) string {
	s := err.Error()
	for _, p := range []string{"x509: ", "tls: "} {
		if i := strings.LastIndex(s, p); i >= 0 {
			s = s[i:]
			break
		}
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
