package amqp

// CloseChannelForTest closes the source's channel as a network cut would.
func (s *Source) CloseChannelForTest() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		_ = s.c.ch.Close()
	}
}
