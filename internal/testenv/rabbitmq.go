package testenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"
)

// Variables scripts/stack.sh writes for its private RabbitMQ node.
const (
	// EnvAMQPURL is amqp://USER:PASS@127.0.0.1:PORT/ (default vhost).
	EnvAMQPURL = "DLQCTL_AMQP_URL"
	// EnvAMQPManagementURL is the management HTTP API, http://127.0.0.1:PORT.
	EnvAMQPManagementURL = "DLQCTL_AMQP_MANAGEMENT_URL"
)

// RabbitMQ describes the stack's RabbitMQ node.
type RabbitMQ struct {
	// URL is amqp://USER:PASS@HOST:PORT/ (append a queue name, or
	// VHOST/QUEUE, to make a queue reference).
	URL string
	// ManagementURL is the management API's base URL.
	ManagementURL string
	// Username / Password are the credentials in URL.
	Username, Password string
	// HostPort is the AMQP listener.
	HostPort string
}

// QueueRef returns the reference of queue in the default vhost, with the
// credentials in the URL.
func (r RabbitMQ) QueueRef(queue string) string {
	return r.URL + "%2f/" + url.PathEscape(queue)
}

var (
	rabbitOnce sync.Once
	rabbitEnv  RabbitMQ
	rabbitErr  error
)

// RequireRabbitMQ returns the stack's RabbitMQ node or stops the test as
// Require does: t.Skip normally, t.Fatal when Strict().
func RequireRabbitMQ(t testing.TB) RabbitMQ {
	t.Helper()
	rabbitOnce.Do(func() {
		rabbitEnv, rabbitErr = LookupRabbitMQ()
		if rabbitErr == nil {
			var c net.Conn
			c, rabbitErr = net.DialTimeout("tcp", rabbitEnv.HostPort, 2*time.Second)
			if rabbitErr == nil {
				c.Close()
			}
		}
	})
	if rabbitErr != nil {
		msg := fmt.Sprintf("RabbitMQ not available: %v (scripts/stack.sh start starts a private node; `eval \"$(scripts/stack.sh env)\"` exports %s)", rabbitErr, EnvAMQPURL)
		if Strict() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return rabbitEnv
}

// LookupRabbitMQ reads DLQCTL_AMQP_URL and DLQCTL_AMQP_MANAGEMENT_URL from
// the environment, else from the stack env file.
func LookupRabbitMQ() (RabbitMQ, error) {
	raw, mgmt := os.Getenv(EnvAMQPURL), os.Getenv(EnvAMQPManagementURL)
	if raw == "" || mgmt == "" {
		path, err := EnvFile()
		if err != nil {
			return RabbitMQ{}, err
		}
		vars, err := readEnvFile(path)
		if err != nil {
			return RabbitMQ{}, err
		}
		raw, mgmt = vars[EnvAMQPURL], vars[EnvAMQPManagementURL]
		if raw == "" || mgmt == "" {
			return RabbitMQ{}, fmt.Errorf("%s does not set %s and %s (a stack started by an older scripts/stack.sh: run it again)", path, EnvAMQPURL, EnvAMQPManagementURL)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return RabbitMQ{}, fmt.Errorf("%s is not amqp://USER:PASS@HOST:PORT/", EnvAMQPURL)
	}
	pass, _ := u.User.Password()
	base := u.Scheme + "://" + u.User.String() + "@" + u.Host + "/"
	return RabbitMQ{URL: base, ManagementURL: mgmt, Username: u.User.Username(), Password: pass, HostPort: u.Host}, nil
}
