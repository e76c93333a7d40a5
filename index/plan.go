package index

import "github.com/up-pool/up/job"

// Desired is the set of keywords a node should keep a job listed under:
// only the job's closest node lists it; a ready job under every keyword of
// its listing, a finished job under its project's finished keyword, a
// claimed or collected job nowhere. Pure.
func Desired(closest bool, st job.State, listing []string, project string) []string {
	if !closest {
		return nil
	}
	switch st.Phase {
	case job.Ready:
		return listing
	case job.Finished:
		return []string{job.FinishedKeyword(project)}
	}
	return nil
}

// WithTrickles is want (Desired) with the project's trickle keyword
// added when the node lists the job (closest) and holds trickles of it
// the project has not collected, whatever the job's state. Pure.
func WithTrickles(want []string, closest, trickles bool, project string) []string {
	if !closest || !trickles {
		return want
	}
	return append(want[:len(want):len(want)], job.TrickleKeyword(project))
}

// Lists reports whether a node lists a job it holds: it is the job's
// closest live node in its view (closest), a backup lister whose wait has
// passed (backupDue: the i-th next closest after i × BackupDelay), or a
// node nearer the job has not taken the listing over yet (listingHeld:
// the newcomer is not sent the job yet, or was sent it less than
// replica.HandOnGraceMS ago) and this node has the job listed (listed),
// so the job stays findable throughout a hand-on. Pure.
func Lists(closest, backupDue, listingHeld, listed bool) bool {
	return closest || backupDue || listingHeld && listed
}

// RuledOut reports whether the job's state alone rules out listing it
// under keyword, whichever node is its closest: a ready job may be listed
// under its keywords (not the finished one), a finished one under its
// project's finished keyword only, any other nowhere. Pure.
func RuledOut(st job.State, keyword, project string) bool {
	if keyword == job.TrickleKeyword(project) {
		return false // held trickles, not the state, decide (WithTrickles)
	}
	switch st.Phase {
	case job.Ready:
		return keyword == job.FinishedKeyword(project)
	case job.Finished:
		return keyword != job.FinishedKeyword(project)
	}
	return true
}

// Reconciled is what a writer does with one job's entries in a round
// (Reconcile).
type Reconciled struct {
	Withdraw []string // written and no longer wanted
	Place    []string // wanted and not written: to be placed in a region anew
	Rewrite  []string // written and wanted, rewritten in place (due, or reset)
	// Reschedule says the job's next rewrite time is to be drawn again:
	// its rewrite was due, or none of its entries stays written.
	Reschedule bool
	// Forget says the writer may drop what it keeps of the job: nothing
	// is wanted, so nothing stays written.
	Forget bool
}

// Reconcile compares the keywords a job's entries are written under with
// those wanted (Desired) and says what to do: withdraw what is written and
// not wanted, place what is wanted and not written, and rewrite what is
// both when due (the job's rewrite time has come on a full round) or
// reset (the job came back to ready after a claim, and the entries'
// quarantine is to end). Placing a missing entry carries the reset too:
// the withdrawal that removed it may have failed. Keywords come out in
// the order of want, withdrawals in the order of written. Pure.
func Reconcile(written, want []string, due, reset bool) Reconciled {
	var r Reconciled
	kept := 0
	for _, kw := range written {
		if !contains(want, kw) {
			r.Withdraw = append(r.Withdraw, kw)
		} else {
			kept++
		}
	}
	for _, kw := range want {
		switch {
		case !contains(written, kw):
			r.Place = append(r.Place, kw)
		case due || reset:
			r.Rewrite = append(r.Rewrite, kw)
		}
	}
	r.Reschedule = due || kept == 0
	r.Forget = len(want) == 0
	return r
}

func contains(set []string, s string) bool {
	for _, x := range set {
		if x == s {
			return true
		}
	}
	return false
}
