// Package kafka is dlqctl's Kafka broker: dead-letter topics (DLTs) and
// retry-topic chains read by partition, replayed with an idempotent
// producer, and a consumer group's committed offsets as the journal of what
// has been handled. It speaks the Kafka protocol through twmb/franz-go.
package kafka

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Scheme is the queue-reference scheme of a Kafka topic.
const Scheme = "kafka"

// Address is a parsed kafka://HOST:PORT[,HOST:PORT…]/TOPIC reference.
type Address struct {
	Brokers []string // bootstrap brokers, HOST:PORT each
	Topic   string
	// User is the SASL user when the reference carries one
	// (kafka://USER@HOST:PORT/TOPIC); the password never comes from a
	// reference (DLQCTL_KAFKA_PASSWORD).
	User string
}

// String is the reference as dlqctl prints it: never a password.
func (a Address) String() string {
	u := ""
	if a.User != "" {
		u = url.User(a.User).String() + "@"
	}
	return Scheme + "://" + u + strings.Join(a.Brokers, ",") + "/" + a.Topic
}

// WithTopic returns a copy of a naming another topic on the same cluster.
func (a Address) WithTopic(topic string) Address {
	b := a
	b.Brokers = append([]string(nil), a.Brokers...)
	b.Topic = topic
	return b
}

// UsageError is bad input: the caller maps it to exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// usage is bad input (exit 2): errs.Code reads it without knowing Kafka.
func usage(format string, args ...any) error {
	return errs.BadInput(&UsageError{Msg: fmt.Sprintf(format, args...)})
}

// IsReference reports whether ref is a kafka:// reference.
func IsReference(ref string) bool {
	return len(ref) > len(Scheme)+3 && strings.EqualFold(ref[:len(Scheme)+3], Scheme+"://")
}

// SplitCluster splits a kafka:// reference into its cluster,
// kafka://[USER@]HOST:PORT[,HOST:PORT…], and what follows the cluster's
// slash: a topic, the name prefix of queues and completion, or "" when it
// names the cluster alone. ok is false when raw is not a kafka://
// reference.
func SplitCluster(raw string) (cluster, rest string, ok bool) {
	raw = strings.TrimSpace(raw)
	if !IsReference(raw) {
		return "", "", false
	}
	hosts, rest, _ := strings.Cut(raw[len(Scheme)+3:], "/")
	return Scheme + "://" + hosts, rest, true
}

// OnCluster is a topic reference on cluster (SplitCluster's) whose topic
// nothing reads: Open needs a topic, and the commands that work on a
// whole cluster (queues, audit and doctor of a cluster, completion) open
// the cluster through this one.
func OnCluster(cluster string) string { return cluster + "/" + clusterTopic }

const clusterTopic = "__dlqctl_cluster"

// ParseAddress parses kafka://HOST:PORT[,HOST:PORT…]/TOPIC. A reference
// carrying a password is refused without echoing it: passwords come from
// DLQCTL_KAFKA_PASSWORD only.
func ParseAddress(ref string) (Address, error) {
	if !IsReference(ref) {
		return Address{}, usage("%q is not a kafka:// reference (want kafka://HOST:PORT[,HOST:PORT…]/TOPIC)", ref)
	}
	rest := ref[len(Scheme)+3:]
	hosts, topic, ok := strings.Cut(rest, "/")
	var user string
	if at := strings.LastIndexByte(hosts, '@'); at >= 0 {
		userinfo := hosts[:at]
		hosts = hosts[at+1:]
		if strings.Contains(userinfo, ":") {
			return Address{}, usage("a Kafka reference must not carry a password: put it in DLQCTL_KAFKA_PASSWORD and write kafka://USER@%s/%s", hosts, topicPart(topic))
		}
		u, err := url.PathUnescape(userinfo)
		if err != nil || u == "" {
			return Address{}, usage("the user in kafka://USER@HOST:PORT/TOPIC is not valid")
		}
		user = u
	}
	if !ok || topic == "" {
		return Address{}, usage("kafka://%s names no topic: write kafka://HOST:PORT/TOPIC", hosts)
	}
	if q := strings.IndexAny(topic, "?#"); q >= 0 {
		return Address{}, usage("Kafka reference kafka://…/%s: query strings and fragments are not supported (they are never printed); connection settings are flags (--kafka-tls, --kafka-sasl, …) and the password is DLQCTL_KAFKA_PASSWORD", topic[:q])
	}
	if err := ValidTopic(topic); err != nil {
		return Address{}, err
	}
	var brokers []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return Address{}, usage("broker %q in a kafka:// reference is not HOST:PORT (Kafka has no default port in dlqctl: write e.g. %s:9092)", h, strings.Trim(h, "[]:"))
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return Address{}, usage("broker %q in a kafka:// reference has no valid port (1-65535)", h)
		}
		brokers = append(brokers, net.JoinHostPort(host, port))
	}
	if len(brokers) == 0 {
		return Address{}, usage("kafka:///%s names no broker: write kafka://HOST:PORT/%s", topic, topic)
	}
	return Address{Brokers: brokers, Topic: topic, User: user}, nil
}

func topicPart(t string) string {
	if t == "" {
		return "TOPIC"
	}
	return t
}

// ValidTopic checks Kafka's topic name rules: 1-249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func ValidTopic(t string) error {
	if t == "" || len(t) > 249 {
		return usage("Kafka topic names are 1 to 249 characters long; %q is %d", t, len(t))
	}
	if t == "." || t == ".." {
		return usage("%q is not a valid Kafka topic name", t)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return usage("Kafka topic %q has a character Kafka does not allow (%q): use letters, digits, '.', '_' and '-'", t, string(c))
		}
	}
	return nil
}
