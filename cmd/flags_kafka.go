package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker/kafka"
)

// addKafkaFlags registers the Kafka connection flags (kafka:// references).
// The SASL password is never a flag: DLQCTL_KAFKA_PASSWORD.
func addKafkaFlags(fs *pflag.FlagSet, c *kafka.Config) {
	fs.Var(&explicitBool{v: &c.TLS, set: &c.TLSExplicit}, "kafka-tls", "Kafka: connect with TLS (system roots, plus --kafka-ca); on by itself with --kafka-sasl AWS_MSK_IAM unless --kafka-tls=false")
	fs.Lookup("kafka-tls").NoOptDefVal = "true"
	fs.StringVar(&c.CAFile, "kafka-ca", "", "Kafka: PEM file of extra CA certificates (implies --kafka-tls)")
	fs.StringVar(&c.SASL, "kafka-sasl", "", "Kafka: SASL mechanism PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (password in "+kafka.EnvPassword+") or AWS_MSK_IAM (the AWS credential chain)")
	fs.StringVar(&c.User, "kafka-user", "", "Kafka: SASL user (or kafka://USER@HOST:PORT/TOPIC)")
	fs.StringVar(&c.Group, "kafka-group", "", "Kafka: dlqctl's consumer group on the topic, whose committed offsets are the journal (default dlqctl-TOPIC)")
	// --group was this flag's first name; it reads like the group command.
	// Hidden, and noted as deprecated on stderr (noteDeprecatedFlags):
	// pflag's own MarkDeprecated note goes through cobra's OutOrStderr,
	// which is stdout here (root.SetOut), into -o json.
	fs.StringVar(&c.Group, "group", "", "Kafka: the old name of --kafka-group")
	fs.Lookup("group").Hidden = true
}

// deprecatedFlags are the flags that still work under an old name, with
// what to use instead (cobra's wording).
var deprecatedFlags = map[string]string{
	"group": "use --kafka-group (dlqctl's Kafka consumer group; 'dlqctl group' is an unrelated command)",
}

// noteDeprecatedFlags writes cobra's deprecation note to stderr for each
// deprecated flag given.
func noteDeprecatedFlags(c *cobra.Command, errOut io.Writer) {
	c.Flags().Visit(func(fl *pflag.Flag) {
		if msg, ok := deprecatedFlags[fl.Name]; ok {
			fmt.Fprintf(errOut, "Flag --%s has been deprecated, %s\n", fl.Name, msg)
		}
	})
}

// explicitBool is a boolean flag that also records that it was given, so
// an explicit --kafka-tls=false can win over what AWS_MSK_IAM implies.
type explicitBool struct{ v, set *bool }

func (b *explicitBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.v, *b.set = v, true
	return nil
}
func (b *explicitBool) String() string {
	if b.v == nil {
		return "false"
	}
	return strconv.FormatBool(*b.v)
}
func (b *explicitBool) Type() string     { return "bool" }
func (b *explicitBool) IsBoolFlag() bool { return true }

// kafkaConfig is the Kafka configuration: the flags, the SASL password
// from DLQCTL_KAFKA_PASSWORD and, for AWS_MSK_IAM, the AWS credential
// chain (read here, in cmd, never below).
func (f *Factory) kafkaConfig() kafka.Config {
	cfg := f.Kafka
	cfg.Password = os.Getenv(kafka.EnvPassword)
	if mech, _ := kafka.NormalizeSASL(cfg.SASL); mech == kafka.SASLAWSMSKIAM {
		cfg.AWS = func(ctx context.Context) (aws.Credentials, error) {
			c, err := f.AWSConfig(ctx)
			if err != nil {
				return aws.Credentials{}, err
			}
			return c.Credentials.Retrieve(ctx)
		}
	}
	return cfg
}

// KafkaRedriveFlags are redrive's Kafka-only flags.
type KafkaRedriveFlags struct {
	// MaxDestLag is --max-dest-lag GROUP:N (repeatable): a guard on the
	// lag of the destination's consumer groups.
	MaxDestLag []string `json:"max_dest_lag,omitempty"`
	// ExactlyOnce produces and commits in one transaction per batch.
	ExactlyOnce bool `json:"exactly_once,omitempty"`
}

func (k *KafkaRedriveFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&k.MaxDestLag, "max-dest-lag", nil, "Kafka guard: GROUP:N, stop (or pause, --on-guard) while consumer group GROUP lags more than N records on the destination topic (repeatable)")
	fs.BoolVar(&k.ExactlyOnce, "exactly-once", false, "Kafka: produce each batch and commit its offsets in one transaction (read_committed consumers of the destination see a batch whole or not at all)")
}
