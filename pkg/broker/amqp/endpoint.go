package amqp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Config is what the commands tell the RabbitMQ broker (plain data: cmd
// fills it from flags and the environment).
type Config struct {
	// Username and Password are used when the reference carries no
	// credentials (cmd reads DLQCTL_AMQP_USERNAME / DLQCTL_AMQP_PASSWORD).
	Username, Password string
	// ManagementURL is the management HTTP API (default http://HOST:15672).
	ManagementURL string
	// CAFile is a PEM bundle trusted besides the system roots (amqps).
	CAFile string
	// Prefetch bounds the deliveries a source holds (default 1000).
	Prefetch int
	// ConfirmWindow bounds the publishes awaiting a confirm (default 256).
	ConfirmWindow int
	// Idle is how long an empty read waits before checking whether the
	// queue is empty (default 1 s).
	Idle time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// credential answers ParseRef's lookups of DLQCTL_AMQP_USERNAME and
// DLQCTL_AMQP_PASSWORD from the configuration.
func (c Config) credential(k string) string {
	switch k {
	case EnvUsername:
		return c.Username
	case EnvPassword:
		return c.Password
	}
	return ""
}

func (c Config) withDefaults() Config {
	if c.Prefetch <= 0 {
		c.Prefetch = 1000
	}
	if c.ConfirmWindow <= 0 {
		c.ConfirmWindow = 256
	}
	if c.Idle <= 0 {
		c.Idle = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Batch limits: one read or publish batch. RabbitMQ has no batch API; these
// bound what the engine hands over at once (the confirm window bounds what
// is in flight).
const (
	MaxBatchEntries = 100
	MaxBatchBytes   = 16 << 20
	// MaxMessageBytes is RabbitMQ's default max_message_size (128 MiB).
	MaxMessageBytes = 128 << 20
)

// UnpacedBatch is the read and publish batch of an unpaced move by
// `workers` workers: as many deliveries as leave room in the prefetch for
// two batches per worker (one being published, one waiting for its
// journal write and acknowledgement), at most one confirm window and at
// least 10 (the pipeline's default batch). With bigger batches a few
// workers hold the whole prefetch while the others wait for deliveries:
// at the defaults (prefetch 1000, window 256) 8 workers move batches of
// 62, 4 of 125 and 1 of 256. limit > 0 (--max, --canary) caps it: what a
// worker reads beyond it is held and given back, and on a quorum queue
// every give-back counts toward the delivery limit.
func UnpacedBatch(c Config, workers, limit int) int {
	c = c.withDefaults()
	if workers <= 0 {
		workers = 8 // the pipeline's default concurrency
	}
	b := max(min(c.Prefetch/(2*workers), c.ConfirmWindow), minBatch)
	if limit > 0 {
		b = min(b, limit)
	}
	return b
}

// minBatch is the smallest unpaced batch (the pipeline's default).
const minBatch = 10

// Endpoint is a RabbitMQ queue (or, for a destination, an exchange).
type Endpoint struct {
	ref     Ref
	display string
	cfg     Config
	mgmt    *Management
	// info is the queue's management description; infoErr why it is
	// missing (management API unreachable).
	info    QueueInfo
	infoErr error
	// exchange/routingKey: the reference names an exchange to publish to
	// (?exchange=NAME&routing_key=KEY), not a queue.
	exchange, routingKey string
	isExchange           bool

	mu        sync.Mutex
	exchanges map[string]error // existence checks of route exchanges
}

var _ broker.Endpoint = (*Endpoint)(nil)

// Open resolves a RabbitMQ reference (see OpenEndpoint).
func Open(ctx context.Context, bref broker.Ref, cfg Config) (broker.Endpoint, error) {
	ep, err := OpenEndpoint(ctx, bref, cfg)
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// OpenEndpoint resolves a RabbitMQ reference: it connects once (so a wrong
// password, host or vhost fails here, in one sentence), checks the queue
// exists, and reads its type and arguments from the management API.
func OpenEndpoint(ctx context.Context, bref broker.Ref, cfg Config) (*Endpoint, error) {
	ep, err := openEndpoint(ctx, bref, cfg)
	// Nothing was read or changed yet: an unreachable node, refused
	// credentials or a missing queue are bad input (exit 2), as on every
	// broker.
	return ep, broker.StartError(err)
}

func openEndpoint(ctx context.Context, bref broker.Ref, cfg Config) (*Endpoint, error) {
	ep, err := newEndpoint(bref, cfg)
	if err != nil {
		return nil, err
	}
	r := ep.ref
	conn, err := ep.dial(ctx, "check")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if ep.isExchange {
		if err := CheckExchange(conn, ep.exchange); err != nil {
			return nil, fmt.Errorf("%s: %w", ep.display, err)
		}
		return ep, nil
	}
	if _, err := readyCount(conn, r.Queue); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, broker.Kindf(broker.ErrNotFound, "queue %q does not exist in vhost %q at %s; check the name ('dlqctl queues amqp://HOST/VHOST/' lists the dead-letter queues)", r.Queue, r.VHost, r.HostPort())
		}
		return nil, err
	}
	ep.info, ep.infoErr = ep.mgmt.Queue(ctx, r.VHost, r.Queue)
	if ep.infoErr == nil {
		return ep, nil
	}
	if errors.Is(ep.infoErr, ErrAuth) {
		return nil, ep.infoErr
	}
	// The management API is unreachable: AMQP still answers. Commands
	// that need the queue's type say so (NeedManagement).
	ep.info = QueueInfo{Name: r.Queue, VHost: r.VHost, Type: ""}
	return ep, nil
}

// newEndpoint parses a reference and the management URL (bad input: exit
// 2) without connecting.
func newEndpoint(bref broker.Ref, cfg Config) (*Endpoint, error) {
	return parseEndpoint(bref, cfg, false)
}

// parseEndpoint is newEndpoint; with vhost, a reference that names no
// queue is taken as its vhost's (amqp://HOST/VHOST/, amqp://HOST for /:
// doctor), the endpoint's Ref.Queue "".
func parseEndpoint(bref broker.Ref, cfg Config, vhost bool) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	u := bref.URL()
	if u == nil {
		return nil, errs.BadInputf("%s is not an amqp:// or amqps:// reference", bref.Display)
	}
	q := u.Query()
	u.RawQuery = ""
	ep := &Endpoint{display: bref.Display, cfg: cfg, exchanges: map[string]error{}}
	for k := range q {
		if k != "exchange" && k != "routing_key" {
			return nil, errs.BadInputf("%s: unknown parameter %q; a RabbitMQ reference is amqp://HOST/VHOST/QUEUE, or amqp://HOST/VHOST/?exchange=NAME&routing_key=KEY for an exchange to publish to", bref.Display, k)
		}
	}
	raw := u.String()
	if q.Has("exchange") {
		ep.isExchange, ep.exchange, ep.routingKey = true, q.Get("exchange"), q.Get("routing_key")
		// The path is /VHOST/ (an empty queue segment).
		raw = strings.TrimSuffix(raw, "/") + "/_"
	}
	r, err := ParseRef(raw, cfg.credential)
	if err != nil {
		return nil, errs.BadInput(errors.New(strings.Replace(err.Error(), Redact(raw), bref.Display, 1)))
	}
	if ep.isExchange {
		r.Queue = ""
	} else if r.Queue == "" && !vhost {
		return nil, errs.BadInputf("%s names no queue; use amqp://HOST/VHOST/QUEUE (%%2f is the default vhost)", bref.Display)
	} else if r.Queue == "" {
		// ParseVHostRef reads a missing vhost as /.
		if r, err = ParseVHostRef(raw, cfg.credential); err != nil {
			return nil, errs.BadInput(errors.New(strings.Replace(err.Error(), Redact(raw), bref.Display, 1)))
		}
	}
	ep.ref = r
	ep.mgmt, err = NewManagement(r, cfg.ManagementURL, ConnOptions{CAFile: cfg.CAFile})
	if err != nil {
		return nil, errs.BadInput(err)
	}
	return ep, nil
}

func (e *Endpoint) dial(ctx context.Context, purpose string) (*amqp091.Connection, error) {
	return e.dialWith(ctx, purpose, nil)
}

func (e *Endpoint) dialWith(ctx context.Context, purpose string, onConn func(net.Conn)) (*amqp091.Connection, error) {
	c, err := Dial(ctx, e.ref, ConnOptions{CAFile: e.cfg.CAFile, ConnectionName: "dlqctl " + purpose, onConn: onConn})
	if err != nil {
		if errors.Is(err, ErrBadRef) {
			return nil, errs.BadInput(err)
		}
		return nil, &redacted{err: err, text: broker.Redact(err.Error(), e.ref.pass)}
	}
	return c, nil
}

// Ref is the parsed reference.
func (e *Endpoint) Ref() Ref { return e.ref }

// Info is the queue's management description (Type "" when the
// management API was unreachable at Open).
func (e *Endpoint) Info() QueueInfo { return e.info }

// Management is the endpoint's management API client.
func (e *Endpoint) Management() *Management { return e.mgmt }

// NeedManagement returns the management API error (nil when it answered):
// for commands that cannot work without the queue's type and arguments.
func (e *Endpoint) NeedManagement(what string) error {
	if e.infoErr == nil {
		return nil
	}
	return fmt.Errorf("%s needs the RabbitMQ management API: %w", what, e.infoErr)
}

// Broker is "amqp".
func (e *Endpoint) Broker() string { return broker.AMQP }

// String is the reference as typed, credentials redacted.
func (e *Endpoint) String() string { return e.display }

// Name is the queue name (or the exchange).
func (e *Endpoint) Name() string {
	if e.isExchange {
		return "exchange " + e.exchange
	}
	return e.ref.Queue
}

// ID is amqp://HOST:PORT/VHOST/QUEUE.
func (e *Endpoint) ID() string {
	if e.isExchange {
		return strings.TrimSuffix(e.ref.String(), "/") + "/?exchange=" + url.QueryEscape(e.exchange) + "&routing_key=" + url.QueryEscape(e.routingKey)
	}
	return e.ref.String()
}

// Capabilities of a RabbitMQ queue, by queue type.
func (e *Endpoint) Capabilities() broker.Capabilities { return Capabilities(e.info.Type) }

// Capabilities of a RabbitMQ queue of type typ (TypeClassic, TypeQuorum,
// TypeStream; "" when it is not known yet, as before connecting: the less
// forgiving type is assumed).
func Capabilities(typ string) broker.Capabilities {
	c := broker.Capabilities{
		Label:             "RabbitMQ",
		Broker:            broker.AMQP,
		Hold:              broker.HoldDelivery,
		Removal:           broker.RemovePerMessage,
		Ordering:          broker.OrderQueue,
		Counts:            broker.CountsExact,
		ReleaseKeepsOrder: true,
		MaxBatchEntries:   MaxBatchEntries,
		MaxBatchBytes:     MaxBatchBytes,
		MaxMessageBytes:   MaxMessageBytes,
		Sharing:           broker.ShareCompeting,
		Backlog:           true,
		ReturnsByDepth:    true,
		FailureRecord:     "x-death and the consumer's failure headers",
		DeathReasons:      "rejected, expired, maxlen, delivery_limit",
		DepthGrowth:       true,
		DestinationDLQ:    true,
	}
	switch typ {
	case TypeQuorum:
		c.Ordering, c.ReleaseKeepsOrder, c.ReadCounts = broker.OrderNone, false, true
	case TypeStream:
		c.Hold = broker.HoldNone
	case "":
		// Unknown (no management API): assume the less forgiving type.
		c.Ordering, c.ReleaseKeepsOrder, c.ReadCounts = broker.OrderNone, false, true
	}
	return c
}

// Depth: the ready count from AMQP (exact at that instant) and the
// unacknowledged count from the management API (behind by its statistics
// interval, 5 s by default).
func (e *Endpoint) Depth(ctx context.Context) (broker.Depth, error) {
	if e.isExchange {
		return broker.Depth{}, fmt.Errorf("%s is an exchange: %w", e.display, broker.ErrUnsupported)
	}
	conn, err := e.dial(ctx, "depth")
	if err != nil {
		return broker.Depth{}, err
	}
	defer conn.Close()
	n, err := readyCount(conn, e.ref.Queue)
	if err != nil {
		return broker.Depth{}, err
	}
	d := broker.Depth{Ready: int64(n), Exact: true}
	if qi, err := e.mgmt.Queue(ctx, e.ref.VHost, e.ref.Queue); err == nil {
		d.Held = qi.Unacked
	}
	return d, nil
}

// Target is this endpoint as a destination: a queue (through the default
// exchange, routing key = queue name) or the exchange of the reference.
func (e *Endpoint) Target(ctx context.Context) (broker.Destination, error) {
	r := Route{Exchange: "", RoutingKeys: []string{e.ref.Queue}, Queue: e.ref.Queue}
	label := "queue " + e.ref.Queue
	if e.isExchange {
		r = Route{Exchange: e.exchange, RoutingKeys: []string{e.routingKey}}
		label = fmt.Sprintf("exchange %q (routing key %q)", e.exchange, e.routingKey)
	}
	return broker.Destination{Key: routeKey(r), Label: label, Target: r}, nil
}

func routeKey(r Route) string {
	return "amqp\x00" + r.Exchange + "\x00" + strings.Join(r.RoutingKeys, "\x00")
}

// RouterToSource routes each message to its first death's exchange and
// routing keys.
func (e *Endpoint) RouterToSource(ctx context.Context) (broker.Router, error) {
	if e.isExchange {
		return nil, errs.BadInputf("%s is an exchange, not a dead-letter queue: nothing to route back", e.display)
	}
	return &router{ep: e}, nil
}

type router struct {
	ep    *Endpoint
	mu    sync.Mutex
	dests map[string]broker.Destination // by routeKey
}

func (r *router) Describe() string {
	// "source (…)" as every broker's route back to the source says it.
	return "source (each message's first death: the exchange and routing keys it was published with, from x-death)"
}

// Skip reasons.
const (
	SkipNoDeath         = "no x-death record (not dead-lettered by RabbitMQ): redrive it with --to"
	SkipNoRoutingKeys   = "x-death has no routing keys: redrive it with --to"
	skipExchangeMissing = "source exchange %q does not exist"
)

func (r *router) Route(ctx context.Context, rec *record.Record) (broker.Destination, string, error) {
	var m Message
	if native, ok := nativeOf(rec); ok {
		m.Deaths = native.Deaths // what DeathsOf(rec) gives, already decoded
	} else {
		m.Deaths = DeathsOf(rec)
	}
	if len(m.Deaths.Deaths) == 0 {
		// Spring's RepublishMessageRecoverer: x-original-exchange/-routingKey.
		h := amqp091.Table{}
		for _, k := range []string{"x-original-exchange", "x-original-routingKey"} {
			if a, ok := rec.Attributes[k]; ok {
				h[k] = a.Value
			}
		}
		m.Delivery.Headers = h
	}
	route, err := SourceRoute(m)
	switch {
	case errors.Is(err, ErrNoRoute):
		return broker.Destination{}, SkipNoDeath, nil
	case err != nil:
		return broker.Destination{}, SkipNoRoutingKeys, nil
	}
	if missing := r.ep.exchangeMissing(ctx, route.Exchange); missing != nil {
		if errors.Is(missing, ErrNotFound) {
			return broker.Destination{}, fmt.Sprintf(skipExchangeMissing, route.Exchange), nil
		}
		return broker.Destination{}, "", missing
	}
	key := routeKey(route)
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.dests[key]; ok {
		return d, "", nil // the same route as an earlier message
	}
	label := fmt.Sprintf("exchange %q routing key %q", route.Exchange, route.RoutingKeys[0])
	if route.Exchange == "" {
		label = "queue " + route.RoutingKeys[0]
	}
	if len(route.RoutingKeys) > 1 {
		label += fmt.Sprintf(" (CC %s)", strings.Join(route.RoutingKeys[1:], ", "))
	}
	d := broker.Destination{Key: key, Label: label, Target: route}
	if len(r.dests) < maxCachedRoutes {
		if r.dests == nil {
			r.dests = map[string]broker.Destination{}
		}
		r.dests[key] = d
	}
	return d, "", nil
}

// maxCachedRoutes bounds the destinations a router remembers (a DLQ fed
// by a handful of exchanges and keys: each is built once).
const maxCachedRoutes = 1024

// exchangeMissing checks (once per exchange) that a route's exchange
// exists: ErrNotFound when it does not, nil when it does or when it cannot
// be checked (the publish then reports it per entry).
func (e *Endpoint) exchangeMissing(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err, ok := e.exchanges[name]; ok {
		return err
	}
	_, err := e.mgmt.Exchange(ctx, e.ref.VHost, name)
	switch {
	case err == nil:
	case errors.Is(err, ErrNotFound):
		err = fmt.Errorf("exchange %q: %w", name, ErrNotFound)
	case errors.Is(err, ErrAuth):
		return err
	default:
		err = nil // unreachable API: the publish will tell
	}
	e.exchanges[name] = err
	return err
}

// redacted is an error whose text had credentials removed; errors.Is
// still sees what it wraps.
type redacted struct {
	err  error
	text string
}

func (r *redacted) Error() string { return r.text }
func (r *redacted) Unwrap() error { return r.err }
