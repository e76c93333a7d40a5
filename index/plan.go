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

// RuledOut reports whether the job's state alone rules out listing it
// under keyword, whichever node is its closest: a ready job may be listed
// under its keywords (not the finished one), a finished one under its
// project's finished keyword only, any other nowhere. Pure.
func RuledOut(st job.State, keyword, project string) bool {
	switch st.Phase {
	case job.Ready:
		return keyword == job.FinishedKeyword(project)
	case job.Finished:
		return keyword != job.FinishedKeyword(project)
	}
	return true
}
