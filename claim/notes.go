package claim

import "slices"

// Note is one release a node took for a job it holds: the client that
// gave the job back, why (the client's word: a wire.SkipReason's value,
// never acted on) and when (ms on the node's clock).
type Note struct {
	Client []byte
	Reason uint8
	At     int64
}

// MaxNotes bounds the notes a Server keeps per job (wire.MaxExplainNotes).
const MaxNotes = 16

// releaseNotes are one held job's releases at a node: how many, and the
// latest MaxNotes.
type releaseNotes struct {
	n     int
	notes []Note
}

// NoteRelease records that client gave job key back at now for reason.
// The caller records only the releases of a job it holds (Changed with
// deleted drops them with the job), so the notes are bounded by the jobs
// held times MaxNotes.
func (s *Server[K]) NoteRelease(key K, client []byte, reason uint8, now int64) {
	rn := s.released[key]
	if rn == nil {
		rn = &releaseNotes{}
		s.released[key] = rn
	}
	rn.n++
	if len(rn.notes) == MaxNotes {
		rn.notes = slices.Delete(rn.notes, 0, 1)
	}
	rn.notes = append(rn.notes, Note{Client: slices.Clone(client), Reason: reason, At: now})
}

// Releases returns how many releases of job key the node took since it
// has held it, and the latest (at most MaxNotes, oldest first; a copy).
func (s *Server[K]) Releases(key K) (n int, notes []Note) {
	rn := s.released[key]
	if rn == nil {
		return 0, nil
	}
	return rn.n, slices.Clone(rn.notes)
}

// TempOf returns job key's temporary claim live at now (nil: none).
func (s *Server[K]) TempOf(key K, now int64) *Temp {
	t := s.temps[key]
	if t == nil || now >= t.Until {
		return nil
	}
	c := *t
	return &c
}
