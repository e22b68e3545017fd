package amqp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Management is a client of RabbitMQ's management HTTP API (the
// rabbitmq_management plugin): what AMQP cannot answer — queue type and
// arguments, policies, depths, bindings, exchanges.
type Management struct {
	base       *url.URL
	user, pass string
	hc         *http.Client
}

// ErrManagementUnavailable: the management API did not answer.
var ErrManagementUnavailable = fmt.Errorf("RabbitMQ management API %w", broker.ErrUnreachable)

// ErrNotFound: the queue or exchange does not exist (broker.ErrNotFound).
var ErrNotFound = broker.ErrNotFound

// DefaultManagementURL is http://HOST:15672 for r.
func DefaultManagementURL(r Ref) string {
	return "http://" + net.JoinHostPort(r.Host, strconv.Itoa(DefaultMgmtPort))
}

// NewManagement returns a client for the API at rawURL (empty: the
// default for r) with r's credentials. Credentials in rawURL are refused:
// the API uses the queue reference's.
func NewManagement(r Ref, rawURL string, o ConnOptions) (*Management, error) {
	if rawURL == "" {
		rawURL = DefaultManagementURL(r)
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --amqp-management-url %q must be http(s)://HOST:PORT", ErrBadRef, redactQuery(Redact(rawURL)))
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: --amqp-management-url carries credentials; the management API uses the queue reference's (or %s/%s)", ErrBadRef, EnvUsername, EnvPassword)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" {
		tc, err := TLSConfig(Ref{TLS: true, Host: u.Hostname()}, ConnOptions{CAFile: o.CAFile})
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	}
	return &Management{base: u, user: r.user, pass: r.pass, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

// URL is the API's base URL (no credentials: a query string, which the
// API does not use and which may carry a password, is shown redacted).
func (m *Management) URL() string {
	u := *m.base
	q := u.RawQuery != "" || u.ForceQuery
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	if q {
		return u.String() + "?REDACTED"
	}
	return u.String()
}

func (m *Management) get(ctx context.Context, out any, segs ...string) error {
	p := m.base.Path + "/api"
	raw := m.base.Path + "/api"
	for _, s := range segs {
		p += "/" + s
		raw += "/" + url.PathEscape(s)
	}
	u := *m.base
	u.Path, u.RawPath = p, raw
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(m.user, m.pass)
	resp, err := m.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		problem, _, ok := broker.NetProblem(err)
		if !ok {
			problem = unwrapURLError(err).Error()
		}
		return broker.Kindf(ErrManagementUnavailable, "cannot connect to the RabbitMQ management API at %s: %s; check --amqp-management-url (or %s) and that the rabbitmq_management plugin is enabled", m.URL(), problem, "DLQCTL_AMQP_MANAGEMENT_URL")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%w at %s: reading the answer: %v", ErrManagementUnavailable, m.URL(), err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode == http.StatusUnauthorized:
		return broker.Kindf(ErrAuth, "the RabbitMQ management API at %s refused user %q (401); check the credentials: the user needs the management (or monitoring) tag", m.URL(), m.user)
	case resp.StatusCode == http.StatusForbidden:
		return broker.Kindf(ErrAuth, "the RabbitMQ management API at %s denied user %q access to %s (403); grant the user the monitoring tag and permissions on the vhost", m.URL(), m.user, strings.Join(segs, "/"))
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("management API %s answered %d: %s", m.URL(), resp.StatusCode, truncate(string(body), 200))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("management API %s: unexpected answer to %s: %v", m.URL(), strings.Join(segs, "/"), err)
	}
	return nil
}

// redactQuery hides a URL's query string (it may carry a password).
func redactQuery(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i] + "?REDACTED"
	}
	return s
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Overview is the part of /api/overview dlqctl reads.
type Overview struct {
	RabbitMQVersion   string `json:"rabbitmq_version"`
	ManagementVersion string `json:"management_version"`
	ClusterName       string `json:"cluster_name"`
	ErlangVersion     string `json:"erlang_version"`
}

// Overview reads the server version.
func (m *Management) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	err := m.get(ctx, &o, "overview")
	return o, err
}

// Queue types.
const (
	TypeClassic = "classic"
	TypeQuorum  = "quorum"
	TypeStream  = "stream"
)

// QueueInfo is a queue as the management API describes it.
type QueueInfo struct {
	Name            string         `json:"name"`
	VHost           string         `json:"vhost"`
	Type            string         `json:"type"`
	Durable         bool           `json:"durable"`
	AutoDelete      bool           `json:"auto_delete"`
	Arguments       map[string]any `json:"arguments"`
	Policy          string         `json:"policy"`
	OperatorPolicy  string         `json:"operator_policy"`
	EffectivePolicy map[string]any `json:"effective_policy_definition"`
	Messages        int64          `json:"messages"`
	Ready           int64          `json:"messages_ready"`
	Unacked         int64          `json:"messages_unacknowledged"`
	Consumers       int            `json:"consumers"`
	State           string         `json:"state"`
	// Bytes of message bodies (ready + unacked).
	Bytes int64 `json:"message_bytes"`
	// ConsumerDetails lists the queue's consumers (only in the answer for
	// one queue, not in a listing).
	ConsumerDetails []QueueConsumer `json:"consumer_details"`
}

// QueueConsumer is one consumer of a queue as the management API lists it.
type QueueConsumer struct {
	Tag         string         `json:"consumer_tag"`
	AckRequired bool           `json:"ack_required"`
	Prefetch    int            `json:"prefetch_count"`
	Channel     ChannelDetails `json:"channel_details"`
}

// ChannelDetails is a consumer's channel as the management API lists it.
// The API writes an empty list ([]) instead of an object when it has no
// details of the channel (a consumer whose channel is closing, a direct
// consumer): that is a channel without a name, which the run cannot read
// and so accounts as holding everything it might.
type ChannelDetails struct {
	Name string `json:"name"`
}

// UnmarshalJSON reads the object, or the empty list the API writes in
// its place.
func (c *ChannelDetails) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		*c = ChannelDetails{}
		return nil
	}
	type plain ChannelDetails
	return json.Unmarshal(b, (*plain)(c))
}

// ChannelInfo is the part of a channel's description dlqctl reads.
type ChannelInfo struct {
	Name string `json:"name"`
	// Unacked is what the channel holds unacknowledged, over every queue
	// it consumes (refreshed every statistics interval).
	Unacked   int64 `json:"messages_unacknowledged"`
	Consumers int   `json:"consumer_count"`
}

// Channel reads one channel by name. ErrNotFound when it is closed.
func (m *Management) Channel(ctx context.Context, name string) (ChannelInfo, error) {
	var c ChannelInfo
	err := m.get(ctx, &c, "channels", name)
	return c, err
}

// UnmarshalJSON tolerates the management API's quirks: an empty
// effective_policy_definition is [] rather than {} on some versions, and
// a queue without a type (classic on old servers).
func (q *QueueInfo) UnmarshalJSON(b []byte) error {
	type plain QueueInfo
	var raw struct {
		plain
		EffectivePolicy json.RawMessage `json:"effective_policy_definition"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*q = QueueInfo(raw.plain)
	q.EffectivePolicy = nil
	if len(raw.EffectivePolicy) > 0 && raw.EffectivePolicy[0] == '{' {
		if err := json.Unmarshal(raw.EffectivePolicy, &q.EffectivePolicy); err != nil {
			return err
		}
	}
	if q.Type == "" {
		q.Type = TypeClassic
	}
	return nil
}

// Queue reads one queue. ErrNotFound when it does not exist.
func (m *Management) Queue(ctx context.Context, vhost, name string) (QueueInfo, error) {
	var q QueueInfo
	err := m.get(ctx, &q, "queues", vhost, name)
	return q, err
}

// Queues lists a vhost's queues ("" vhost: all vhosts).
func (m *Management) Queues(ctx context.Context, vhost string) ([]QueueInfo, error) {
	var qs []QueueInfo
	segs := []string{"queues"}
	if vhost != "" {
		segs = append(segs, vhost)
	}
	err := m.get(ctx, &qs, segs...)
	return qs, err
}

// Binding is a binding from an exchange to a queue or exchange.
type Binding struct {
	Source          string         `json:"source"`
	VHost           string         `json:"vhost"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"` // queue | exchange
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
}

// Bindings lists every binding of a vhost.
func (m *Management) Bindings(ctx context.Context, vhost string) ([]Binding, error) {
	var bs []Binding
	err := m.get(ctx, &bs, "bindings", vhost)
	return bs, err
}

// QueueBindings lists the bindings whose destination is the queue.
func (m *Management) QueueBindings(ctx context.Context, vhost, queue string) ([]Binding, error) {
	var bs []Binding
	err := m.get(ctx, &bs, "queues", vhost, queue, "bindings")
	return bs, err
}

// ExchangeInfo is an exchange as the management API describes it.
type ExchangeInfo struct {
	Name       string         `json:"name"`
	VHost      string         `json:"vhost"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments"`
	Policy     string         `json:"policy"`
	AutoDelete bool           `json:"auto_delete"`
}

// Exchange reads one exchange ("" is the default exchange, which the API
// calls amq.default). ErrNotFound when it does not exist.
func (m *Management) Exchange(ctx context.Context, vhost, name string) (ExchangeInfo, error) {
	if name == "" {
		name = "amq.default"
	}
	var e ExchangeInfo
	err := m.get(ctx, &e, "exchanges", vhost, name)
	return e, err
}

// Exchanges lists a vhost's exchanges.
func (m *Management) Exchanges(ctx context.Context, vhost string) ([]ExchangeInfo, error) {
	var es []ExchangeInfo
	err := m.get(ctx, &es, "exchanges", vhost)
	return es, err
}

// Policy is a (user or operator) policy.
type Policy struct {
	Name       string         `json:"name"`
	VHost      string         `json:"vhost"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply-to"`
	Priority   int            `json:"priority"`
	Definition map[string]any `json:"definition"`
}

// Policies lists a vhost's user policies.
func (m *Management) Policies(ctx context.Context, vhost string) ([]Policy, error) {
	var ps []Policy
	err := m.get(ctx, &ps, "policies", vhost)
	return ps, err
}

// Effective queue settings: a queue argument (x-...) and a policy key can
// both set them. For the dead-letter exchange, routing key and strategy the
// argument wins; for the numeric limits the lower value applies.

// DeadLetterExchange returns the queue's dead-letter exchange and whether
// one is set ("" is the default exchange, a legal DLX).
func (q QueueInfo) DeadLetterExchange() (string, bool) {
	if v, ok := q.Arguments["x-dead-letter-exchange"].(string); ok {
		return v, true
	}
	if v, ok := q.EffectivePolicy["dead-letter-exchange"].(string); ok {
		return v, true
	}
	return "", false
}

// DeadLetterRoutingKey returns the queue's dead-letter routing key.
func (q QueueInfo) DeadLetterRoutingKey() (string, bool) {
	if v, ok := q.Arguments["x-dead-letter-routing-key"].(string); ok {
		return v, true
	}
	if v, ok := q.EffectivePolicy["dead-letter-routing-key"].(string); ok {
		return v, true
	}
	return "", false
}

// DeadLetterStrategy is "at-most-once" (the default) or "at-least-once"
// (quorum queues with overflow reject-publish).
func (q QueueInfo) DeadLetterStrategy() string {
	if v, ok := q.Arguments["x-dead-letter-strategy"].(string); ok {
		return v
	}
	if v, ok := q.EffectivePolicy["dead-letter-strategy"].(string); ok {
		return v
	}
	return "at-most-once"
}

// Overflow is drop-head (default), reject-publish or reject-publish-dlx.
func (q QueueInfo) Overflow() string {
	if v, ok := q.Arguments["x-overflow"].(string); ok {
		return v
	}
	if v, ok := q.EffectivePolicy["overflow"].(string); ok {
		return v
	}
	return "drop-head"
}

func (q QueueInfo) minLimit(arg, key string) (int64, bool) {
	a, aok := number(q.Arguments[arg])
	p, pok := number(q.EffectivePolicy[key])
	switch {
	case aok && pok:
		return min(a, p), true
	case aok:
		return a, true
	case pok:
		return p, true
	}
	return 0, false
}

// DeliveryLimit is a quorum queue's delivery limit (x-delivery-limit or
// the delivery-limit policy key). A negative limit means none (4.x).
func (q QueueInfo) DeliveryLimit() (int64, bool) {
	l, ok := q.minLimit("x-delivery-limit", "delivery-limit")
	if ok && l < 0 {
		return 0, false
	}
	return l, ok
}

// MessageTTL is the queue's message TTL in milliseconds.
func (q QueueInfo) MessageTTL() (int64, bool) { return q.minLimit("x-message-ttl", "message-ttl") }

// MaxLength is the queue's length limit in messages.
func (q QueueInfo) MaxLength() (int64, bool) { return q.minLimit("x-max-length", "max-length") }

// MaxLengthBytes is the queue's length limit in bytes.
func (q QueueInfo) MaxLengthBytes() (int64, bool) {
	return q.minLimit("x-max-length-bytes", "max-length-bytes")
}

// Expires is the queue's idle expiry in milliseconds.
func (q QueueInfo) Expires() (int64, bool) { return q.minLimit("x-expires", "expires") }

func number(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// QueueNames lists the names of vhost's queues: what shell completion offers.
func (m *Management) QueueNames(ctx context.Context, vhost string) ([]string, error) {
	qs, err := m.Queues(ctx, vhost)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(qs))
	for _, q := range qs {
		names = append(names, q.Name)
	}
	return names, nil
}
