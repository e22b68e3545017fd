package kafka_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

func doctorCheck(t *testing.T, cs []broker.DoctorCheck, name string) broker.DoctorCheck {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check: %+v", name, cs)
	return broker.DoctorCheck{}
}

// TestDoctorTLSListener: a private kfake serving TLS. Spoken to in
// plaintext it took the connection but did not answer as Kafka (fix:
// --kafka-tls); with TLS but an untrusted certificate, the fix is
// --kafka-ca; with the CA every check passes.
func TestDoctorTLSListener(t *testing.T) {
	testenv.RequireKafka(t)
	certFile, keyFile := selfSigned(t, t.TempDir())
	brokers := testenv.StartKfake(t, "--tls-cert", certFile, "--tls-key", keyFile)
	topic := strings.ToLower(testenv.UniqueName(t, "kdoctls"))
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(addr, kafka.Conn{CAFile: certFile, DialTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := kadm.NewClient(cl).CreateTopic(t.Context(), 2, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	cl.Close()
	ref, err := broker.ParseRef("kafka://" + brokers + "/" + topic)
	if err != nil {
		t.Fatal(err)
	}

	cs, err := kafka.Doctor(t.Context(), ref, kafka.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := doctorCheck(t, cs, "kafka bootstrap")
	if c.Status != broker.DoctorFail || !strings.Contains(c.Detail, "did not answer as Kafka") || !strings.Contains(c.Fix, "add --kafka-tls") {
		t.Errorf("plaintext to a TLS listener: %+v", c)
	}
	if c := doctorCheck(t, cs, "kafka topic"); c.Status != broker.DoctorNotChecked {
		t.Errorf("topic after no answer: %+v", c)
	}

	cs, err = kafka.Doctor(t.Context(), ref, kafka.Config{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	c = doctorCheck(t, cs, "kafka bootstrap")
	if c.Status != broker.DoctorFail || !strings.Contains(c.Detail, "unknown authority") || !strings.Contains(c.Fix, "--kafka-ca") {
		t.Errorf("an untrusted certificate: %+v", c)
	}

	cs, err = kafka.Doctor(t.Context(), ref, kafka.Config{CAFile: certFile})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		want := broker.DoctorOK
		if c.Name == "kafka topic config" {
			want = broker.DoctorWarn // kfake keeps one replica
		}
		if c.Status != want || c.Resource != "kafka://"+brokers+"/"+topic {
			t.Errorf("with --kafka-ca: %+v, want %s", c, want)
		}
	}
	if c := doctorCheck(t, cs, "kafka tls"); !strings.Contains(c.Detail, "--kafka-ca "+certFile) {
		t.Errorf("tls: %+v", c)
	}
}

// TestDoctorBadInput: settings that cannot work are an error (exit 2 in
// cmd), not a report.
func TestDoctorBadInput(t *testing.T) {
	ref, err := broker.ParseRef("kafka://127.0.0.1:9092/orders-dlt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kafka.Doctor(t.Context(), ref, kafka.Config{SASL: "SCRAM-SHA-512", User: "alice"}); err == nil {
		t.Error("SCRAM without a password gave a report")
	}
	if _, err := kafka.Doctor(t.Context(), ref, kafka.Config{SASL: "GSSAPI"}); err == nil {
		t.Error("an unknown mechanism gave a report")
	}
}
