package amqp

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		in                      string
		host                    string
		port                    int
		vhost, queue, user, str string
		tls                     bool
	}{
		{"amqp://u:p@rabbit:5673/%2f/orders.dlq", "rabbit", 5673, "/", "orders.dlq", "u", "amqp://rabbit:5673/%2F/orders.dlq", false},
		{"amqp://rabbit/orders.dlq", "rabbit", 5672, "/", "orders.dlq", "guest", "amqp://rabbit:5672/%2F/orders.dlq", false},
		{"amqps://u:p@rabbit/prod/orders.dlq", "rabbit", 5671, "prod", "orders.dlq", "u", "amqps://rabbit:5671/prod/orders.dlq", true},
		{"amqp://u@h/a%2Fb/q%2F1", "h", 5672, "a/b", "q/1", "u", "amqp://h:5672/a%2Fb/q%2F1", false},
		{"amqp://h//q", "h", 5672, "/", "q", "guest", "amqp://h:5672/%2F/q", false},
		{"amqp://[::1]:5/v/q", "::1", 5, "v", "q", "guest", "amqp://[::1]:5/v/q", false},
	}
	for _, c := range cases {
		r, err := ParseRef(c.in, getenv)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if r.Host != c.host || r.Port != c.port || r.VHost != c.vhost || r.Queue != c.queue || r.Username() != c.user || r.TLS != c.tls {
			t.Errorf("%s: got %+v user %q", c.in, r, r.Username())
		}
		if r.String() != c.str {
			t.Errorf("%s: String() = %q, want %q", c.in, r.String(), c.str)
		}
		if strings.Contains(r.String(), "p@") {
			t.Errorf("%s: String() shows credentials", c.in)
		}
	}
	env[EnvUsername], env[EnvPassword] = "ops", "s3cret-pw"
	r, err := ParseRef("amqp://h/q", getenv)
	if err != nil || r.Username() != "ops" || r.pass != "s3cret-pw" || r.credsFrom != "env" {
		t.Fatalf("env credentials: %+v %v", r, err)
	}
	// A user without a password in the URL: the password from the
	// environment (the form the docs show: amqp://ops@HOST/…).
	env[EnvUsername] = ""
	r, err = ParseRef("amqp://ops@h/%2f/q", getenv)
	if err != nil || r.Username() != "ops" || r.pass != "s3cret-pw" || r.credsFrom != "url-user" {
		t.Fatalf("user in the URL, password in %s: %+v %v", EnvPassword, r, err)
	}
	if strings.Contains(r.String(), "s3cret") {
		t.Fatalf("String() shows the password: %s", r)
	}
	env[EnvUsername] = "ops"
	// URL credentials win over the environment.
	r, _ = ParseRef("amqp://a:b@h/q", getenv)
	if r.Username() != "a" || r.pass != "b" {
		t.Fatalf("URL credentials: %+v", r)
	}
}

func TestParseRefErrorsNeverShowThePassword(t *testing.T) {
	for _, in := range []string{
		"amqp://u:hunter2-secret@h/v/q/extra",
		"amqp://u:hunter2-secret@h:99999/q",
		"amqp://u:hunter2-secret@h/q?x=1",
		"http://u:hunter2-secret@h/q",
		"amqp://u:hunter2-secret@/q",
		"amqp://u:hunter2-secret@h/v/%zz",
	} {
		_, err := ParseRef(in, nil)
		if err == nil {
			t.Errorf("%s: no error", in)
			continue
		}
		if !errors.Is(err, ErrBadRef) {
			t.Errorf("%s: %v is not ErrBadRef", in, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error shows the password: %v", in, err)
		}
	}
}
