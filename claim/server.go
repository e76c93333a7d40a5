package claim

import (
	"bytes"
	"cmp"
	"errors"
	"slices"

	"github.com/up-pool/up/job"
)

// Server is the node side of claiming for the jobs one node holds: its
// temporary claims and the log of the permanent claims it made. It is a
// deterministic machine with no clock, lock or I/O: the caller passes each
// job's replicated state (the job pool owns it) and the time in Unix ms,
// and carries out what a step returns — sign the statement, merge the
// state, schedule the lapse check. One owner steps it: claimnet's Service
// under its lock on a node, a simulated node in testnet/sim. K is the
// job's key type (a string of the key's bytes on nodes, an index in the
// simulator).
type Server[K comparable] struct {
	tClaim, tSkew int64
	temps         map[K]*Temp
	// claims holds, per job still held, the permanent claims this node
	// made, in order; a job's records go when it leaves the store
	// (Changed with deleted), so the log is bounded by the jobs held.
	claims map[K]*jobClaims
	seq    uint64 // order of records across jobs, for Log
	// released holds, per job still held, the releases it took
	// (NoteRelease); they go with the job.
	released map[K]*releaseNotes
}

// Record is one permanent claim a node made, for audit. Released is set
// when the client gave it back (its confirm failed elsewhere, or it gave
// up the job), whether its release reached this node or came by
// replication (the job ready again before the deadline).
type Record struct {
	Client   []byte
	Start    int64
	Deadline int64
	Released bool
	At       int64 // ms on this node's clock: when it accepted the confirm
	// Settled is set once the claim needs no certificate watch (Unsettled):
	// its certificate came, or the job's state moved past it.
	Settled bool
}

// Logged is one record of Server.Log with the job it is for.
type Logged[K comparable] struct {
	Job K
	Record
}

// jobClaims are one held job's permanent claims at a node.
type jobClaims struct {
	recs []Record
	seqs []uint64 // order of each record in the whole log
	// closed is set once the job is finished or collected: its claims are
	// past releasing.
	closed bool
}

// maxTemps is how many temporary claims a Server keeps before a grant
// sweeps out the lapsed ones (each lapses after T_claim anyway; the sweep
// bounds a burst of requests whose lapse checks have not run yet).
const maxTemps = 100000

// NewServer returns an empty Server whose temporary claims last tClaim ms
// and whose confirms allow tSkew ms between the client's claim start and
// this node's clock.
func NewServer[K comparable](tClaim, tSkew int64) *Server[K] {
	return &Server[K]{tClaim: tClaim, tSkew: tSkew, temps: map[K]*Temp{}, claims: map[K]*jobClaims{}, released: map[K]*releaseNotes{}}
}

// Grant is the answer to a claim request: the decision, and the start of
// the claim that ended last (Statement.Start) when the node grants a ready
// job, which the new claim must start after.
type Grant struct {
	Decision
	Start int64
}

// Grant answers client's claim request for job key at now: claim.Decide
// on the job's state st (held says whether this node holds the job), its
// live temporary claim, which a grant records, and otherCopy (this node
// holds another copy of the job's unit the client claimed or finished). When d.Temp is set the
// caller calls Lapse(key, d.Temp, t) at some t ≥ d.Temp.Until.
func (s *Server[K]) Grant(key K, held bool, st job.State, client []byte, otherCopy bool, now int64) Grant {
	temp := s.temps[key]
	if temp != nil && now >= temp.Until {
		delete(s.temps, key)
		temp = nil
	}
	g := Grant{Decision: Decide(held, st, temp, client, otherCopy, now, s.tClaim)}
	if g.Temp != nil {
		s.temps[key] = g.Temp
		if len(s.temps) > maxTemps {
			s.sweep(now)
		}
	}
	if g.Kind == Granted && st.Phase == job.Ready {
		g.Start = st.Start // the ended claim's: the new one must start after it
	}
	return g
}

func (s *Server[K]) sweep(now int64) {
	for k, t := range s.temps {
		if now >= t.Until {
			delete(s.temps, k)
		}
	}
}

// Lapse is the check, at now, on the temporary claim t granted on job key:
// if it is still the job's temporary claim and has run out unconfirmed
// (its client gave up without a release: it crashed or lost its
// connection), it is dropped and Lapse reports true: the caller frees the
// job if Frees says so. A claim confirmed, released or replaced meanwhile
// is no longer t.
func (s *Server[K]) Lapse(key K, t *Temp, now int64) bool {
	if s.temps[key] != t || now < t.Until {
		return false
	}
	delete(s.temps, key)
	return true
}

// Confirmable is a confirm that passed the check, waiting for its claimed
// State to be merged into the job's replicated state (Applied).
type Confirmable[K comparable] struct {
	Key    K
	State  job.State // the claim to merge
	client []byte
	temp   *Temp // the temporary claim it confirms (nil for a re-claim)
}

// Confirm checks client's confirm of job key at now with claim.CheckConfirm
// against this node's temporary claim: replies are the confirm's verified
// replies, need and near the quorum and near-set rule, start the client's
// claim start, tFinish the job's. On success the caller merges
// Confirmable.State and calls Applied with the result.
func (s *Server[K]) Confirm(key K, st job.State, client []byte, replies []Reply, need int, near func(string) bool,
	start, tFinish, now int64) (Confirmable[K], error) {
	temp := s.temps[key]
	claimed, err := CheckConfirm(st, temp, client, replies, need, near, start, tFinish, now, s.tSkew)
	if err != nil {
		return Confirmable[K]{}, err
	}
	return Confirmable[K]{Key: key, State: claimed, client: client, temp: temp}, nil
}

// ErrReleased and ErrReleasedMeanwhile are Applied's refusals: a release
// or result merged in before the claim (the job's state is not the claim),
// or the client released the job while the confirm was being merged.
var (
	ErrReleased          = errors.New("the claim was released")
	ErrReleasedMeanwhile = errors.New("the claim was released meanwhile")
)

// Applied finishes the confirm p, whose State the caller merged at now
// into the job's replicated state, merged being the result. The claim
// holds if it is the job's state now and its temporary claim still stands:
// then it is logged and Applied returns nil, and the node signs its
// acceptance. If the client released the job while the confirm was merged
// (the release ended the temporary claim and found no claim to end), the
// claim would outlive the release here, uncertified, denying everyone:
// Applied returns ErrReleasedMeanwhile and the release to merge (rel,
// with ok). Otherwise it returns ErrReleased.
func (s *Server[K]) Applied(p Confirmable[K], merged job.State, now int64) (rel job.State, ok bool, err error) {
	st := p.State
	if merged.Phase != job.Claimed || !bytes.Equal(merged.Client, p.client) || merged.Start != st.Start || merged.Deadline != st.Deadline {
		return job.State{}, false, ErrReleased
	}
	if s.temps[p.Key] != p.temp {
		rel, mine := Release(st, p.client, now)
		return rel, mine, ErrReleasedMeanwhile
	}
	delete(s.temps, p.Key)
	jc := s.claims[p.Key]
	if jc == nil {
		jc = &jobClaims{}
		s.claims[p.Key] = jc
	}
	s.seq++
	jc.recs = append(jc.recs, Record{Client: p.client, Start: st.Start, Deadline: st.Deadline, At: now})
	jc.seqs = append(jc.seqs, s.seq)
	return job.State{}, false, nil
}

// EndTemp ends client's temporary claim on job key (its release came) and
// reports whether there was one: the caller then frees the job if Frees
// says so.
func (s *Server[K]) EndTemp(key K, client []byte) bool {
	t := s.temps[key]
	if t == nil || !bytes.Equal(t.Client, client) {
		return false
	}
	delete(s.temps, key)
	return true
}

// MarkReleased marks the open claims of job key that match as released.
func (s *Server[K]) MarkReleased(key K, match func(Record) bool) {
	jc := s.claims[key]
	if jc == nil || jc.closed {
		return
	}
	for i := range jc.recs {
		if !jc.recs[i].Released && match(jc.recs[i]) {
			jc.recs[i].Released = true
		}
	}
}

// Changed follows job key's replicated state st at now: a deleted job's
// records go; a finished or collected job's claims are past releasing; a
// job ready again before a claim's deadline had that claim released (the
// release came by replication).
func (s *Server[K]) Changed(key K, st job.State, deleted bool, now int64) {
	switch {
	case deleted:
		delete(s.claims, key)
		delete(s.temps, key)
		delete(s.released, key)
	case st.Phase == job.Finished || st.Phase == job.Collected:
		if jc := s.claims[key]; jc != nil {
			jc.closed = true
		}
	case st.Phase == job.Ready:
		s.MarkReleased(key, func(r Record) bool { return now < r.Deadline })
	}
}

// AcceptedAt returns when (ms, this node's clock) this node accepted the
// claim (client, start) of job key, if it did and still remembers.
func (s *Server[K]) AcceptedAt(key K, client []byte, start int64) (int64, bool) {
	jc := s.claims[key]
	if jc == nil {
		return 0, false
	}
	at, ok := int64(0), false
	for _, r := range jc.recs {
		if bytes.Equal(r.Client, client) && r.Start == start && r.At != 0 {
			at, ok = r.At, true // the latest acceptance
		}
	}
	return at, ok
}

// Temps is how many temporary claims the node holds (lapsed ones not yet
// swept included).
func (s *Server[K]) Temps() int { return len(s.temps) }

// Log returns the permanent claims this node made on the jobs it still
// holds, in the order it made them.
func (s *Server[K]) Log() []Logged[K] {
	return s.logWhere(func(*jobClaims, Record) bool { return true })
}

// logWhere returns the records keep accepts, in the order they were made.
func (s *Server[K]) logWhere(keep func(*jobClaims, Record) bool) []Logged[K] {
	type seqRec struct {
		seq uint64
		rec Logged[K]
	}
	var all []seqRec
	for k, jc := range s.claims {
		for i, r := range jc.recs {
			if keep(jc, r) {
				all = append(all, seqRec{jc.seqs[i], Logged[K]{Job: k, Record: r}})
			}
		}
	}
	slices.SortFunc(all, func(a, b seqRec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Logged[K], len(all))
	for i, sr := range all {
		out[i] = sr.rec
	}
	return out
}
