package amqp

// CloseChannelForTest closes the source's channel as a network cut would.
func (s *Source) CloseChannelForTest() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		_ = s.c.ch.Close()
	}
}

// CrashForTest ends the source's TCP connection as a killed process
// would: no acknowledgement, release or close handshake after what was
// already written.
func (s *Source) CrashForTest() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	// A half-close: what was written (acks) reaches the broker, then it
	// sees the connection end, as when the kernel closes a killed
	// process's socket.
	if tc, ok := s.raw.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = s.raw.Close()
}
