package broker

// CloseEndpoint releases what an endpoint keeps open (a Kafka admin
// client), for endpoints that keep something.
func CloseEndpoint(ep Endpoint) {
	if c, ok := ep.(interface{ Close() }); ok {
		c.Close()
	}
}
