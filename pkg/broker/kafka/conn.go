package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	saslaws "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// EnvPassword holds the SASL password (PLAIN, SCRAM): never a flag, never
// in a reference, never printed.
const EnvPassword = "DLQCTL_KAFKA_PASSWORD"

// SASL mechanisms dlqctl speaks.
const (
	SASLPlain     = "PLAIN"
	SASLScram256  = "SCRAM-SHA-256"
	SASLScram512  = "SCRAM-SHA-512"
	SASLAWSMSKIAM = "AWS_MSK_IAM"
)

// Conn holds how to reach a cluster: TLS and SASL. The zero value is
// plaintext without authentication.
type Conn struct {
	TLS    bool   // --kafka-tls: TLS with the system roots (plus CAFile)
	CAFile string // --kafka-ca: PEM bundle of extra roots (implies TLS)
	// SASL is the mechanism (--kafka-sasl): PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512 or AWS_MSK_IAM; "" for none.
	SASL string
	User string // SASL user (--kafka-user or kafka://USER@…)
	// Password is read from DLQCTL_KAFKA_PASSWORD by the caller (Getenv
	// lives in cmd, not here).
	Password string
	// AWS resolves MSK IAM credentials (the standard chain; only read
	// for AWS_MSK_IAM). Nil means "not configured".
	AWS func(ctx context.Context) (aws.Credentials, error)
	// DialTimeout bounds one TCP (and TLS) dial; 0 means 10 s.
	DialTimeout time.Duration
}

// NormalizeSASL maps the accepted spellings to a mechanism name, or returns
// a usage error.
func NormalizeSASL(s string) (string, error) {
	switch strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "_", "-")) {
	case "":
		return "", nil
	case "PLAIN":
		return SASLPlain, nil
	case "SCRAM-SHA-256", "SCRAM-SHA256":
		return SASLScram256, nil
	case "SCRAM-SHA-512", "SCRAM-SHA512":
		return SASLScram512, nil
	case "AWS-MSK-IAM", "MSK-IAM", "IAM":
		return SASLAWSMSKIAM, nil
	}
	return "", usage("--kafka-sasl %q is not a mechanism dlqctl speaks: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or AWS_MSK_IAM", s)
}

// Validate checks that the settings fit together (usage errors).
func (c Conn) Validate() error {
	mech, err := NormalizeSASL(c.SASL)
	if err != nil {
		return err
	}
	switch mech {
	case SASLPlain, SASLScram256, SASLScram512:
		if c.User == "" {
			return usage("--kafka-sasl %s needs a user: --kafka-user USER (or kafka://USER@HOST:PORT/TOPIC)", mech)
		}
		if c.Password == "" {
			return usage("--kafka-sasl %s needs the password in %s (it is never taken from a flag or a reference)", mech, EnvPassword)
		}
	case SASLAWSMSKIAM:
		if c.AWS == nil {
			return usage("--kafka-sasl AWS_MSK_IAM needs AWS credentials (the standard AWS chain: --profile, environment, instance role)")
		}
	case "":
		if c.User != "" && c.Password != "" {
			return usage("a Kafka user and %s are set but no mechanism: add --kafka-sasl PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", EnvPassword)
		}
	}
	if c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			return usage("--kafka-ca %s cannot be read: %v", c.CAFile, errors.Unwrap(err))
		}
	}
	return nil
}

// wrapConn, when set (benchmarks: a link with a round-trip time), wraps
// every plaintext connection the clients made from then on dial.
var wrapConn func(net.Conn) net.Conn

// Opts returns the franz-go client options for the connection to brokers.
func (c Conn) Opts(brokers []string) ([]kgo.Opt, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	dt := c.DialTimeout
	if dt <= 0 {
		dt = 10 * time.Second
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("dlqctl"),
		kgo.DialTimeout(dt),
		// Fail a request that cannot reach the cluster instead of
		// retrying for the client's default of forever-ish.
		kgo.RetryTimeout(30 * time.Second),
	}
	cfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	if w := wrapConn; w != nil && cfg == nil {
		dialer := &net.Dialer{Timeout: dt}
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, host)
			if err != nil {
				return nil, err
			}
			return w(conn), nil
		}))
	}
	if cfg != nil {
		dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: dt}, Config: cfg}
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			// ServerName per broker: the TLS dialer takes it from host.
			return dialer.DialContext(ctx, network, host)
		}))
	}
	if m := c.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// tlsConfig is the TLS configuration (system roots plus CAFile); nil
// without TLS.
func (c Conn) tlsConfig() (*tls.Config, error) {
	if !c.TLS && c.CAFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, usage("--kafka-ca %s cannot be read: %v", c.CAFile, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usage("--kafka-ca %s holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func (c Conn) mechanism() sasl.Mechanism {
	mech, _ := NormalizeSASL(c.SASL)
	switch mech {
	case SASLPlain:
		return plain.Auth{User: c.User, Pass: c.Password}.AsMechanism()
	case SASLScram256:
		return scram.Auth{User: c.User, Pass: c.Password}.AsSha256Mechanism()
	case SASLScram512:
		return scram.Auth{User: c.User, Pass: c.Password}.AsSha512Mechanism()
	case SASLAWSMSKIAM:
		get := c.AWS
		return saslaws.ManagedStreamingIAM(func(ctx context.Context) (saslaws.Auth, error) {
			cr, err := get(ctx)
			if err != nil {
				return saslaws.Auth{}, fmt.Errorf("AWS credentials for MSK IAM: %w", err)
			}
			return saslaws.Auth{AccessKey: cr.AccessKeyID, SecretKey: cr.SecretAccessKey, SessionToken: cr.SessionToken, UserAgent: "dlqctl"}, nil
		})
	}
	return nil
}

// NewClient opens a franz-go client for addr with extra options (consumer,
// producer or group settings) appended.
func NewClient(addr Address, c Conn, extra ...kgo.Opt) (*kgo.Client, error) {
	if c.User == "" {
		c.User = addr.User
	}
	opts, err := c.Opts(addr.Brokers)
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append(opts, extra...)...)
}
