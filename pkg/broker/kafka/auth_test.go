package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// brokerAnswers creates a topic through conn and reports the error.
func brokerAnswers(t *testing.T, addr kafka.Address, conn kafka.Conn) error {
	t.Helper()
	cl, err := kafka.NewClient(addr, conn)
	if err != nil {
		return err
	}
	defer cl.Close()
	// kfake drops the connection on a failed SASL exchange instead of
	// answering SASL_AUTHENTICATION_FAILED, so the client retries until
	// its retry timeout (docs/emulators.md): bound the wait here.
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, strings.ToLower(testenv.UniqueName(t, "auth")))
	return err
}

func TestSASLScramAndPlainAgainstAPrivateKfake(t *testing.T) {
	testenv.RequireKafka(t) // the stack (and its Go toolchain) is there
	const pw = "s3cret-Pa55-do-not-print"
	brokers := testenv.StartKfake(t, "--sasl", "SCRAM-SHA-256:alice:"+pw, "--sasl", "PLAIN:bob:"+pw)
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/x")
	if err != nil {
		t.Fatal(err)
	}
	short := func(c kafka.Conn) kafka.Conn { c.DialTimeout = 3 * time.Second; return c }
	if err := brokerAnswers(t, addr, short(kafka.Conn{SASL: "SCRAM-SHA-256", User: "alice", Password: pw})); err != nil {
		t.Fatalf("SCRAM-SHA-256: %v", err)
	}
	if err := brokerAnswers(t, addr, short(kafka.Conn{SASL: "plain", User: "bob", Password: pw})); err != nil {
		t.Fatalf("PLAIN: %v", err)
	}
	start := time.Now()
	err = brokerAnswers(t, addr, short(kafka.Conn{SASL: "SCRAM-SHA-256", User: "alice", Password: pw + "-wrong"}))
	t.Logf("wrong password refused after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("the error names the password: %v", err)
	}
}

func TestTLSWithAnExtraCA(t *testing.T) {
	testenv.RequireKafka(t)
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	brokers := testenv.StartKfake(t, "--tls-cert", certFile, "--tls-key", keyFile)
	addr, err := kafka.ParseAddress("kafka://" + brokers + "/x")
	if err != nil {
		t.Fatal(err)
	}
	if err := brokerAnswers(t, addr, kafka.Conn{CAFile: certFile, DialTimeout: 3 * time.Second}); err != nil {
		t.Fatalf("TLS with --kafka-ca: %v", err)
	}
	// Without the CA the certificate is not trusted.
	if err := brokerAnswers(t, addr, kafka.Conn{TLS: true, DialTimeout: 3 * time.Second}); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	if err := (kafka.Conn{CAFile: filepath.Join(dir, "missing.pem")}).Validate(); err == nil {
		t.Fatal("a missing --kafka-ca file was accepted")
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
