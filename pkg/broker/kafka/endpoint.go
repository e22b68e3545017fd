package kafka

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Config is how dlqctl reaches a Kafka cluster and which group keeps its
// journal: plain data filled by cmd (flags, DLQCTL_KAFKA_PASSWORD, the AWS
// credential chain).
type Config struct {
	TLS bool // --kafka-tls
	// TLSExplicit: --kafka-tls was given (true or false). Without it,
	// AWS_MSK_IAM turns TLS on (MSK's IAM listener, port 9098, is
	// TLS-only); with it, its value wins.
	TLSExplicit bool
	CAFile      string // --kafka-ca
	SASL        string // --kafka-sasl
	User        string // --kafka-user (or kafka://USER@…)
	// Password is DLQCTL_KAFKA_PASSWORD (read by cmd).
	Password string
	// AWS resolves MSK IAM credentials (the standard chain, from cmd).
	AWS func(ctx context.Context) (aws.Credentials, error)
	// Group is dlqctl's consumer group on the topic (--kafka-group; "" means
	// dlqctl-TOPIC).
	Group string
	// StateDir keeps the member ledger of consuming reads (members.go):
	// Tell is told what a read waits for, Warn that the ledger cannot be
	// written. "" keeps none.
	StateDir   string
	Tell, Warn func(string)
}

func (c Config) conn() Conn {
	tlsOn := c.TLS
	if mech, _ := NormalizeSASL(c.SASL); mech == SASLAWSMSKIAM && !c.TLSExplicit {
		tlsOn = true
	}
	return Conn{TLS: tlsOn, CAFile: c.CAFile, SASL: c.SASL, User: c.User, Password: c.Password, AWS: c.AWS}
}

// DefaultGroup is dlqctl's consumer group on topic when --kafka-group is not set.
func DefaultGroup(topic string) string { return "dlqctl-" + topic }

// Endpoint is a Kafka topic as dlqctl reads and writes it.
type Endpoint struct {
	addr  Address
	conn  Conn
	group string
	// members: the member ledger settings of consuming reads.
	members ConsumerOptions

	once   sync.Once
	cl     *kgo.Client
	adm    *kadm.Client
	clErr  error
	closed bool
}

var _ broker.Endpoint = (*Endpoint)(nil)

// Open resolves a kafka:// reference. It does not connect: the first call
// that needs the cluster does.
func Open(_ context.Context, ref broker.Ref, cfg Config) (*Endpoint, error) {
	u := ref.URL()
	if u == nil {
		return nil, &UsageError{Msg: fmt.Sprintf("%s is not a kafka:// reference", ref.Display)}
	}
	if _, has := u.User.Password(); has {
		return nil, &UsageError{Msg: fmt.Sprintf("a Kafka reference must not carry a password: put it in %s and write kafka://USER@%s%s", EnvPassword, u.Host, u.Path)}
	}
	raw := Scheme + "://"
	if u.User != nil {
		raw += u.User.Username() + "@"
	}
	raw += u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		raw += "?" + u.RawQuery
	}
	addr, err := ParseAddress(raw)
	if err != nil {
		return nil, err
	}
	conn := cfg.conn()
	if conn.User == "" {
		conn.User = addr.User
	}
	if err := conn.Validate(); err != nil {
		return nil, err
	}
	g := cfg.Group
	if g == "" {
		g = DefaultGroup(addr.Topic)
	}
	return &Endpoint{addr: addr, conn: conn, group: g, members: ConsumerOptions{StateDir: cfg.StateDir, Tell: cfg.Tell, Warn: cfg.Warn}}, nil
}

// Address is the parsed reference.
func (e *Endpoint) Address() Address { return e.addr }

// Conn is the connection settings.
func (e *Endpoint) Conn() Conn { return e.conn }

// Group is dlqctl's consumer group on the topic.
func (e *Endpoint) Group() string { return e.group }

// NothingPendingNote is what a read that found nothing pending says:
// "no messages" alone reads as an empty topic, where earlier runs of the
// group may have handled every record it holds
// (broker.NothingPendingNoter).
func (e *Endpoint) NothingPendingNote() string {
	return fmt.Sprintf("nothing pending in %s for consumer group %s: the topic is empty, or earlier runs of that group handled every record it holds (--kafka-group NAME reads as another group)", e, e.group)
}

func (e *Endpoint) Broker() string { return broker.Kafka }
func (e *Endpoint) String() string { return e.addr.String() }
func (e *Endpoint) Name() string   { return e.addr.Topic }

// ID is kafka://BROKERS/TOPIC, without user or password.
func (e *Endpoint) ID() string {
	return Scheme + "://" + strings.Join(e.addr.Brokers, ",") + "/" + e.addr.Topic
}

// Capabilities of a Kafka topic.
func (e *Endpoint) Capabilities() broker.Capabilities { return Capabilities() }

// ReplayNote is said on every Kafka redrive: a replay appends.
const ReplayNote = "replayed records are appended: they land after newer records with the same key, so consumers of the destination see them out of their original order"

// Capabilities of every Kafka topic: free reads by offset, removal by
// committing an offset, order per partition, exact counts (transaction
// markers aside), no native move, group-shared partitions.
func Capabilities() broker.Capabilities {
	return broker.Capabilities{
		Label:             "Kafka",
		Broker:            broker.Kafka,
		Hold:              broker.HoldNone,
		Removal:           broker.RemoveCommitOffset,
		Ordering:          broker.OrderPartition,
		Counts:            broker.CountsExact,
		ReadCounts:        false,
		ReleaseKeepsOrder: true,
		NativeMove:        false,
		MaxBatchEntries:   500,
		MaxBatchBytes:     16 << 20,
		// max.message.bytes is per topic (1 MiB by default): the broker
		// rejects a larger record per entry, dlqctl does not guess.
		MaxMessageBytes: 0,
		MaxAttributes:   0,
		Sharing:         broker.ShareGroup,
		Transactions:    true,
		DeleteByOffset:  true,
		ConsumerLag:     true,
		FailureRecord:   "its dead-letter headers",
		ReplayNote:      ReplayNote,
		Retention:       true,
	}
}

// Admin returns the endpoint's admin client (connected on first use).
func (e *Endpoint) Admin() (*kadm.Client, error) {
	e.once.Do(func() {
		e.cl, e.clErr = NewClient(e.addr, e.conn)
		if e.clErr == nil {
			e.adm = kadm.NewClient(e.cl)
		}
	})
	return e.adm, e.clErr
}

// onTopic is an endpoint for another topic of e's cluster that shares e's
// client (closed with e, not with it).
func (e *Endpoint) onTopic(topic, group string) (*Endpoint, error) {
	if _, err := e.Admin(); err != nil {
		return nil, err
	}
	t := &Endpoint{addr: e.addr.WithTopic(topic), conn: e.conn, group: group, members: e.members, cl: e.cl, adm: e.adm}
	t.once.Do(func() {})
	return t, nil
}

// Close releases the endpoint's admin connection.
func (e *Endpoint) Close() {
	if e.cl != nil {
		e.cl.Close()
	}
}

// Plan reads the topic's ranges and the group's journal.
func (e *Endpoint) Plan(ctx context.Context) (*Plan, error) {
	adm, err := e.Admin()
	if err != nil {
		return nil, err
	}
	p, err := MakePlan(ctx, adm, e.addr.Topic, e.group)
	return p, e.wrap(err)
}

// wrap maps Kafka errors to the broker-neutral ones, credentials redacted.
func (e *Endpoint) wrap(err error) error {
	if err == nil {
		return nil
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	text := broker.Redact(err.Error(), e.conn.Password)
	switch {
	case errors.Is(err, ErrTopicNotFound), errors.Is(err, kerr.UnknownTopicOrPartition):
		hosts := strings.Join(e.addr.Brokers, ",")
		return broker.Kindf(broker.ErrNotFound, "topic %s does not exist on %s; check the name ('dlqctl queues kafka://%s' lists the dead-letter topics)", e.addr.Topic, hosts, hosts)
	}
	if x := explain(e.addr, e.conn, err); x != nil {
		return x
	}
	return errors.New(text)
}

// explain turns a failure to reach or log in to the cluster into one
// sentence naming the problem and the fix, wrapping broker.ErrUnreachable
// or broker.ErrAccessDenied (nil for any other error). It never names the
// password.
func explain(addr Address, conn Conn, err error) error {
	hosts := strings.Join(addr.Brokers, ",")
	mech, _ := NormalizeSASL(conn.SASL)
	login := "--kafka-sasl, --kafka-user and " + EnvPassword
	problem, isTLS, ok := broker.NetProblem(err)
	if !ok && errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "unable to dial") {
		// The dial (and, with --kafka-tls, its handshake) did not finish
		// within the dial timeout: a TLS handshake with a plaintext
		// listener waits for an answer that never comes.
		problem, isTLS, ok = "timed out", conn.TLS || conn.CAFile != "", true
	}
	if ok {
		fix := "check the bootstrap host and port, that the brokers are running, and --kafka-tls if they listen with TLS"
		switch {
		case isTLS:
			fix = "check --kafka-tls (drop it for a plaintext listener), --kafka-ca (the CA that signed the brokers' certificates), the host and port"
		case strings.HasPrefix(problem, "no such host"), strings.HasPrefix(problem, "cannot resolve"):
			fix = "check the host names in the reference"
		}
		return broker.Kindf(broker.ErrUnreachable, "cannot connect to Kafka at %s: %s; %s", hosts, problem, fix)
	}
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		return broker.Kindf(broker.ErrAccessDenied, "Kafka at %s refused the %s login of user %q (%s); check %s", hosts, mech, conn.User, kerrText(err), login)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return broker.Kindf(broker.ErrAccessDenied, "Kafka at %s denied user %q (%s); grant its ACLs on topic %s and dlqctl's consumer group, or check %s", hosts, conn.User, kerrText(err), addr.Topic, login)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		if mech != "" {
			// A broker ends the connection on a refused SASL login
			// (kfake does), as on a TLS listener spoken to in plaintext.
			return broker.Kindf(broker.ErrAccessDenied, "Kafka at %s closed the connection during the %s login of user %q; check %s, and --kafka-tls if the listener uses TLS", hosts, mech, conn.User, login)
		}
		return broker.Kindf(broker.ErrUnreachable, "Kafka at %s closed the connection; check --kafka-tls if the listener uses TLS, and --kafka-sasl if it requires a login", hosts)
	}
	return nil
}

// kerrText is a Kafka error code's name ("SASL_AUTHENTICATION_FAILED").
func kerrText(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "refused"
}

// Depth is the sum over partitions of the end offset less the group's
// committed offset (less records a previous run handled past a pending
// one): an upper bound, as transaction markers take offsets too.
func (e *Endpoint) Depth(ctx context.Context) (broker.Depth, error) {
	p, err := e.Plan(ctx)
	if err != nil {
		return broker.Depth{}, err
	}
	return broker.Depth{Ready: p.Pending(), Exact: true}, nil
}

// ToRecord builds the broker-neutral record of m read from endpoint id.
func ToRecord(m *Message, id string, now time.Time) *record.Record {
	body := string(m.Value)
	r := &record.Record{
		MessageID:  m.ID(),
		Queue:      id,
		Broker:     record.BrokerKafka,
		Body:       body,
		BodySHA256: record.SHA256Hex(body),
		Attributes: HeaderAttributes(m.Headers),
	}
	sys := &record.KafkaSystem{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
	if !m.Timestamp.IsZero() {
		sys.Timestamp = record.Timestamp{Time: m.Timestamp}
		r.System.SentAt = m.Timestamp
		if age := int64(now.Sub(m.Timestamp) / time.Second); age > 0 {
			r.AgeSeconds = age
		}
	}
	if m.Key != nil {
		if utf8.Valid(m.Key) {
			sys.Key = string(m.Key)
		} else {
			sys.KeyBase64 = base64.StdEncoding.EncodeToString(m.Key)
		}
		r.OrderingKey = sys.Key
		if r.OrderingKey == "" {
			r.OrderingKey = sys.KeyBase64
		}
	}
	size := len(m.Value) + len(m.Key)
	for _, h := range m.Headers {
		size += len(h.Key) + len(h.Value)
		rh := record.Header{Key: h.Key}
		if utf8.Valid(h.Value) {
			rh.Value = string(h.Value)
		} else {
			rh.Base64 = base64.StdEncoding.EncodeToString(h.Value)
		}
		sys.Headers = append(sys.Headers, rh)
	}
	r.SizeBytes = size
	sys.Stage, _ = Stage(m.Topic)
	if o := m.FullOrigin(); o.Topic != "" {
		ko := &record.KafkaOrigin{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, ConsumerGroup: o.ConsumerGroup, Format: o.Format}
		if !o.Timestamp.IsZero() {
			ko.Timestamp = record.Timestamp{Time: o.Timestamp}
		}
		sys.Origin = ko
	}
	if mk := ReplayMarker(m.Headers); mk != nil {
		r.System.ReceiveCount = 0
	}
	sys.Native = m
	r.System.Kafka = sys
	return r
}

// leanRecord is the record a redrive without a selection reads
// (broker.SourceOptions.Lean): the id, body, size, key, position, the
// origin's topic, the redrive marker (the only attribute), and the message
// itself (KafkaSystem.Native) for the copy. The body is the message's
// value, not a copy (a consuming read never reuses a message's memory),
// and its SHA-256 is left to the reader that needs it (the mover, for
// the journal's first body digests).
func leanRecord(m *Message, id string) *record.Record {
	return leanRecords([]*Message{m}, id)[0]
}

// leanParts is a lean record with its Kafka part and its origin.
type leanParts struct {
	rec    record.Record
	sys    record.KafkaSystem
	origin record.KafkaOrigin
}

// leanRecords is leanRecord for a poll's messages: their records, Kafka
// parts and origins are one allocation, and so are their ids (one buffer
// the id strings share; a string never changes, so none is written again).
func leanRecords(ms []*Message, id string) []*record.Record {
	all := make([]leanParts, len(ms))
	out := make([]*record.Record, len(ms))
	n := 0
	for _, m := range ms {
		n += len(m.Topic) + 1 + 11 + 1 + 20 // TOPIC-PARTITION@OFFSET at its longest
	}
	ids := make([]byte, 0, n)
	for i, m := range ms {
		start := len(ids)
		ids = appendID(ids, m)
		r := fillLean(&all[i], m, id)
		r.MessageID = unsafe.String(unsafe.SliceData(ids[start:]), len(ids)-start)
		out[i] = r
	}
	return out
}

// fillLean fills p with m's lean record (its MessageID left to the caller).
func fillLean(p *leanParts, m *Message, id string) *record.Record {
	var body string
	if len(m.Value) > 0 {
		body = unsafe.String(unsafe.SliceData(m.Value), len(m.Value))
	}
	r := &p.rec
	r.Queue, r.Broker, r.Body = id, record.BrokerKafka, body
	sys := &p.sys
	sys.Topic, sys.Partition, sys.Offset, sys.Native = m.Topic, m.Partition, m.Offset, m
	size := len(m.Value) + len(m.Key)
	for _, h := range m.Headers {
		size += len(h.Key) + len(h.Value)
	}
	r.SizeBytes = size
	if m.Key != nil && utf8.Valid(m.Key) {
		// The key as read, like the body.
		r.OrderingKey = unsafe.String(unsafe.SliceData(m.Key), len(m.Key))
	}
	if m.Origin.Topic != "" {
		p.origin = record.KafkaOrigin{Topic: m.Origin.Topic, Partition: -1, Offset: -1, Format: m.Origin.Format}
		sys.Origin = &p.origin
	}
	if v, ok := lastHeader(m.Headers, MarkerHeader); ok {
		r.Attributes = map[string]record.Attribute{MarkerHeader: {Type: "String", Value: string(v)}}
	}
	r.System.Kafka = sys
	return r
}

// messageFromRecord rebuilds the Kafka record a record.Record describes:
// key, value and every header in order (from System.Kafka when the record
// was read from Kafka; else the ordering key and the attributes, sorted by
// name, as a restore from another broker's archive needs).
//
// A record whose headers and key a --transform rewrote (Rewritten) is
// made from them and its body; the message it was read as (Native), when
// there is one, only tells which empty header values were null. A record
// whose body alone changed keeps the read's key and headers as they are.
func messageFromRecord(rec *record.Record) (*Message, error) {
	var native *Message
	if k := rec.System.Kafka; k != nil {
		native, _ = k.Native.(*Message)
		if native != nil && !k.Rewritten {
			if string(native.Value) == rec.Body {
				// The message as read.
				return native, nil
			}
			// Only the body changed since the read.
			m := *native
			m.Value = []byte(rec.Body)
			return &m, nil
		}
	}
	m := &Message{Value: []byte(rec.Body), Partition: -1, Offset: -1}
	if k := rec.System.Kafka; k != nil {
		m.Topic, m.Partition, m.Offset = k.Topic, k.Partition, k.Offset
		switch {
		case k.KeyBase64 != "":
			b, err := base64.StdEncoding.DecodeString(k.KeyBase64)
			if err != nil {
				return nil, fmt.Errorf("record %s: key_base64: %w", rec.MessageID, err)
			}
			m.Key = b
		case k.Key != "":
			m.Key = []byte(k.Key)
		}
		m.Headers = make([]Header, 0, len(k.Headers))
		var empties map[string]int // the empty values of each key seen so far
		for _, h := range k.Headers {
			v := []byte(h.Value)
			if h.Base64 != "" {
				b, err := base64.StdEncoding.DecodeString(h.Base64)
				if err != nil {
					return nil, fmt.Errorf("record %s: header %s: %w", rec.MessageID, h.Key, err)
				}
				v = b
			}
			if len(v) == 0 && native != nil {
				// The record writes a null value as an empty one: the n-th
				// empty value of a key is null when the read's n-th was.
				if empties == nil {
					empties = map[string]int{}
				}
				if nullValue(native.Headers, h.Key, empties[h.Key]) {
					v = nil
				}
				empties[h.Key]++
			}
			m.Headers = append(m.Headers, Header{Key: h.Key, Value: v})
		}
		m.Origin = DecodeOrigin(m.Headers)
		return m, nil
	}
	if rec.OrderingKey != "" {
		m.Key = []byte(rec.OrderingKey)
	}
	names := make([]string, 0, len(rec.Attributes))
	for n := range rec.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := rec.Attributes[n]
		v := []byte(a.Value)
		if a.IsBinary() {
			b, err := base64.StdEncoding.DecodeString(a.Base64)
			if err != nil {
				return nil, fmt.Errorf("record %s: attribute %s: %w", rec.MessageID, n, err)
			}
			v = b
		}
		m.Headers = append(m.Headers, Header{Key: n, Value: v})
	}
	m.Origin = DecodeOrigin(m.Headers)
	return m, nil
}

// nullValue reports whether the n-th (from 0) empty value of key in hs is
// null.
func nullValue(hs []Header, key string, n int) bool {
	for _, h := range hs {
		if h.Key != key || len(h.Value) != 0 {
			continue
		}
		if n == 0 {
			return h.Value == nil
		}
		n--
	}
	return false
}
