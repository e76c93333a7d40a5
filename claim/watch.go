package claim

import (
	"bytes"
	"slices"
)

// Unsettled returns the claims this node accepted at or before the time
// before (ms, this node's clock) that are neither released nor settled
// (Settle), on jobs not yet finished, oldest acceptance first: the claims
// whose certificate the caller checks for (the certificate watch). A
// claim accepted but never certified — its client gathered fewer than q
// acceptances and its release to this node was lost, or its certify
// reached no one — denies every other client, and a job's closest node
// holding one does not list the job at all, so no client comes to ask:
// the watch is what ends it (claimnet voids it after T_cert and a Resync
// that found no certificate).
func (s *Server[K]) Unsettled(before int64) []Logged[K] {
	return s.logWhere(func(jc *jobClaims, r Record) bool {
		return !jc.closed && !r.Released && !r.Settled && r.At != 0 && r.At <= before
	})
}

// Settle ends the certificate watch on the claim (client, start) of job
// key: its certificate arrived, or the job's state is no longer that claim.
func (s *Server[K]) Settle(key K, client []byte, start int64) {
	jc := s.claims[key]
	if jc == nil {
		return
	}
	for i := range jc.recs {
		if bytes.Equal(jc.recs[i].Client, client) && jc.recs[i].Start == start {
			jc.recs[i].Settled = true
		}
	}
}

// Adopt records the claim (client, start, deadline) of job key, which this
// node holds without a record of accepting it (it accepted it before a
// restart: the log is kept in memory only), as accepted at at, so that
// the certificate watch covers it. A claim already recorded is left as it
// is.
func (s *Server[K]) Adopt(key K, client []byte, start, deadline, at int64) {
	jc := s.claims[key]
	if jc == nil {
		jc = &jobClaims{}
		s.claims[key] = jc
	}
	for _, r := range jc.recs {
		if bytes.Equal(r.Client, client) && r.Start == start {
			return
		}
	}
	s.seq++
	jc.recs = append(jc.recs, Record{Client: slices.Clone(client), Start: start, Deadline: deadline, At: at})
	jc.seqs = append(jc.seqs, s.seq)
}
