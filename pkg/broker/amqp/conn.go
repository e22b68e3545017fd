package amqp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"net"
	"os"
	"strings"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// ConnOptions configure a connection.
type ConnOptions struct {
	// CAFile is a PEM bundle trusted in addition to the system roots
	// (amqps only; --amqp-ca).
	CAFile string
	// ServerName overrides the TLS server name (default: the host).
	ServerName string
	// Heartbeat (default 10 s).
	Heartbeat time.Duration
	// ConnectionName is shown in the management UI (default "dlqctl").
	ConnectionName string
	// DialTimeout bounds the TCP + AMQP handshake (default 15 s).
	DialTimeout time.Duration
	// onConn, when set, is given the TCP connection (tests end it as a
	// killed process would).
	onConn func(net.Conn)
}

// TLSConfig returns the TLS configuration for r: the system roots plus
// CAFile. nil for amqp://.
func TLSConfig(r Ref, o ConnOptions) (*tls.Config, error) {
	if !r.TLS {
		if o.CAFile != "" {
			return nil, fmt.Errorf("%w: --amqp-ca is for amqps:// references (%s is plain amqp://)", ErrBadRef, r)
		}
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: cannot read --amqp-ca %s: %v", ErrBadRef, o.CAFile, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --amqp-ca %s holds no PEM certificate", ErrBadRef, o.CAFile)
		}
	}
	name := o.ServerName
	if name == "" {
		name = r.Host
	}
	return &tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS12}, nil
}

// Dial opens an AMQP connection to r's vhost.
func Dial(ctx context.Context, r Ref, o ConnOptions) (*amqp091.Connection, error) {
	tc, err := TLSConfig(r, o)
	if err != nil {
		return nil, err
	}
	hb := o.Heartbeat
	if hb <= 0 {
		hb = 10 * time.Second
	}
	name := o.ConnectionName
	if name == "" {
		name = "dlqctl"
	}
	timeout := o.DialTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	props := amqp091.NewConnectionProperties()
	props.SetClientConnectionName(name)
	cfg := amqp091.Config{
		SASL:            []amqp091.Authentication{&amqp091.PlainAuth{Username: r.user, Password: r.pass}},
		Vhost:           r.VHost,
		Heartbeat:       hb,
		TLSClientConfig: tc,
		Properties:      props,
		Locale:          "en_US",
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// The handshake must finish within the timeout too; amqp091
			// clears the deadline once the connection is open.
			_ = c.SetDeadline(time.Now().Add(timeout))
			if o.onConn != nil {
				o.onConn(c)
			}
			return c, nil
		},
	}
	conn, err := amqp091.DialConfig(r.dialURL(), cfg)
	if err != nil {
		return nil, dialError(r, err)
	}
	return conn, nil
}

// ErrAuth is a login or an operation the broker refused for the user
// (wraps broker.ErrAccessDenied).
var ErrAuth = fmt.Errorf("RabbitMQ refused access (%w)", broker.ErrAccessDenied)

// ErrVHostRefused: the login worked but the vhost does not exist or the
// user has no permissions on it.
var ErrVHostRefused = errors.New("vhost refused")

// vhostRefused is a refused vhost: an error of kind (broker.ErrNotFound or
// broker.ErrAccessDenied: exit 2 when a command starts) that is also
// ErrVHostRefused (doctor tells it from a refused login).
func vhostRefused(kind error, format string, a ...any) error {
	return &vhostError{broker.Kindf(kind, format, a...)}
}

type vhostError struct{ err error }

func (e *vhostError) Error() string        { return e.err.Error() }
func (e *vhostError) Unwrap() error        { return e.err }
func (e *vhostError) Is(target error) bool { return target == ErrVHostRefused }

func dialError(r Ref, err error) error {
	var ae *amqp091.Error
	msg := err.Error()
	where := "from the URL"
	switch r.credsFrom {
	case "env":
		where = "from " + EnvUsername + "/" + EnvPassword
	case "default":
		where = "(none given: guest/guest, which RabbitMQ accepts only from localhost)"
	}
	switch {
	case errors.Is(err, amqp091.ErrVhost),
		errors.As(err, &ae) && ae.Code == amqp091.AccessRefused && ae.Reason == amqp091.ErrVhost.Reason:
		// amqp091's "no access to this vhost" carries the AccessRefused
		// code of a bad login: the login worked, the vhost is missing or
		// closed to the user.
		return vhostRefused(broker.ErrAccessDenied, "RabbitMQ at %s gives user %q no access to vhost %q (it does not exist, or the user has no permissions on it); check the vhost in the reference (%%2f is the default vhost /) and the user's permissions", r.HostPort(), r.user, r.VHost)
	case errors.As(err, &ae) && ae.Code == amqp091.AccessRefused,
		strings.Contains(msg, "username or password not allowed"):
		return broker.Kindf(ErrAuth, "RabbitMQ at %s refused the login of user %q %s; check the user and password (in the URL or %s/%s)", r.HostPort(), r.user, where, EnvUsername, EnvPassword)
	case errors.As(err, &ae) && ae.Code == amqp091.NotFound:
		return vhostRefused(broker.ErrNotFound, "RabbitMQ at %s has no vhost %q (%s); check the vhost in the reference (%%2f is the default vhost /)", r.HostPort(), r.VHost, ae.Reason)
	case errors.As(err, &ae) && ae.Code == amqp091.NotAllowed:
		return vhostRefused(broker.ErrAccessDenied, "RabbitMQ at %s refused vhost %q to user %q (%s); check the vhost in the reference (%%2f is the default vhost /) and the user's permissions on it", r.HostPort(), r.VHost, r.user, ae.Reason)
	}
	if problem, isTLS, ok := broker.NetProblem(err); ok {
		fix := "check the host and port, that the node is running, and amqps:// if it listens with TLS"
		switch {
		case isTLS && r.TLS:
			fix = "check that the port speaks TLS (amqp:// if it does not) and pass the CA that signed its certificate with --amqp-ca"
		case strings.HasPrefix(problem, "no such host"), strings.HasPrefix(problem, "cannot resolve"):
			fix = "check the host name in the reference"
		case problem == "timed out":
			fix = "check the host and port, that the node is running, and any firewall in between"
		}
		return broker.Kindf(broker.ErrUnreachable, "cannot connect to RabbitMQ at %s: %s; %s", r.HostPort(), problem, fix)
	}
	return fmt.Errorf("cannot connect to RabbitMQ at %s (vhost %q): %v", r.HostPort(), r.VHost, scrub(r, err))
}

// scrub removes r's password from an error text (belt and braces: the
// client is never given a URL with the password in it).
func scrub(r Ref, err error) string {
	s := err.Error()
	if r.pass != "" && len(r.pass) >= 3 {
		s = strings.ReplaceAll(s, r.pass, "REDACTED")
	}
	return s
}
