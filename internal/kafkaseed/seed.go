// Package kafkaseed builds a realistic Kafka dead-letter incident on a
// cluster (the stack's kfake in tests and demos): source topics, retry
// topics and dead-letter topics written the way Spring Kafka's
// DeadLetterPublishingRecoverer, Kafka Connect's errors.deadletterqueue and
// the hand-rolled retry-topic pattern (PREFIX-orders-retry-1/2/3 with
// growing delays, then PREFIX-orders-dlq, headers dlq_reason, dlq_error,
// dlq_timestamp, original_topic, original_offset) write them: by a
// consumer in a consumer group that reads the source record, fails, and
// publishes the dead letter with headers taken from the record it really
// consumed (topic, partition, offset, timestamp).
package kafkaseed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Options size the incident.
type Options struct {
	Prefix string
	// Orders is how many order events the orders service consumes (0:
	// 60). About a quarter end in PREFIX-orders-dlq.
	Orders int
	// Payments and Inventory size the Spring and Connect parts (0: 20).
	Payments, Inventory int
	// Partitions of the source topics (0: 3). Spring's DLT gets as many
	// (its recoverer keeps the partition number).
	Partitions int32
}

// Result lists the topics and how many records each holds.
type Result struct {
	Topics map[string]int `json:"topics"`
	// DeadLetters counts the records in each dead-letter topic.
	DeadLetters map[string]int `json:"dead_letters"`
}

// Topics of the incident for prefix.
func Topics(prefix string) (orders, retry1, retry2, retry3, ordersDLQ, payments, paymentsDLT, inventory, connectDLQ string) {
	return prefix + "-orders", prefix + "-orders-retry-1", prefix + "-orders-retry-2", prefix + "-orders-retry-3",
		prefix + "-orders-dlq", prefix + "-payments", prefix + "-payments-dlt", prefix + "-inventory", prefix + "-connect-dlq"
}

// Seed creates the topics (failing if one exists: use a fresh prefix) and
// runs the failing consumers until every source record is handled.
func Seed(ctx context.Context, cl *kgo.Client, o Options) (*Result, error) {
	if o.Prefix == "" {
		return nil, errors.New("kafkaseed: empty prefix")
	}
	if o.Orders <= 0 {
		o.Orders = 60
	}
	if o.Payments <= 0 {
		o.Payments = 20
	}
	if o.Inventory <= 0 {
		o.Inventory = 20
	}
	if o.Partitions <= 0 {
		o.Partitions = 3
	}
	adm := kadm.NewClient(cl)
	orders, r1, r2, r3, dlq, pay, payDLT, inv, cdlq := Topics(o.Prefix)
	res := &Result{Topics: map[string]int{}, DeadLetters: map[string]int{}}
	for _, t := range []struct {
		name string
		n    int32
	}{{orders, o.Partitions}, {r1, 1}, {r2, 1}, {r3, 1}, {dlq, 1}, {pay, o.Partitions}, {payDLT, o.Partitions}, {inv, o.Partitions}, {cdlq, 1}} {
		resp, err := adm.CreateTopic(ctx, t.n, 1, nil, t.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			if errors.Is(err, kerr.TopicAlreadyExists) {
				return nil, fmt.Errorf("kafkaseed: topic %s exists: seed with a new prefix", t.name)
			}
			return nil, fmt.Errorf("kafkaseed: create %s: %w", t.name, err)
		}
	}
	addrs := cl.OptValue(kgo.SeedBrokers).([]string)

	// Source records, produced by "upstream" services.
	var src []*kgo.Record
	for i := 0; i < o.Orders; i++ {
		src = append(src, &kgo.Record{Topic: orders, Key: []byte(fmt.Sprintf("order-%d", i%17)), Value: orderBody(i),
			Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte(fmt.Sprintf("00-%032x-%016x-01", i+1, i+1))}, {Key: "eventType", Value: []byte("OrderCreated")}}})
	}
	for i := 0; i < o.Payments; i++ {
		src = append(src, &kgo.Record{Topic: pay, Key: []byte(fmt.Sprintf("customer-%d", i%5)), Value: paymentBody(i)})
	}
	for i := 0; i < o.Inventory; i++ {
		src = append(src, &kgo.Record{Topic: inv, Key: []byte(fmt.Sprintf("sku-%d", i%7)), Value: inventoryBody(i)})
	}
	if err := cl.ProduceSync(ctx, src...).FirstErr(); err != nil {
		return nil, fmt.Errorf("kafkaseed: produce sources: %w", err)
	}
	res.Topics[orders], res.Topics[pay], res.Topics[inv] = o.Orders, o.Payments, o.Inventory

	// The orders service: main topic, then three retry topics, then the DLQ.
	stages := []struct{ in, out string }{{orders, r1}, {r1, r2}, {r2, r3}, {r3, dlq}}
	want := o.Orders
	for attempt, st := range stages {
		n, err := runConsumer(ctx, addrs, o.Prefix+"-orders-service", st.in, want, func(r *kgo.Record) []*kgo.Record {
			return ordersHandler(r, attempt+1, st.out, dlq)
		}, cl)
		if err != nil {
			return nil, err
		}
		res.Topics[st.out] += n[st.out]
		if st.out != dlq {
			res.Topics[dlq] += n[dlq]
		}
		want = n[st.out]
		if want == 0 {
			break
		}
	}
	// Spring Kafka payments listener with a DeadLetterPublishingRecoverer.
	n, err := runConsumer(ctx, addrs, o.Prefix+"-payments-service", pay, o.Payments, func(r *kgo.Record) []*kgo.Record {
		return springHandler(r, payDLT, o.Prefix+"-payments-service")
	}, cl)
	if err != nil {
		return nil, err
	}
	res.Topics[payDLT] = n[payDLT]
	// Kafka Connect sink with errors.tolerance=all and a DLQ.
	n, err = runConsumer(ctx, addrs, "connect-"+o.Prefix+"-inventory-sink", inv, o.Inventory, func(r *kgo.Record) []*kgo.Record {
		return connectHandler(r, cdlq, o.Prefix+"-inventory-sink")
	}, cl)
	if err != nil {
		return nil, err
	}
	res.Topics[cdlq] = n[cdlq]
	res.DeadLetters[dlq], res.DeadLetters[payDLT], res.DeadLetters[cdlq] = res.Topics[dlq], res.Topics[payDLT], res.Topics[cdlq]
	return res, nil
}

// runConsumer consumes want records of topic in group, passes each to
// handle and produces what it returns, committing after each poll's
// output is acknowledged (at-least-once, like the services it stands for).
// It returns how many records went to each output topic.
func runConsumer(ctx context.Context, addrs []string, group, topic string, want int, handle func(*kgo.Record) []*kgo.Record, prod *kgo.Client) (map[string]int, error) {
	out := map[string]int{}
	if want == 0 {
		return out, nil
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
		// As dlqctl's readers (kafka.NoFetchSessions): without fetch
		// sessions franz-go's Close reads no session id a fetch its
		// metadata refresh started may be writing (a data race under
		// -race in a seeding test).
		kgo.DisableFetchSessions())
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	seen := 0
	deadline := time.Now().Add(60 * time.Second)
	for seen < want {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kafkaseed: %s consumed %d of %d records of %s in 60s", group, seen, want, topic)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var outs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			outs = append(outs, handle(r)...)
		})
		if len(outs) > 0 {
			if err := prod.ProduceSync(ctx, outs...).FirstErr(); err != nil {
				return nil, fmt.Errorf("kafkaseed: %s publish: %w", group, err)
			}
			for _, r := range outs {
				out[r.Topic]++
			}
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			return nil, fmt.Errorf("kafkaseed: %s commit: %w", group, err)
		}
	}
	return out, nil
}

func orderBody(i int) []byte {
	switch {
	case i%10 == 3: // malformed: the producer cut the JSON
		return []byte(fmt.Sprintf(`{"eventType":"OrderCreated","eventId":"ord-%04d","orderId":%d,"amount":`, i, i))
	case i%10 == 7: // references a customer the service does not know
		return []byte(fmt.Sprintf(`{"eventType":"OrderCreated","eventId":"ord-%04d","eventVersion":2,"orderId":%d,"customerId":"cust-missing-%d","amount":%d.50}`, i, i, i, 10+i))
	}
	return []byte(fmt.Sprintf(`{"eventType":"OrderCreated","eventId":"ord-%04d","eventVersion":2,"orderId":%d,"customerId":"cust-%d","amount":%d.50,"note":"crème brûlée ✓"}`, i, i, i%9, 10+i))
}

// ordersHandler is the orders service on its attempt-th try. Malformed
// JSON goes straight to the DLQ (retrying cannot fix it); an unknown
// customer fails every attempt; every fourth order hits a payments timeout
// that clears on the second retry.
func ordersHandler(r *kgo.Record, attempt int, next, dlq string) []*kgo.Record {
	var ev struct {
		OrderID    int    `json:"orderId"`
		CustomerID string `json:"customerId"`
	}
	if err := json.Unmarshal(r.Value, &ev); err != nil {
		return []*kgo.Record{deadLetter(r, dlq, "DESERIALIZATION", "json: "+err.Error())}
	}
	switch {
	case strings.HasPrefix(ev.CustomerID, "cust-missing"):
		reason := "VALIDATION"
		msg := fmt.Sprintf("customer %s not found (order %d)", ev.CustomerID, ev.OrderID)
		if next == dlq {
			return []*kgo.Record{deadLetter(r, dlq, reason, msg)}
		}
		return []*kgo.Record{deadLetter(r, next, reason, msg)}
	case ev.OrderID%4 == 1 && attempt < 3:
		msg := "payments: context deadline exceeded (Client.Timeout exceeded while awaiting headers) after 5000ms"
		return []*kgo.Record{deadLetter(r, next, "TIMEOUT", msg)}
	}
	return nil
}

// deadLetter is the hand-rolled pattern's copy: key, value and headers of
// the consumed record, plus dlq_* and original_* headers (decimal text).
// A record read from a retry topic keeps the first origin.
func deadLetter(r *kgo.Record, topic, reason, msg string) *kgo.Record {
	origTopic, origOffset := r.Topic, strconv.FormatInt(r.Offset, 10)
	origPartition := strconv.Itoa(int(r.Partition))
	var hs []kgo.RecordHeader
	for _, h := range r.Headers {
		switch h.Key {
		case "original_topic":
			origTopic = string(h.Value)
		case "original_offset":
			origOffset = string(h.Value)
		case "original_partition":
			origPartition = string(h.Value)
		case "dlq_reason", "dlq_error", "dlq_timestamp", "dlq_attempts":
		default:
			hs = append(hs, h)
		}
	}
	attempts := 1
	for _, h := range r.Headers {
		if h.Key == "dlq_attempts" {
			if n, err := strconv.Atoi(string(h.Value)); err == nil {
				attempts = n + 1
			}
		}
	}
	hs = append(hs,
		kgo.RecordHeader{Key: "original_topic", Value: []byte(origTopic)},
		kgo.RecordHeader{Key: "original_partition", Value: []byte(origPartition)},
		kgo.RecordHeader{Key: "original_offset", Value: []byte(origOffset)},
		kgo.RecordHeader{Key: "dlq_reason", Value: []byte(reason)},
		kgo.RecordHeader{Key: "dlq_error", Value: []byte(msg)},
		kgo.RecordHeader{Key: "dlq_timestamp", Value: []byte(strconv.FormatInt(time.Now().UnixMilli(), 10))},
		kgo.RecordHeader{Key: "dlq_attempts", Value: []byte(strconv.Itoa(attempts))},
	)
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: hs}
}

func paymentBody(i int) []byte {
	if i%5 == 2 {
		return []byte(fmt.Sprintf(`{"paymentId":"pay-%d","amount":-%d,"currency":"EUR"}`, i, i))
	}
	return []byte(fmt.Sprintf(`{"paymentId":"pay-%d","amount":%d,"currency":"XXX"}`, i, i))
}

func be32(n int32) []byte { b := make([]byte, 4); binary.BigEndian.PutUint32(b, uint32(n)); return b }
func be64(n int64) []byte { b := make([]byte, 8); binary.BigEndian.PutUint64(b, uint64(n)); return b }

// springHandler is a @KafkaListener whose failures Spring Kafka's
// DeadLetterPublishingRecoverer publishes to TOPIC-dlt, on the same
// partition, with the listener wrapper as exception-fqcn and the real
// cause as exception-cause-fqcn; partition as a 4-byte and offset and
// timestamp as 8-byte big-endian numbers.
func springHandler(r *kgo.Record, dlt, group string) []*kgo.Record {
	cause, msg := "java.lang.IllegalArgumentException", "Unsupported currency XXX"
	if strings.Contains(string(r.Value), `"amount":-`) {
		cause, msg = "jakarta.validation.ConstraintViolationException", "amount: must be greater than 0"
	}
	full := "Listener method 'public void com.example.payments.PaymentListener.onPayment(com.example.Payment)' threw exception; nested exception is " + cause + ": " + msg
	hs := append([]kgo.RecordHeader(nil), r.Headers...)
	hs = append(hs,
		kgo.RecordHeader{Key: "kafka_dlt-exception-fqcn", Value: []byte("org.springframework.kafka.listener.ListenerExecutionFailedException")},
		kgo.RecordHeader{Key: "kafka_dlt-exception-cause-fqcn", Value: []byte(cause)},
		kgo.RecordHeader{Key: "kafka_dlt-exception-message", Value: []byte(full)},
		kgo.RecordHeader{Key: "kafka_dlt-exception-stacktrace", Value: []byte("org.springframework.kafka.listener.ListenerExecutionFailedException: " + full +
			"\n\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2869)\nCaused by: " + cause + ": " + msg +
			"\n\tat com.example.payments.PaymentListener.onPayment(PaymentListener.java:42)\n")},
		kgo.RecordHeader{Key: "kafka_dlt-original-topic", Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: "kafka_dlt-original-partition", Value: be32(r.Partition)},
		kgo.RecordHeader{Key: "kafka_dlt-original-offset", Value: be64(r.Offset)},
		kgo.RecordHeader{Key: "kafka_dlt-original-timestamp", Value: be64(r.Timestamp.UnixMilli())},
		kgo.RecordHeader{Key: "kafka_dlt-original-timestamp-type", Value: []byte("CreateTime")},
		kgo.RecordHeader{Key: "kafka_dlt-original-consumer-group", Value: []byte(group)},
	)
	return []*kgo.Record{{Topic: dlt, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: hs}}
}

func inventoryBody(i int) []byte {
	if i%4 == 1 {
		return []byte(fmt.Sprintf("sku-%d;qty=%d", i, i)) // CSV-ish text where the converter wants JSON
	}
	return []byte(fmt.Sprintf(`{"sku":"sku-%d","qty":%d}`, i, i))
}

// connectHandler is a sink connector with errors.tolerance=all and
// errors.deadletterqueue.context.headers.enable=true: a value the
// JsonConverter cannot read goes to the DLQ with __connect.errors.*
// headers (decimal strings).
func connectHandler(r *kgo.Record, dlq, connector string) []*kgo.Record {
	if json.Valid(r.Value) {
		return nil
	}
	hs := append([]kgo.RecordHeader(nil), r.Headers...)
	msg := "Converting byte[] to Kafka Connect data failed due to serialization error: "
	hs = append(hs,
		kgo.RecordHeader{Key: "__connect.errors.topic", Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: "__connect.errors.partition", Value: []byte(strconv.Itoa(int(r.Partition)))},
		kgo.RecordHeader{Key: "__connect.errors.offset", Value: []byte(strconv.FormatInt(r.Offset, 10))},
		kgo.RecordHeader{Key: "__connect.errors.connector.name", Value: []byte(connector)},
		kgo.RecordHeader{Key: "__connect.errors.task.id", Value: []byte("0")},
		kgo.RecordHeader{Key: "__connect.errors.stage", Value: []byte("VALUE_CONVERTER")},
		kgo.RecordHeader{Key: "__connect.errors.class.name", Value: []byte("org.apache.kafka.connect.json.JsonConverter")},
		kgo.RecordHeader{Key: "__connect.errors.exception.class.name", Value: []byte("org.apache.kafka.connect.errors.DataException")},
		kgo.RecordHeader{Key: "__connect.errors.exception.message", Value: []byte(msg)},
		kgo.RecordHeader{Key: "__connect.errors.exception.stacktrace", Value: []byte("org.apache.kafka.connect.errors.DataException: " + msg + "\n\tat org.apache.kafka.connect.json.JsonConverter.toConnectData(JsonConverter.java:333)\nCaused by: org.apache.kafka.common.errors.SerializationException: com.fasterxml.jackson.core.JsonParseException: Unrecognized token 'sku'\n")},
	)
	return []*kgo.Record{{Topic: dlq, Key: r.Key, Value: r.Value, Headers: hs}}
}
