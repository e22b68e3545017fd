package cmd

import (
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker/amqp"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

// envAMQPManagementURL is the default of --amqp-management-url.
const envAMQPManagementURL = "DLQCTL_AMQP_MANAGEMENT_URL"

// addAMQPFlags adds the RabbitMQ flag group (persistent: every command
// that takes a queue reference can be given an amqp:// one).
func addAMQPFlags(fs *pflag.FlagSet, c *amqp.Config) {
	fs.StringVar(&c.ManagementURL, "amqp-management-url", "", "RabbitMQ management HTTP API (default $DLQCTL_AMQP_MANAGEMENT_URL, else http://HOST:15672): queue types, arguments, depths, bindings, policies")
	fs.StringVar(&c.CAFile, "amqp-ca", "", "PEM file of CA certificates trusted for amqps:// (besides the system roots)")
	fs.IntVar(&c.Prefetch, "amqp-prefetch", 1000, "RabbitMQ: the most deliveries dlqctl holds unacknowledged at once (an unpaced redrive reads and publishes batches of prefetch / (2 × --concurrency), at most --amqp-confirm-window; a filtered redrive also holds the messages it skips until the end: it stops partial when they fill the prefetch)")
	fs.IntVar(&c.ConfirmWindow, "amqp-confirm-window", 256, "RabbitMQ: the most publishes awaiting a publisher confirm at once")
}

// amqpConfig is the RabbitMQ configuration: the flags, and credentials
// from DLQCTL_AMQP_USERNAME / DLQCTL_AMQP_PASSWORD for references without
// them (read here, in cmd, never below).
func (f *Factory) amqpConfig() amqp.Config {
	c := f.AMQP
	c.Username, c.Password = os.Getenv(amqp.EnvUsername), os.Getenv(amqp.EnvPassword)
	if c.ManagementURL == "" {
		c.ManagementURL = os.Getenv(envAMQPManagementURL)
	}
	if c.Idle <= 0 {
		c.Idle = time.Second
	}
	return c
}

func validateAMQPFlags(c amqp.Config) error {
	if c.Prefetch < 1 || c.Prefetch > 65535 {
		return errs.BadInputf("--amqp-prefetch must be between 1 and 65535 (got %d)", c.Prefetch)
	}
	if c.ConfirmWindow < 1 || c.ConfirmWindow > 100000 {
		return errs.BadInputf("--amqp-confirm-window must be between 1 and 100000 (got %d)", c.ConfirmWindow)
	}
	return nil
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
