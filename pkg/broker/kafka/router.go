package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Router picks the destination of a replayed record: To when set, else
// the original topic from the record's dead-letter headers.
type Router struct {
	To  string
	adm *kadm.Client

	mu     sync.Mutex
	exists map[string]*routeCheck
	// last is the last destination checked: records of a dead-letter
	// topic go to one or a few, so most look-ups end here without a lock.
	last atomic.Pointer[routeCheck]
}

// routeCheck is a destination and whether it exists (nil: it does).
type routeCheck struct {
	topic string
	err   error
}

// NewRouter returns a router checking destinations on adm's cluster.
func NewRouter(adm *kadm.Client, to string) *Router {
	return &Router{To: to, adm: adm, exists: map[string]*routeCheck{}}
}

// ErrNoOrigin is returned for a record without an original-topic header
// when no --to was given.
var ErrNoOrigin = errors.New("the record names no original topic in its headers (kafka_dlt-original-topic, __connect.errors.topic, __streams.errors.topic, x-original-topic, original_topic): pass --to kafka://…/TOPIC")

var errTopicMissing = errors.New("topic missing")

// Route returns m's destination topic, checked to exist.
func (r *Router) Route(ctx context.Context, m *Message) (string, error) {
	t := r.To
	if t == "" {
		t = m.Origin.Topic
	}
	if t == "" {
		return "", ErrNoOrigin
	}
	if t == m.Topic {
		return "", fmt.Errorf("the destination %s is the topic being read: a replay would loop", t)
	}
	if l := r.last.Load(); l != nil && l.topic == t {
		return t, l.err
	}
	r.mu.Lock()
	c := r.exists[t]
	r.mu.Unlock()
	if c == nil {
		ok, lerr := TopicExists(ctx, r.adm, t)
		c = &routeCheck{topic: t}
		switch {
		case lerr != nil:
			return "", lerr // not cached: transient
		case !ok:
			c.err = fmt.Errorf("destination topic %s does not exist (dlqctl never creates topics): %w", t, errTopicMissing)
		}
		r.mu.Lock()
		r.exists[t] = c
		r.mu.Unlock()
	}
	r.last.Store(c)
	return t, c.err
}
