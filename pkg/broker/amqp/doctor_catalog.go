package amqp

import "github.com/dlqctl/dlqctl/pkg/broker"

// DoctorChecks are the checks Doctor makes, as 'dlqctl doctor --help' lists
// them; a test holds them to the code.
var DoctorChecks = []broker.DoctorCheckDoc{
	{Name: checkConnection, What: "the node answers AMQP at HOST:PORT (its version)"},
	{Name: checkAuth, What: "the login is accepted (an auth failure says what to check; a password in the reference is a warning)"},
	{Name: checkVHost, What: "the vhost exists and is open to the user"},
	{Name: checkTLS, What: "amqps://, or what travels in clear: a warning when the password would cross the network unencrypted (AMQP or the management API over plain http)"},
	{Name: checkMgmt, What: "the management API answers (--amqp-management-url, default http://HOST:15672) and its RabbitMQ version"},
	{Name: checkQueue, What: "it exists: type, ready, unacknowledged, consumers"},
	{Name: checkSettings, What: "arguments and policy: dead-letter-exchange, delivery-limit, message-ttl, max-length and overflow (a warning where dead letters can be lost or a peek is unsafe)"},
	{Name: checkSources, What: "the queues that dead-letter into it"},
	{Name: checkPerms, What: "the user's read/write patterns cover the queue (the API shows them to administrators; else not-checked)"},
	{Name: checkExchange, What: "for an exchange reference (a --to destination): it exists in the vhost, in place of the queue checks"},
}
