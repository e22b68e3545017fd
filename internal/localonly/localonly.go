// Package localonly guards the local-stack helpers (dlqctl-seed,
// dlqctl-worker): they create queues, send, receive and delete messages,
// and must never do that to a real account. Every endpoint they use has to
// be a loopback address (127.0.0.0/8, ::1, localhost); anything else —
// an AWS endpoint, a VPC endpoint, another host, or no endpoint at all
// (which means AWS) — is refused.
package localonly

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
)

// Check returns nil when raw is an http(s) URL whose host is loopback, else
// an error naming what was refused and why. what names the endpoint in the
// message ("SQS endpoint").
func Check(what, raw string) error {
	if raw == "" {
		return fmt.Errorf("no %s is set, which means AWS itself; this helper only talks to a local stack (start one with scripts/stack.sh start and eval \"$(scripts/stack.sh env)\")", what)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q is not an http(s) URL; this helper only talks to a local stack such as http://127.0.0.1:PORT", what, raw)
	}
	if !IsLoopback(u.Hostname()) {
		return fmt.Errorf("%s %s is not local (not a loopback address); this helper creates queues and sends, receives and deletes messages, so it refuses anything but a local stack on 127.0.0.1/::1/localhost", what, raw)
	}
	return nil
}

// IsLoopback reports whether host (no port) is localhost or a loopback IP.
func IsLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ServiceEndpoint is the endpoint the AWS SDK would use for a service from
// the environment: AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL, else
// "" (AWS's own). service is the SDK's env suffix: "SQS", "S3",
// "CLOUDWATCH_LOGS".
func ServiceEndpoint(service string) string {
	if e := os.Getenv("AWS_ENDPOINT_URL_" + service); e != "" {
		return e
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}
