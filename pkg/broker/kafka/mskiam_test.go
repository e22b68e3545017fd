package kafka_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// TestMSKIAMImpliesTLS: MSK's IAM listener (9098) is TLS only, so
// AWS_MSK_IAM turns TLS on without --kafka-tls. Against a private kfake
// serving TLS, the doctor's bootstrap probe speaks TLS (the listener's
// self-signed certificate is what stops it, not a plaintext mismatch);
// an explicit --kafka-tls=false still wins and is the failed check with
// its fix.
func TestMSKIAMImpliesTLS(t *testing.T) {
	testenv.RequireKafka(t)
	certFile, keyFile := selfSigned(t, t.TempDir())
	brokers := testenv.StartKfake(t, "--tls-cert", certFile, "--tls-key", keyFile)
	ref, err := broker.ParseRef("kafka://" + brokers + "/" + strings.ToLower(testenv.UniqueName(t, "kmsk")))
	if err != nil {
		t.Fatal(err)
	}
	creds := func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test"}, nil
	}

	cs, err := kafka.Doctor(t.Context(), ref, kafka.Config{SASL: "AWS_MSK_IAM", AWS: creds})
	if err != nil {
		t.Fatal(err)
	}
	if c := doctorCheck(t, cs, "kafka tls"); c.Status != broker.DoctorOK || !strings.HasPrefix(c.Detail, "TLS") {
		t.Errorf("AWS_MSK_IAM without --kafka-tls: tls check %+v, want TLS in use", c)
	}
	if c := doctorCheck(t, cs, "kafka bootstrap"); c.Status != broker.DoctorFail || !strings.Contains(c.Detail, "unknown authority") {
		t.Errorf("AWS_MSK_IAM to a TLS listener: bootstrap %+v, want a TLS handshake that stops at the untrusted certificate", c)
	}

	// With the CA, TLS is still what AWS_MSK_IAM chose (no --kafka-tls):
	// the bootstrap passes.
	cs, err = kafka.Doctor(t.Context(), ref, kafka.Config{SASL: "AWS_MSK_IAM", AWS: creds, CAFile: certFile})
	if err != nil {
		t.Fatal(err)
	}
	if c := doctorCheck(t, cs, "kafka bootstrap"); c.Status != broker.DoctorOK {
		t.Errorf("AWS_MSK_IAM with --kafka-ca: bootstrap %+v", c)
	}

	// --kafka-tls=false, given explicitly, wins.
	cs, err = kafka.Doctor(t.Context(), ref, kafka.Config{SASL: "AWS_MSK_IAM", AWS: creds, TLSExplicit: true})
	if err != nil {
		t.Fatal(err)
	}
	c := doctorCheck(t, cs, "kafka tls")
	if c.Status != broker.DoctorFail || !strings.Contains(c.Fix, "drop --kafka-tls=false") {
		t.Errorf("AWS_MSK_IAM with --kafka-tls=false: tls check %+v, want a failure that says to drop it", c)
	}
	if c := doctorCheck(t, cs, "kafka bootstrap"); strings.Contains(c.Detail, "unknown authority") {
		t.Errorf("--kafka-tls=false still spoke TLS: %+v", c)
	}

	// Other mechanisms do not imply TLS.
	cs, err = kafka.Doctor(t.Context(), ref, kafka.Config{SASL: "SCRAM-SHA-512", User: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if c := doctorCheck(t, cs, "kafka tls"); strings.HasPrefix(c.Detail, "TLS") {
		t.Errorf("SCRAM without --kafka-tls turned TLS on: %+v", c)
	}
}
