// Package complete computes what shell completion offers: the words of a
// flag that takes one of a few, a comma-separated list of words, and
// queue or topic names from the broker the typed reference names (SQS
// ListQueues, RabbitMQ's management API, Kafka's metadata), through
// listing functions the command layer provides. It knows no flag library
// and no broker package, and it never returns an error: a broker that
// cannot be asked offers nothing.
package complete

import (
	"context"
	"net/url"
	"sort"
	"strings"
)

// Words returns the words starting with typed (ignoring case).
func Words(words []string, typed string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(strings.ToLower(w), strings.ToLower(typed)) {
			out = append(out, w)
		}
	}
	return out
}

// List completes a comma-separated list of words: the words not yet
// given, after what was typed up to the last comma.
func List(words []string, typed string) []string {
	done, last := "", typed
	if i := strings.LastIndexByte(typed, ','); i >= 0 {
		done, last = typed[:i+1], typed[i+1:]
	}
	given := map[string]bool{}
	for _, w := range strings.Split(done, ",") {
		given[w] = true
	}
	var out []string
	for _, w := range words {
		if !given[w] && strings.HasPrefix(w, last) {
			out = append(out, done+w)
		}
	}
	return out
}

// Sources are the listings Queues asks, each bounded by ctx; a nil one
// offers nothing.
type Sources struct {
	// SQS lists the URLs of the queues whose name starts with prefix.
	SQS func(ctx context.Context, prefix string) ([]string, error)
	// AMQP lists the queue names of the vhost of vhostRef
	// (amqp://[USER@]HOST[:PORT]/VHOST/).
	AMQP func(ctx context.Context, vhostRef string) ([]string, error)
	// Kafka completes kafka://HOSTS/PREFIX with topic references.
	Kafka func(ctx context.Context, typed string) []string
}

// Queues offers the queue or topic references starting with typed from
// the broker its form names, sorted: an SQS queue name, amqp(s)://…,
// kafka://…; nothing for another URL or an ARN.
func Queues(ctx context.Context, typed string, src Sources) []string {
	var names []string
	switch l := strings.ToLower(typed); {
	case strings.HasPrefix(strings.TrimSpace(l), "amqp://") || strings.HasPrefix(strings.TrimSpace(l), "amqps://"):
		if src.AMQP != nil {
			names = amqpQueues(ctx, typed, src.AMQP)
		}
	case strings.HasPrefix(l, "kafka://"):
		if src.Kafka != nil {
			names = src.Kafka(ctx, typed)
		}
	case strings.Contains(l, "://") || strings.HasPrefix(l, "arn:"):
	default:
		if src.SQS != nil {
			names = sqsQueues(ctx, typed, src.SQS)
		}
	}
	sort.Strings(names)
	return names
}

// sqsQueues: the names of the queues list returns.
func sqsQueues(ctx context.Context, prefix string, list func(context.Context, string) ([]string, error)) []string {
	urls, err := list(ctx, prefix)
	if err != nil {
		return nil
	}
	var names []string
	for _, u := range urls {
		names = append(names, u[strings.LastIndexByte(u, '/')+1:])
	}
	return names
}

// amqpQueues completes amqp://[USER@]HOST[:PORT]/VHOST/PREFIX with the
// vhost's queues; amqp://HOST/PREFIX with the default vhost's.
func amqpQueues(ctx context.Context, typed string, list func(context.Context, string) ([]string, error)) []string {
	scheme, rest, _ := strings.Cut(typed, "://")
	host, path, ok := strings.Cut(rest, "/")
	if !ok || host == "" {
		return nil
	}
	vhostSeg, prefix, nested := strings.Cut(path, "/")
	base := scheme + "://" + host + "/"
	if nested {
		base += vhostSeg + "/"
	} else {
		vhostSeg, prefix = "%2f", path
	}
	qs, err := list(ctx, scheme+"://"+host+"/"+vhostSeg+"/")
	if err != nil {
		return nil
	}
	var out []string
	for _, q := range qs {
		if strings.HasPrefix(q, prefix) || strings.HasPrefix(url.PathEscape(q), prefix) {
			out = append(out, base+url.PathEscape(q))
		}
	}
	return out
}
