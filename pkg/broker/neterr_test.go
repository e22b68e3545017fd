package broker_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// TestNetProblemReadsRealFailures: real dials that fail the ways a broker
// endpoint does are named in a few words; a cancelled or expired context
// is not a network problem (the run was stopped, nothing was unreachable).
func TestNetProblemReadsRealFailures(t *testing.T) {
	// A listener that accepts and answers in plain text, not TLS.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("AMQP\x00\x00\x09\x01 not tls at all, padding the record header"))
			c.Close()
		}
	}()
	d := net.Dialer{Timeout: 5 * time.Second}
	_, refused := d.Dial("tcp", "127.0.0.1:1")
	_, dns := d.Dial("tcp", "no-such-host.invalid:5672")
	_, plain := tls.DialWithDialer(&d, "tcp", ln.Addr().String(), &tls.Config{ServerName: "x"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, cancelled := d.DialContext(ctx, "tcp", ln.Addr().String())
	for _, c := range []struct {
		name  string
		err   error
		want  string
		isTLS bool
		ok    bool
	}{
		{"refused", refused, "connection refused", false, true},
		{"dns", dns, "no such host no-such-host.invalid", false, true},
		{"plain listener", plain, "TLS: ", true, true},
		{"cancelled", cancelled, "", false, false},
		{"other", errors.New("queue is full"), "", false, false},
	} {
		got, isTLS, ok := broker.NetProblem(c.err)
		if ok != c.ok || isTLS != c.isTLS || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s (%v): %q tls=%v ok=%v; want %q tls=%v ok=%v", c.name, c.err, got, isTLS, ok, c.want, c.isTLS, c.ok)
		}
	}
}

// TestStartErrorIsExitTwoOnlyForWhatStopsAnOpen: unreachable, refused and
// missing are bad input (exit 2) when an endpoint is opened; anything else
// keeps its code, and the sentence is kept word for word.
func TestStartErrorIsExitTwoOnlyForWhatStopsAnOpen(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{broker.Kindf(broker.ErrUnreachable, "cannot connect to X at h:1: connection refused; check the host"), errs.ExitUsage},
		{broker.Kindf(broker.ErrAccessDenied, "X at h:1 refused the login of user %q; check the password", "u"), errs.ExitUsage},
		{broker.Kindf(broker.ErrNotFound, "queue q does not exist; check the name"), errs.ExitUsage},
		{errors.New("the channel closed"), errs.ExitError},
		{errs.Verdictf("canary failed"), errs.ExitVerdict},
		{context.Canceled, errs.ExitInterrupted},
	} {
		got := broker.StartError(c.err)
		if errs.Code(got) != c.code || got.Error() != c.err.Error() {
			t.Errorf("%v: exit %d %q, want exit %d and the same text", c.err, errs.Code(got), got, c.code)
		}
	}
	if broker.StartError(nil) != nil {
		t.Error("StartError(nil) is not nil")
	}
}
