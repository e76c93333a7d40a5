package indexnet

// VerifiedLen is the number of listings the server remembers as verified.
func (s *Server) VerifiedLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.verified)
}
