package project

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// NoQueryWindow is how recent a client's query for a keyword must be for
// the keyword to count as queried in a verdict: 10 min.
const NoQueryWindow = 10 * time.Minute

// judge is the verdict on a described job of project: why it does not
// run, and what would make it run, from the answers only (each a node's
// word, and the reasons the clients' word). Pure.
func judge(jd *JobDescription, project string) []Reason {
	var out []Reason
	switch jd.LedgerState {
	case StateHarvested, StateCollected:
		return []Reason{{Code: "done", Why: "its result is in the ledger"}}
	case StateLost:
		return []Reason{{Code: "lost", Why: "declared lost: its unit got another copy", Fix: "describe its unit to follow the copy"}}
	case StatePrepared:
		out = append(out, Reason{Code: "not-submitted", Why: "recorded, but too few of its nodes acknowledged it",
			Fix: "submit the job file again: up project submit (it sends what is missing)"})
	}
	if rs, stop := judgeReplicas(jd); stop {
		return append(out, rs...)
	}
	out = append(out, judgeNotes(jd, project)...)
	out = append(out, judgeIndex(jd, project)...)
	if len(out) == 0 {
		served := 0
		for _, a := range jd.Index {
			served += a.Served
		}
		out = append(out, Reason{Code: "waiting", Why: fmt.Sprintf("held, listed and queried: no client has taken it yet (served %d times)", served),
			Fix: "attach more clients to the project, or wait"})
	}
	return out
}

// judgeReplicas judges what the replicas say: stop is set when that
// settles the verdict (none answered, none holds it, or it runs or ran).
func judgeReplicas(jd *JobDescription) (out []Reason, stop bool) {
	answered, held := 0, 0
	for _, a := range jd.Replicas {
		if a.Error == "" {
			answered++
		}
		if a.Held {
			held++
		}
	}
	switch {
	case answered == 0:
		return []Reason{{Code: "unreachable", Why: fmt.Sprintf("none of its %d nodes answered", jd.Replication),
			Fix: "check this workstation's connection and --bootstrap; if the nodes are down, their holders republish the job when they return"}}, true
	case held == 0:
		return []Reason{{Code: "not-held", Why: fmt.Sprintf("none of the %d of its nodes that answered holds it", answered),
			Fix: "submit the job file again: up project submit"}}, true
	}
	for _, a := range jd.Replicas {
		switch a.State {
		case "claimed":
			return []Reason{{Code: "running", Why: fmt.Sprintf("claimed by client %s %.0f s ago (node %s says)", a.Claimant, a.ClaimAgeS, a.Node)}}, true
		case "done", "collected":
			return []Reason{{Code: "finished", Why: fmt.Sprintf("node %s holds it %s", a.Node, a.State), Fix: "harvest it: up project harvest"}}, true
		}
	}
	for _, a := range jd.Replicas {
		if a.State == "granted" {
			return []Reason{{Code: "claiming", Why: fmt.Sprintf("client %s is claiming it (node %s says)", a.Claimant, a.Node)}}, true
		}
	}
	return nil, false
}

// tally counts the releases and declines of a job by reason: the releases
// of the replica that took the most (each replica takes the same
// releases), and every index node's declines (each takes its own).
type tally struct {
	total   int
	by      map[string]int             // notes by reason code
	clients map[string]map[string]bool // distinct clients by reason code
	blocked int                        // notes with a reason that keeps the client from running it
}

func tallyNotes(jd *JobDescription) tally {
	t := tally{by: map[string]int{}, clients: map[string]map[string]bool{}}
	var most *ReplicaAnswer
	for i := range jd.Replicas {
		if most == nil || jd.Replicas[i].Releases > most.Releases {
			most = &jd.Replicas[i]
		}
	}
	var all []Note
	if most != nil {
		t.total += most.Releases
		all = append(all, most.Notes...)
	}
	for _, a := range jd.Index {
		t.total += a.Declines
		all = append(all, a.Notes...)
	}
	for _, n := range all {
		t.by[n.Code]++
		if t.clients[n.Code] == nil {
			t.clients[n.Code] = map[string]bool{}
		}
		t.clients[n.Code][n.Client] = true
		if n.Code != "unknown" && n.Code != "stopping" {
			t.blocked++
		}
	}
	return t
}

// judgeNotes turns the clients' reasons into verdict lines, most frequent
// first.
func judgeNotes(jd *JobDescription, project string) []Reason {
	t := tallyNotes(jd)
	codes := make([]string, 0, len(t.by))
	for c := range t.by {
		codes = append(codes, c)
	}
	slices.SortFunc(codes, func(a, b string) int {
		if t.by[a] != t.by[b] {
			return t.by[b] - t.by[a]
		}
		return strings.Compare(a, b)
	})
	var out []Reason
	for _, c := range codes {
		n, clients, every := t.by[c], len(t.clients[c]), t.by[c] == t.blocked
		if r, ok := noteReason(c, n, clients, every, jd.App, project); ok {
			out = append(out, r)
		}
	}
	return out
}

// noteReason is the verdict line of n notes of reason code by clients
// distinct clients (every: no client gave another blocking reason).
func noteReason(code string, n, clients int, every bool, app, project string) (Reason, bool) {
	by := fmt.Sprintf("released/declined %d times by %d clients", n, clients)
	switch code {
	case "not-allowed":
		why := by + fmt.Sprintf(": application %q not allowed", app)
		if every {
			why = fmt.Sprintf("released/declined %d times: application %q not allowed by any client that found it", n, app)
		}
		return Reason{Code: code, Why: why, Fix: fmt.Sprintf("a client must allow application %s: up client run --project %s --allow %s=%s", app, project, project, app)}, true
	case "same-unit":
		why := by + " that already ran a copy of its unit"
		if every {
			why = fmt.Sprintf("needs another client: every client that found it ran a copy of its unit (%d declines by %d clients)", n, clients)
		}
		return Reason{Code: code, Why: why, Fix: fmt.Sprintf("attach another client to the project: up client run --project %s", project)}, true
	case "no-blobs":
		return Reason{Code: code, Why: by + " that cannot fetch blobs", Fix: "run a client that fetches blobs"}, true
	case "memory":
		return Reason{Code: code, Why: by + " with too little memory", Fix: "run a client with more memory, or lower the job's needs"}, true
	case "deadline":
		return Reason{Code: code, Why: by + " that cannot finish it before its deadline", Fix: "give the job a longer t_finish"}, true
	case "failed":
		return Reason{Code: code, Why: by + ": the application failed", Fix: fmt.Sprintf("check that %s runs with the job's arguments and inputs", app)}, true
	case "fetch":
		return Reason{Code: code, Why: by + ": its spec or inputs could not be fetched", Fix: "check its input URLs or blobs"}, true
	case "stopping":
		return Reason{Code: code, Why: by + " that were stopping, paused or detached"}, true
	case "unknown":
		return Reason{Code: code, Why: by + " that gave no reason (older clients, or a claim attempt that failed)"}, true
	}
	return Reason{}, false
}

// judgeIndex judges the index answers: a job listed nowhere asked, and
// keywords no client queried lately (when none of its keywords was: a
// client finds it through any one).
func judgeIndex(jd *JobDescription, project string) []Reason {
	answered, listed := 0, false
	var quiet []string
	queried := false
	for _, kw := range jd.Keywords {
		kwAnswered, kwQueried := 0, false
		for _, a := range jd.Index {
			if a.Keyword != kw || a.Error != "" {
				continue
			}
			kwAnswered++
			listed = listed || a.Listed
			kwQueried = kwQueried || (a.Queries > 0 && a.LastQueryS >= 0 && a.LastQueryS <= NoQueryWindow.Seconds())
		}
		answered += kwAnswered
		if kwAnswered > 0 && !kwQueried {
			quiet = append(quiet, kw)
		}
		queried = queried || kwQueried
	}
	var out []Reason
	if answered > 0 && !listed {
		out = append(out, Reason{Code: "not-listed", Why: fmt.Sprintf("none of the %d index nodes asked lists it", answered),
			Fix: "its closest node lists it within a rewrite round (10–15 min); if it stays unlisted, that node cannot reach the keyword's index nodes"})
	}
	if !queried {
		for _, kw := range quiet {
			out = append(out, Reason{Code: "no-query", Why: fmt.Sprintf("no client queried keyword %q in the last %s", kw, NoQueryWindow),
				Fix: fmt.Sprintf("attach a client to the project (up client run --project %s) whose query names keyword %q", project, kw)})
		}
	}
	return out
}
