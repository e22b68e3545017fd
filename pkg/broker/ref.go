package broker

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Ref is a queue reference as the user typed it, parsed once: which broker
// it names and how to show it. It never prints its credentials: String and
// Display are redacted, and the credentials are reachable only through URL,
// for the broker package that connects with them.
type Ref struct {
	// Broker is SQS, AMQP or Kafka.
	Broker string
	// Scheme is the scheme as typed, lower case: "" for a bare SQS name,
	// "http"/"https" for an SQS queue URL, "arn" for an ARN, "sqs",
	// "amqp", "amqps", "kafka".
	Scheme string
	// Target is the reference in the form the broker package parses,
	// without credentials: for SQS the name, URL or ARN (sqs://NAME gives
	// NAME); for the others Display.
	Target string
	// Display is the reference as every output shows it: credentials and
	// secret query parameters replaced by "***".
	Display string
	// u is the parsed URL with its credentials (nil for names and ARNs).
	// A pointer, so that even %#v of a Ref prints an address, not it.
	u *url.URL
}

// String is Display.
func (r Ref) String() string { return r.Display }

// GoString is Display too (%#v).
func (r Ref) GoString() string { return "broker.Ref(" + r.Display + ")" }

// URL returns a copy of the reference's URL, credentials included (nil for
// an SQS name or ARN). Only a broker package connecting with it may call
// it; never print it.
func (r Ref) URL() *url.URL {
	if r.u == nil {
		return nil
	}
	c := *r.u
	if r.u.User != nil {
		u := *r.u.User
		c.User = &u
	}
	return &c
}

// HasCredentials reports whether the reference carries a user or password.
func (r Ref) HasCredentials() bool { return r.u != nil && r.u.User != nil }

// maxRefLen bounds what ParseRef looks at.
const maxRefLen = 2048

// schemeRe matches a URL scheme at the start of a reference.
var schemeRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*)://`)

// ParseRef parses a queue reference:
//
//	orders-dlq                                   SQS, a queue name
//	https://sqs.REGION.amazonaws.com/ACCT/NAME   SQS, a queue URL (http too)
//	arn:aws:sqs:REGION:ACCT:NAME                 SQS, an ARN
//	sqs://NAME                                   SQS, a queue name
//	amqp://USER:PASS@HOST:PORT/VHOST/QUEUE       RabbitMQ (amqps:// for TLS)
//	kafka://HOST:PORT[,HOST:PORT]/TOPIC          Kafka
//
// Any other scheme is bad input (exit 2). Errors never repeat credentials.
// The broker package checks the rest of the shape (ParseRef knows only
// what tells the brokers apart).
func ParseRef(s string) (Ref, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Ref{}, errs.BadInputf("empty queue reference; pass a queue name, URL or ARN (or amqp://…, kafka://…)")
	case len(s) > maxRefLen:
		return Ref{}, errs.BadInputf("queue reference of %d characters is too long to be a queue name, URL or ARN", len(s))
	}
	m := schemeRe.FindStringSubmatch(s)
	if m == nil {
		if strings.HasPrefix(s, "arn:") {
			return Ref{Broker: SQS, Scheme: "arn", Target: s, Display: s}, nil
		}
		disp := Redact(s)
		if i := strings.LastIndexByte(disp, '@'); i >= 0 {
			disp = "***" + disp[i:] // what comes before an @ may be a password
		}
		if strings.Contains(s, "://") || strings.ContainsAny(s, "@ ") {
			return Ref{}, errs.BadInputf("%q is not a queue reference; pass a queue name, URL or ARN, or amqp://HOST/VHOST/QUEUE or kafka://HOST:PORT/TOPIC", disp)
		}
		return Ref{Broker: SQS, Target: s, Display: s}, nil
	}
	scheme := strings.ToLower(m[1])
	u, err := url.Parse(s)
	disp := Redact(s)
	if err != nil || u.Host == "" && scheme != "sqs" {
		return Ref{}, errs.BadInputf("%q is not a valid %s:// reference (it does not parse as a URL with a host)", disp, scheme)
	}
	r := Ref{Scheme: scheme, u: u}
	r.Display = displayURL(u)
	switch scheme {
	case "http", "https":
		if u.User != nil {
			return Ref{}, errs.BadInputf("the SQS queue URL %s carries credentials; remove them from the URL and use --profile or the AWS_* variables", r.Display)
		}
		r.Broker, r.Target = SQS, s
	case "sqs":
		name := strings.Trim(u.Host+u.Path, "/")
		if u.User != nil || u.RawQuery != "" || name == "" || strings.Contains(name, "/") {
			return Ref{}, errs.BadInputf("%q is not an sqs:// reference; use sqs://QUEUE-NAME (or the queue URL or ARN)", r.Display)
		}
		r.Broker, r.Target, r.Display = SQS, name, "sqs://"+name
		r.u = nil
	case "amqp", "amqps":
		r.Broker, r.Target = AMQP, r.Display
	case "kafka":
		r.Broker, r.Target = Kafka, r.Display
	default:
		return Ref{}, errs.BadInputf("unknown scheme %q in queue reference %s; dlqctl reads SQS (a queue name, URL or ARN, or sqs://NAME), RabbitMQ (amqp://, amqps://) and Kafka (kafka://)", scheme, r.Display)
	}
	return r, nil
}

// secretParam matches query parameter names that carry secrets.
var secretParam = regexp.MustCompile(`(?i)pass|secret|token|key|credential|sig|auth`)

// displayURL is u without credentials: the userinfo becomes "***" and the
// values of secret-looking query parameters too.
func displayURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = nil
	}
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			if secretParam.MatchString(k) {
				q[k] = []string{"***"}
			}
		}
		c.RawQuery = strings.ReplaceAll(q.Encode(), "%2A%2A%2A", "***")
	}
	s := c.String()
	if u.User != nil {
		if i := strings.Index(s, "://"); i >= 0 {
			s = s[:i+3] + "***@" + s[i+3:]
		}
	}
	return s
}

// userinfoRe matches the userinfo of a URL inside any text.
var userinfoRe = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@"'<>]*@`)

// Redact removes credentials from a text that may contain URLs (an error
// of a client library, a reference that did not parse): every URL's
// userinfo becomes "***", and each of the given secrets (a password from
// the environment) is replaced wherever it occurs.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 3 {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return userinfoRe.ReplaceAllString(s, "${1}***@")
}

// urlUserinfoRe and urlParamRe find, inside any text, a URL's userinfo and
// its query parameters.
var (
	urlUserinfoRe = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://([^/\s@?#"'<>]*)@`)
	urlParamRe    = regexp.MustCompile(`[?&]([^=&#\s"'<>]+)=([^&#\s"'<>]*)`)
)

// SecretsIn returns the secrets the URLs in s carry: the password of each
// userinfo (USER:PASS@) and the value of each secret-looking query
// parameter (password, token, X-Amz-Signature, X-Amz-Credential, …;
// RabbitMQ's routing_key is not one), each as written and URL-decoded.
// Values shorter than 3 characters are left out (they would match
// everywhere). cmd scrubs them from everything it prints.
func SecretsIn(s string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= 3 && !containsString(out, v) {
			out = append(out, v)
		}
		if d, err := url.QueryUnescape(v); err == nil && d != v && len(d) >= 3 && !containsString(out, d) {
			out = append(out, d)
		}
	}
	for _, m := range urlUserinfoRe.FindAllStringSubmatch(s, -1) {
		if _, pass, ok := strings.Cut(m[1], ":"); ok {
			add(pass)
		}
	}
	for _, m := range urlParamRe.FindAllStringSubmatch(s, -1) {
		if name := strings.ToLower(m[1]); secretParam.MatchString(name) && name != "routing_key" {
			add(m[2])
		}
	}
	return out
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
