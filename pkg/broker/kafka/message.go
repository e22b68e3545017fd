package kafka

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// Header is one Kafka record header (franz-go's own type, so a record's
// headers are used as read, without a copy). Keys may repeat; readers take
// the last.
type Header = kgo.RecordHeader

// Message is one record read from a topic: everything a replay needs
// (key, value, headers in order) and where it sits (partition, offset).
type Message struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	// originTopicOnly: Origin holds Topic and Format only (FullOrigin).
	originTopicOnly bool
	Key             []byte
	Value           []byte
	Headers         []Header
	Timestamp       time.Time
	// Origin is decoded from the headers by the reader. A lean read's
	// messages (a redrive without a selection) carry only its Topic and
	// Format (what routing needs: the other
	// fields read as unknown); FullOrigin decodes all of it.
	Origin Origin
	// from is the partition assignment whose poll handed the record out
	// (nil: not read by a group member); held: it counts the record as
	// held for the run until an ack or a release settles it. The
	// consumer's mu guards both.
	from *partState
	held bool
}

// FullOrigin is the origin of m with every field the headers give.
func (m *Message) FullOrigin() Origin {
	if m.originTopicOnly {
		return decodeOrigin(m.Headers, nil, true)
	}
	return m.Origin
}

// ID names the record for people and journals: TOPIC-PARTITION@OFFSET, as
// kcat and most Kafka tools print it.
func (m *Message) ID() string {
	b := appendID(make([]byte, 0, len(m.Topic)+24), m)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

// appendID appends m's ID to b.
func appendID(b []byte, m *Message) []byte {
	b = append(b, m.Topic...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(m.Partition), 10)
	b = append(b, '@')
	return strconv.AppendInt(b, m.Offset, 10)
}

// Header returns the value of the last header named key (Kafka headers
// repeat; a recoverer that appends on every hop leaves the newest last).
func (m *Message) Header(key string) ([]byte, bool) { return lastHeader(m.Headers, key) }

func lastHeader(hs []Header, key string) ([]byte, bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return hs[i].Value, true
		}
	}
	return nil, false
}

func fromKgo(r *kgo.Record) *Message {
	m := new(Message)
	fillFromKgo(m, r, nil, true)
	return m
}

// fillFromKgo fills m from r (headers used as read, without a copy); in,
// when set, shares the origin's strings between records. Without full,
// only the origin's topic and format are decoded (FullOrigin does the
// rest on demand): a replay reads no other header value of a record.
func fillFromKgo(m *Message, r *kgo.Record, in *interner, full bool) {
	*m = Message{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, LeaderEpoch: r.LeaderEpoch,
		Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UTC(), Headers: r.Headers,
		Origin: decodeOrigin(r.Headers, in, full), originTopicOnly: !full,
	}
}

// interner hands out one string per distinct header value (the origin
// topic and group repeat on every record of a dead-letter topic): a run
// over a topic allocates them once, not once per record. Bounded: it
// starts over past maxInterned distinct values.
type interner struct {
	m map[string]string
	// recent holds the last values handed out (a dead-letter topic's
	// records name the same origin topic and group over and over): a hit
	// costs a comparison, not a hash and a map lookup.
	recent [2]string
	next   int
}

const maxInterned = 1024

func (in *interner) str(b []byte) string {
	if in == nil {
		return string(b)
	}
	for _, s := range in.recent {
		if s == string(b) && s != "" { // no allocation for the comparison
			return s
		}
	}
	if s, ok := in.m[string(b)]; ok { // no allocation for the lookup
		in.remember(s)
		return s
	}
	if in.m == nil || len(in.m) >= maxInterned {
		in.m = make(map[string]string, 16)
	}
	s := string(b)
	in.m[s] = s
	in.remember(s)
	return s
}

func (in *interner) remember(s string) {
	in.recent[in.next] = s
	in.next = (in.next + 1) % len(in.recent)
}

// Origin is where a dead-lettered record came from, as its recoverer wrote
// it in the headers. Partition and Offset are -1 when unknown.
type Origin struct {
	Topic         string    `json:"topic,omitempty"`
	Partition     int32     `json:"partition"`
	Offset        int64     `json:"offset"`
	Timestamp     time.Time `json:"timestamp,omitzero"`
	ConsumerGroup string    `json:"consumer_group,omitempty"`
	// Format names the header convention the origin was read from:
	// spring-kafka, kafka-connect, kafka-streams, spring-cloud-stream,
	// dlq-headers (dlq_* / original_* of the hand-rolled pattern).
	Format string `json:"format,omitempty"`
}

// headerFormat is one header convention for the origin of a record.
type headerFormat struct {
	name                                     string
	topic, partition, offset, timestamp, grp string
	binary                                   bool // numbers as big-endian binary (Spring) or decimal text
}

// Conventions, most specific first. Spring Kafka's
// DeadLetterPublishingRecoverer writes the partition as a 4-byte and the
// offset and timestamp as 8-byte big-endian numbers; Kafka Connect, Kafka
// Streams and the hand-rolled dlq_* pattern write decimal strings; Spring
// Cloud Stream's Kafka binder writes binary numbers like Spring Kafka.
var headerFormats = []headerFormat{
	{name: "spring-kafka", topic: "kafka_dlt-original-topic", partition: "kafka_dlt-original-partition",
		offset: "kafka_dlt-original-offset", timestamp: "kafka_dlt-original-timestamp", grp: "kafka_dlt-original-consumer-group", binary: true},
	{name: "kafka-connect", topic: "__connect.errors.topic", partition: "__connect.errors.partition", offset: "__connect.errors.offset"},
	{name: "kafka-streams", topic: "__streams.errors.topic", partition: "__streams.errors.partition", offset: "__streams.errors.offset"},
	{name: "spring-cloud-stream", topic: "x-original-topic", partition: "x-original-partition",
		offset: "x-original-offset", timestamp: "x-original-timestamp", binary: true},
	{name: "dlq-headers", topic: "original_topic", partition: "original_partition", offset: "original_offset", timestamp: "dlq_timestamp"},
}

// DecodeOrigin reads the origin of a dead-lettered record from its headers
// (the first convention whose topic header is present; the last header of
// a repeated key wins).
func DecodeOrigin(hs []Header) Origin { return decodeOrigin(hs, nil, true) }

// decodeOrigin decodes the origin; without full, its topic and format
// only (partition and offset -1, no time, no group).
func decodeOrigin(hs []Header, in *interner, full bool) Origin {
	o := Origin{Partition: -1, Offset: -1}
	for _, f := range headerFormats {
		t, ok := lastHeader(hs, f.topic)
		if !ok || len(t) == 0 {
			continue
		}
		o.Topic = in.str(t)
		o.Format = f.name
		if !full {
			return o
		}
		// The convention's other headers in one pass from the end: the
		// first seen of each key is its last (a repeated key's last wins).
		var part, off, ts, grp []byte
		var hasPart, hasOff, hasTS, hasGrp bool
		for i := len(hs) - 1; i >= 0; i-- {
			switch k := hs[i].Key; {
			case !hasPart && k == f.partition:
				part, hasPart = hs[i].Value, true
			case !hasOff && k == f.offset:
				off, hasOff = hs[i].Value, true
			case !hasTS && f.timestamp != "" && k == f.timestamp:
				ts, hasTS = hs[i].Value, true
			case !hasGrp && f.grp != "" && k == f.grp:
				grp, hasGrp = hs[i].Value, true
			}
		}
		if hasPart {
			if n, ok := headerNumber(part, f.binary); ok && n >= 0 && n <= 1<<31-1 {
				o.Partition = int32(n)
			}
		}
		if hasOff {
			if n, ok := headerNumber(off, f.binary); ok && n >= 0 {
				o.Offset = n
			}
		}
		if hasTS {
			o.Timestamp = headerTime(ts, f.binary)
		}
		if hasGrp {
			o.ConsumerGroup = in.str(grp)
		}
		return o
	}
	return o
}

// headerNumber reads a number header: 4- or 8-byte big-endian when the
// convention is binary (Spring), decimal text otherwise; each falls back on
// the other shape, as bridges and hand-written producers mix them.
func headerNumber(v []byte, binaryFirst bool) (int64, bool) {
	dec := func() (int64, bool) {
		n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		return n, err == nil
	}
	bin := func() (int64, bool) {
		switch len(v) {
		case 4:
			return int64(int32(binary.BigEndian.Uint32(v))), true
		case 8:
			return int64(binary.BigEndian.Uint64(v)), true
		}
		return 0, false
	}
	if binaryFirst {
		if n, ok := bin(); ok {
			return n, true
		}
		return dec()
	}
	if n, ok := dec(); ok {
		return n, true
	}
	return bin()
}

// headerTime reads epoch milliseconds (binary or decimal) or an RFC 3339 text.
func headerTime(v []byte, binaryFirst bool) time.Time {
	// The shortest RFC 3339 time ("2006-01-02T15:04:05Z") is 20 bytes:
	// Spring's 8-byte binary timestamp never is one, so it skips the
	// failing parse (and its error allocation) on every record.
	if len(v) >= len("2006-01-02T15:04:05Z") {
		if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(v))); err == nil {
			return t.UTC()
		}
	}
	if n, ok := headerNumber(v, binaryFirst); ok && n > 0 {
		return time.UnixMilli(n).UTC()
	}
	return time.Time{}
}

// failureHeaderPrefixes are the headers a recoverer adds about the failure
// and the origin; a replayed copy leaves them behind (its new consumer
// would otherwise read a stale failure, and a second dead-lettering would
// append to them).
var failureHeaderPrefixes = []string{
	"kafka_dlt-", "__connect.errors.", "__streams.errors.", "x-original-", "x-exception-",
	"retry_topic-", "dlq_", "original_",
}

// IsFailureHeader reports whether a header is dead-letter context (dropped
// from a replayed copy).
func IsFailureHeader(key string) bool {
	if key == "" {
		return false
	}
	// Every prefix and the marker start with one of these (any case): most
	// headers (traceparent, content-type, ids) are decided by one byte,
	// the others by the one or two prefixes starting with it.
	c := key[0]
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	switch c {
	case 'k':
		return hasPrefixFold(key, "kafka_dlt-")
	case '_':
		return hasPrefixFold(key, "__connect.errors.") || hasPrefixFold(key, "__streams.errors.")
	case 'x':
		return hasPrefixFold(key, "x-original-") || hasPrefixFold(key, "x-exception-")
	case 'r':
		return hasPrefixFold(key, "retry_topic-")
	case 'o':
		return hasPrefixFold(key, "original_")
	case 'd':
		return hasPrefixFold(key, "dlq_") || len(key) == len(record.MarkerAttribute) && strings.EqualFold(key, record.MarkerAttribute)
	}
	return false
}

// hasPrefixFold reports whether key starts with the lower-case ASCII
// prefix p in any case: what strings.EqualFold(key[:len(p)], p) answers
// (a multi-byte rune that folds to an ASCII letter, like U+212A for k,
// never matches a prefix cut at len(p) bytes), without its Unicode path.
func hasPrefixFold(key, p string) bool {
	if len(key) < len(p) {
		return false
	}
	if key[:len(p)] == p { // as written by most producers
		return true
	}
	for i := 0; i < len(p); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// MarkerHeader is the header dlqctl adds to every replayed copy: the
// redrive marker (run, original record, replay count n, time) as JSON, the
// same marker SQS copies carry as a message attribute.
const MarkerHeader = record.MarkerAttribute

// ReplayMarker returns the marker of a previous replay carried by m, or nil.
func ReplayMarker(hs []Header) *record.Marker {
	v, ok := lastHeader(hs, MarkerHeader)
	if !ok {
		return nil
	}
	var mk record.Marker
	if json.Unmarshal(v, &mk) != nil {
		return nil
	}
	return &mk
}

// ReplayHeaders returns the headers of m's replayed copy: m's own headers in
// order minus the dead-letter context, plus the dlqctl marker counting this
// replay (loop detection reads n).
func ReplayHeaders(m *Message, runID string, now time.Time) []Header {
	return replayHeadersID(m, m.ID(), runID, now)
}

func replayHeadersID(m *Message, origID, runID string, now time.Time) []Header {
	out := make([]Header, 0, len(m.Headers)+1)
	for _, h := range m.Headers {
		if !IsFailureHeader(h.Key) {
			out = append(out, h)
		}
	}
	// Sized once: the marker is the quoted ids plus ~50 bytes of JSON and time.
	buf := make([]byte, 0, len(runID)+len(origID)+64)
	return append(out, Header{Key: MarkerHeader, Value: appendMarker(buf, runID, origID, replayCount(m.Headers), now)})
}

// replayCount is the n of the marker a copy of a record carrying hs gets:
// one more than the record's own marker says, 1 for a first replay.
func replayCount(hs []Header) int {
	if prev := ReplayMarker(hs); prev != nil {
		return prev.Count + 1
	}
	return 1
}

// replayCopies builds the replayed copies of msgs in one go (what
// ToKgo(m, topics[i], ReplayHeaders(m, runID, now)) builds for each, byte
// for byte); see copier.
func replayCopies(msgs []*Message, topics []string, runID string, now time.Time) []*kgo.Record {
	var cp copier
	return cp.build(msgs, topics, runID, now)
}

// copier builds the replayed copies of one batch at a time into memory it
// keeps from batch to batch: the records, their headers and their markers
// cost no allocation once the first batch sized them, and the parts of the
// marker every record shares (run id, time) are encoded once per batch.
// The copies of a batch are valid until the next build: the replay sink
// builds a batch only after the producer is done with the previous one
// (ProduceSync returned, every record's promise called). This runs for
// every replayed record.
type copier struct {
	recs []kgo.Record
	out  []*kgo.Record
	hs   []Header
	buf  []byte
	// run and at are the encoded run id and time of the last build.
	runID string
	now   time.Time
	run   []byte
	at    []byte
}

func (cp *copier) build(msgs []*Message, topics []string, runID string, now time.Time) []*kgo.Record {
	return cp.buildFor(msgs, topics, nil, runID, now)
}

// buildFor is build with the marker's orig of msgs[i] origs[i] when origs
// is given (a record restored from an archive: its DLQ id, not a Kafka
// position).
func (cp *copier) buildFor(msgs []*Message, topics, origs []string, runID string, now time.Time) []*kgo.Record {
	nh, nb := 0, 0
	for i, m := range msgs {
		nh += len(m.Headers) + 1
		nb += len(m.Topic)
		if origs != nil {
			nb += len(origs[i])
		}
	}
	if cp.run == nil || runID != cp.runID {
		cp.run, cp.runID = appendJSONString(cp.run[:0], runID), runID
	}
	if cp.at == nil || !now.Equal(cp.now) {
		cp.at = appendJSONString(cp.at[:0], now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano))
		cp.now = now
	}
	run, at := cp.run, cp.at
	// Per marker: {"run":RUN,"orig":"TOPIC-P@O","n":N,"at":AT} = 32 bytes of
	// JSON, two numbers of up to 20 digits each, the count. Sized before the
	// first append: a marker never moves once its header points at it.
	// (A topic that is not jsonPlain goes through appendJSONString, which
	// may grow buf; the markers already written keep the old array.)
	hs := reuse(cp.hs, nh)
	buf := reuse(cp.buf, nb+len(msgs)*(len(run)+len(at)+80))
	if cap(cp.recs) < len(msgs) {
		cp.recs = make([]kgo.Record, len(msgs))
		cp.out = make([]*kgo.Record, len(msgs))
	}
	recs, out := cp.recs[:len(msgs)], cp.out[:len(msgs)]
	plainTopic, plain := "", false // the last topic checked by jsonPlain (a batch has one or a few)
	for i, m := range msgs {
		h0 := len(hs)
		for _, h := range m.Headers {
			if !IsFailureHeader(h.Key) {
				hs = append(hs, h)
			}
		}
		b0 := len(buf)
		buf = append(buf, `{"run":`...)
		buf = append(buf, run...)
		buf = append(buf, `,"orig":`...)
		if origs != nil {
			buf = appendJSONString(buf, origs[i])
		} else {
			if m.Topic != plainTopic || plainTopic == "" {
				plainTopic, plain = m.Topic, jsonPlain(m.Topic)
			}
			buf = appendJSONID(buf, m.Topic, m.Partition, m.Offset, plain)
		}
		buf = append(buf, `,"n":`...)
		buf = strconv.AppendInt(buf, int64(replayCount(m.Headers)), 10)
		buf = append(buf, `,"at":`...)
		buf = append(buf, at...)
		buf = append(buf, '}')
		// Capped slices: an append by a later reader never writes into the
		// next record's headers or marker.
		hs = append(hs, Header{Key: MarkerHeader, Value: buf[b0:len(buf):len(buf)]})
		// Every field is set anew: franz-go fills in a produced record's
		// partition, offset, timestamp and producer fields.
		recs[i] = kgo.Record{Topic: topics[i], Key: m.Key, Value: m.Value, Headers: hs[h0:len(hs):len(hs)]}
		out[i] = &recs[i]
	}
	// Kept for the next batch, unless one batch needed far more than usual.
	cp.hs, cp.buf = hs[:0], buf[:0]
	return out
}

// reuse returns s emptied with room for n elements: s's own array when it
// is large enough, a new one otherwise.
func reuse[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:0]
	}
	return make([]T, 0, n)
}

// appendJSONID appends the JSON string of the ID TOPIC-PARTITION@OFFSET
// (Message.ID) without building the ID first.
// plain is jsonPlain(topic).
func appendJSONID(b []byte, topic string, partition int32, offset int64, plain bool) []byte {
	if !plain {
		id := (&Message{Topic: topic, Partition: partition, Offset: offset}).ID()
		return appendJSONString(b, id)
	}
	b = append(b, '"')
	b = append(b, topic...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, '@')
	b = strconv.AppendInt(b, offset, 10)
	return append(b, '"')
}

// jsonPlain reports whether encoding/json writes s between quotes as it
// is: printable ASCII without a quote, a backslash or HTML's <, >, &.
func jsonPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendJSONString appends s as encoding/json encodes a string.
func appendJSONString(b []byte, s string) []byte {
	if jsonPlain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// ToKgo builds the franz-go record of a copy of m for topic (partition
// left to the partitioner, so the key keeps its per-key placement).
func ToKgo(m *Message, topic string, headers []Header) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: m.Key, Value: m.Value, Headers: headers}
}

// textHeader reports whether a header value is text a person can read
// (valid UTF-8 without control characters other than tab/newline).
func textHeader(v []byte) bool {
	if !utf8.Valid(v) {
		return false
	}
	for _, c := range v {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// HeaderAttributes maps headers to record attributes (last value of a
// repeated key): text values as String, anything else as Binary (base64).
// Spring's binary partition/offset/timestamp headers stay Binary; their
// decoded values are in the record's origin.
func HeaderAttributes(hs []Header) map[string]record.Attribute {
	out := make(map[string]record.Attribute, len(hs))
	for _, h := range hs {
		if textHeader(h.Value) {
			out[h.Key] = record.Attribute{Type: "String", Value: string(h.Value)}
		} else {
			out[h.Key] = record.Attribute{Type: "Binary", Base64: base64.StdEncoding.EncodeToString(h.Value)}
		}
	}
	return out
}

// stageRE finds a retry-chain stage in a topic name: Spring's -retry-N /
// -retry-<delay> / -retry, the seed pattern's -retry-N, and -dlt/-dlq/.DLT.
var stageRE = regexp.MustCompile(`(?i)^(.+?)[-._](retry(?:[-._]?\d+)?|dlt|dlq|dead[-._]?letter)$`)

// Stage returns the stage of a topic in a retry chain and the chain's base
// topic: ("retry-2", "orders") for orders-retry-2, ("dlt", "orders") for
// orders-dlq or orders.DLT, ("", topic) for a topic outside a chain.
func Stage(topic string) (stage, base string) {
	// Every record of a topic asks for the same answer (ToRecord, group
	// --by stage): the regexp runs once per topic, not once per record.
	if v, ok := stages.Load(topic); ok {
		sb := v.([2]string)
		return sb[0], sb[1]
	}
	stage, base = stageOf(topic)
	if stagesN.Add(1) <= maxStages {
		stages.Store(topic, [2]string{stage, base})
	}
	return stage, base
}

var (
	stages  sync.Map // topic -> [stage, base]
	stagesN atomic.Int64
)

const maxStages = 4096

func stageOf(topic string) (stage, base string) {
	m := stageRE.FindStringSubmatch(topic)
	if m == nil {
		return "", topic
	}
	s := strings.ToLower(m[2])
	switch {
	case strings.HasPrefix(s, "retry"):
		num := strings.TrimLeft(s[len("retry"):], "-._")
		if num == "" {
			return "retry", m[1]
		}
		return "retry-" + num, m[1]
	default:
		return "dlt", m[1]
	}
}

// appendMarker appends the JSON of record.Marker{run, orig, n, at} (the
// same bytes encoding/json writes, without its reflection: this runs once
// per replayed record).
func appendMarker(b []byte, runID, origID string, n int, at time.Time) []byte {
	b = append(b, `{"run":`...)
	b = appendJSONString(b, runID)
	b = append(b, `,"orig":`...)
	b = appendJSONString(b, origID)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"at":"`...)
	b = at.UTC().Truncate(time.Millisecond).AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}
