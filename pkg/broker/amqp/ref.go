// Package amqp is dlqctl's RabbitMQ broker: queue references
// (amqp://USER:PASS@HOST:PORT/VHOST/QUEUE), connections (plain and TLS),
// the management HTTP API, peeking with manual acknowledgement, x-death
// decoding, publishing with mandatory routing and publisher confirms, and
// the "to source" route taken from a message's first death.
//
// docs/rabbitmq.md describes what is read from where.
package amqp

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Environment variables that hold credentials, so they stay out of shell
// history and process lists.
const (
	EnvUsername = "DLQCTL_AMQP_USERNAME"
	EnvPassword = "DLQCTL_AMQP_PASSWORD"
)

// Default ports.
const (
	DefaultPort     = 5672
	DefaultTLSPort  = 5671
	DefaultMgmtPort = 15672
)

// Ref is a parsed RabbitMQ queue reference. The credentials are unexported:
// nothing that formats a Ref can print them.
type Ref struct {
	TLS   bool
	Host  string // host name or IP (no port)
	Port  int
	VHost string // decoded: "/" is the default vhost
	Queue string // decoded queue name ("" when the reference names only a vhost)

	user, pass string
	// credsFrom says where the credentials came from ("url", "url-user":
	// the user in the URL and the password from the environment, "env",
	// "default") for messages that must not show them.
	credsFrom string
}

// ErrBadRef wraps every reference parse error (bad input: exit 2).
var ErrBadRef = errors.New("bad RabbitMQ queue reference")

// ParseRef parses amqp[s]://[USER[:PASS]@]HOST[:PORT]/[VHOST/]QUEUE.
// VHOST is URL-encoded (%2f is the default vhost "/"); a single path
// segment is a queue in the default vhost. Credentials missing from the
// URL come from getenv(EnvUsername) / getenv(EnvPassword), else RabbitMQ's
// guest/guest; a user without a password (amqp://USER@HOST/…) takes the
// password from getenv(EnvPassword). Errors never contain the password.
func ParseRef(raw string, getenv func(string) string) (Ref, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the URL (and its password): say what is wrong
		// without it.
		return Ref{}, fmt.Errorf("%w %q: not a URL (amqp://USER:PASS@HOST:PORT/VHOST/QUEUE)", ErrBadRef, Redact(raw))
	}
	var r Ref
	switch strings.ToLower(u.Scheme) {
	case "amqp":
	case "amqps":
		r.TLS = true
	default:
		return Ref{}, fmt.Errorf("%w %q: the scheme must be amqp or amqps", ErrBadRef, Redact(raw))
	}
	if u.Opaque != "" || u.Host == "" {
		return Ref{}, fmt.Errorf("%w %q: no host (amqp://HOST/QUEUE)", ErrBadRef, Redact(raw))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Ref{}, fmt.Errorf("%w %q: query parameters and fragments are not supported (use flags such as --amqp-ca)", ErrBadRef, Redact(raw))
	}
	r.Host = u.Hostname()
	r.Port = DefaultPort
	if r.TLS {
		r.Port = DefaultTLSPort
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return Ref{}, fmt.Errorf("%w %q: bad port %q", ErrBadRef, Redact(raw), p)
		}
		r.Port = n
	}
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	var vhost, queue string
	switch len(segs) {
	case 1:
		vhost, queue = "/", segs[0]
	case 2:
		vhost, queue = segs[0], segs[1]
	default:
		return Ref{}, fmt.Errorf("%w %q: the path must be /VHOST/QUEUE or /QUEUE (encode a / in a vhost or queue name as %%2f)", ErrBadRef, Redact(raw))
	}
	if len(segs) == 2 {
		v, err := url.PathUnescape(vhost)
		if err != nil {
			return Ref{}, fmt.Errorf("%w %q: bad vhost encoding", ErrBadRef, Redact(raw))
		}
		if v == "" {
			v = "/"
		}
		vhost = v
	}
	q, err := url.PathUnescape(queue)
	if err != nil {
		return Ref{}, fmt.Errorf("%w %q: bad queue name encoding", ErrBadRef, Redact(raw))
	}
	r.VHost, r.Queue = vhost, q
	if len(r.Queue) > 255 {
		return Ref{}, fmt.Errorf("%w %q: a queue name is at most 255 bytes", ErrBadRef, Redact(raw))
	}
	switch {
	case u.User != nil:
		r.user = u.User.Username()
		if p, ok := u.User.Password(); ok {
			r.pass, r.credsFrom = p, "url"
		} else {
			// amqp://USER@HOST/…: the user in the reference, the password
			// from the environment (off the command line and out of ps).
			r.pass, r.credsFrom = getenv(EnvPassword), "url-user"
		}
	case getenv(EnvUsername) != "":
		r.user, r.pass = getenv(EnvUsername), getenv(EnvPassword)
		r.credsFrom = "env"
	default:
		r.user, r.pass = "guest", "guest"
		r.credsFrom = "default"
	}
	return r, nil
}

// Username returns the user name (never the password).
func (r Ref) Username() string { return r.user }

// HostPort is host:port.
func (r Ref) HostPort() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// String is the reference without credentials: amqp://HOST:PORT/VHOST/QUEUE
// with the vhost always present (%2f for /).
func (r Ref) String() string {
	scheme := "amqp"
	if r.TLS {
		scheme = "amqps"
	}
	return scheme + "://" + r.HostPort() + "/" + url.PathEscape(r.VHost) + "/" + url.PathEscape(r.Queue)
}

// WithQueue returns r naming another queue in the same vhost.
func (r Ref) WithQueue(q string) Ref { r.Queue = q; return r }

// dialURL is the URL given to the AMQP client: scheme and address only;
// vhost and credentials go in amqp.Config (so nothing that echoes the URL
// can show the password).
func (r Ref) dialURL() string {
	scheme := "amqp"
	if r.TLS {
		scheme = "amqps"
	}
	return scheme + "://" + r.HostPort() + "/"
}

// Redact removes the password (and user name) from anything that looks
// like a URL with userinfo, for error messages about unparseable input.
func Redact(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return s[:i+3] + "REDACTED@" + rest[at+1:]
	}
	return s
}

// ParseVHostRef parses a reference to a vhost, amqp://HOST/VHOST/ (or
// amqp://HOST/ for the default vhost), or to a queue in it (Queue set).
func ParseVHostRef(raw string, getenv func(string) string) (Ref, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Ref{}, fmt.Errorf("%w %q: not a URL", ErrBadRef, Redact(raw))
	}
	p := u.EscapedPath()
	switch {
	case p == "" || p == "/":
		p = "/%2f/_"
	case strings.HasSuffix(p, "/") && strings.Count(p, "/") == 2:
		p += "_"
	}
	u.Path, u.RawPath = "", ""
	r, err := ParseRef(strings.TrimSuffix(u.String(), "/")+p, getenv)
	if err != nil {
		return Ref{}, err
	}
	if strings.HasSuffix(p, "/_") {
		r.Queue = ""
	}
	return r, nil
}
