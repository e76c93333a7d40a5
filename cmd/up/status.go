package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/up-pool/up/client"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/project"
)

// statusURL turns an --http value, host:port or http(s)://host:port with
// an optional trailing / or /status, into the URL of its /status document.
func statusURL(addr string) (string, error) {
	raw := strings.TrimSpace(addr)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	bad := func(why string) error {
		return usageError{fmt.Errorf("--http %q: %s: want host:port or http(s)://host:port", addr, why)}
	}
	switch {
	case err != nil:
		return "", bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("scheme " + u.Scheme)
	case u.Host == "" || u.Port() == "" && !strings.Contains(addr, "://"):
		return "", bad("no host:port")
	case u.Path != "" && u.Path != "/" && u.Path != "/status", u.RawQuery != "", u.Fragment != "", u.User != nil:
		return "", bad("unexpected path, query or user")
	}
	return u.Scheme + "://" + u.Host + "/status", nil
}

// fetchStatus reads the /status document at addr into v, after checking
// that the party that answered has the role want (node or client): a
// node's API and a client's look alike to HTTP.
func fetchStatus(addr, want string, v any) error {
	return fetchStatusToken(addr, want, "", v)
}

// fetchStatusToken is fetchStatus sending the API token ("": none).
func fetchStatusToken(addr, want, token string, v any) error {
	u, err := statusURL(addr)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s status at %s: %w", want, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%s status at %s: HTTP %s: give the API token (--token or $%s)", want, u, resp.Status, tokenEnv)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s status at %s: HTTP %s: not a U.P. %s's HTTP API", want, u, resp.Status, want)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s status at %s: %w", want, u, err)
	}
	var probe struct {
		Role string `json:"role"`
	}
	if err := json.Unmarshal(body, &probe); err != nil || probe.Role == "" {
		return fmt.Errorf("%s status at %s: the answer is not a U.P. status document", want, u)
	}
	if probe.Role != want {
		return &wrongRoleError{fmt.Errorf("%s status at %s: a %s answered, not a %s (try 'up %s status')", want, u, probe.Role, want, probe.Role)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s status at %s: %w", want, u, err)
	}
	return nil
}

// wrongRoleError says that another kind of party answered at a status
// address: waiting will not change that.
type wrongRoleError struct{ error }

func (e *wrongRoleError) Unwrap() error { return e.error }

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// seconds renders a count of seconds as a rounded duration.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// printNodeStatus writes a node's status as text.
func printNodeStatus(w io.Writer, st node.Status) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "node\t%s\n", st.Name)
	fmt.Fprintf(tw, "peer ID\t%s\n", st.PeerID)
	fmt.Fprintf(tw, "position\t%s (record %d)\n", st.Position, st.PositionSeq)
	fmt.Fprintf(tw, "uptime\t%s\n", seconds(st.Uptime))
	for i, a := range st.Addrs {
		label := ""
		if i == 0 {
			label = "addresses"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, a)
	}
	roles := []string{}
	for _, r := range sortedKeys(st.Admitted) {
		roles = append(roles, fmt.Sprintf("%d %s", st.Admitted[r], r))
	}
	if len(roles) == 0 {
		roles = append(roles, "none")
	}
	if r := st.Reachability; r.Reachability != "" {
		fmt.Fprintf(tw, "reachability\t%s: %s\n", r.Summary(), r.Why)
		for i, a := range r.Reachable {
			label := ""
			if i == 0 {
				label = "confirmed"
			}
			fmt.Fprintf(tw, "%s\t%s\n", label, a)
		}
	}
	role := "DHT server: in routing tables, holds jobs and index entries"
	if !st.DHTServer {
		role = "DHT client: in no routing table, holds no job or index entry"
	}
	fmt.Fprintf(tw, "role\t%s (--dht-mode %s)\n", role, st.DHTMode)
	fmt.Fprintf(tw, "routing table\t%d nodes\n", st.RoutingTable)
	fmt.Fprintf(tw, "connections\t%d (admitted: %s)\n", st.Connections, strings.Join(roles, ", "))
	fmt.Fprintf(tw, "lookups\t%d to the network (%d RPCs), %d from the cache\n", st.Lookups.Network, st.Lookups.RPCs, st.Lookups.Cached)
	fmt.Fprintf(tw, "jobs held\t%d\n", st.JobsHeld)
	fmt.Fprintf(tw, "index entries\t%d\n", st.IndexEntries)
	fmt.Fprintf(tw, "CRL number\t%d\n", st.CRLNumber)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Neighbours) == 0 {
		return nil
	}
	fmt.Fprintln(w, "neighbours:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PREFIX BITS\tPOSITION\tPEER ID")
	for _, nb := range st.Neighbours {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", nb.CommonPrefix, nb.Position, nb.PeerID)
	}
	return tw.Flush()
}

// printClientStatus writes a client's status as text.
func printClientStatus(w io.Writer, st client.Status) error {
	if st.Paused {
		fmt.Fprintln(w, "paused: claiming no job ('up client resume')")
	}
	fmt.Fprintf(w, "jobs: %d done, %d failed, %d released, %d running\n", st.Done, st.Failed, st.Released, len(st.Running))
	c := st.Claims
	fmt.Fprintf(w, "claims: %d won, %d lost, %d unknown, %d failed (%d lookups)\n", c.Won, c.Lost, c.Unknown, c.Failed, c.Lookups)
	if st.ClaimsTimed > 0 {
		fmt.Fprintf(w, "claim latency: p50 %.3f s, p99 %.3f s (last %d %s)\n",
			st.ClaimP50, st.ClaimP99, st.ClaimsTimed, plural(st.ClaimsTimed, "claim", "claims"))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(st.Running) > 0 {
		fmt.Fprintln(tw, "  JOB\tPROJECT\tAPP\tSTATE\tELAPSED")
		for _, j := range st.Running {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.1f s\n", j.Job, j.Project, j.App, j.State, j.Elapsed)
		}
	}
	if len(st.Projects) > 0 {
		fmt.Fprintln(tw, "projects:\tSHARE\tDEBT\tBACKOFF")
		for _, p := range st.Projects {
			back := "-"
			switch {
			case !p.Attached:
				back = "detached"
			case p.Backoff > 0:
				back = fmt.Sprintf("%.1f s", p.Backoff)
			}
			fmt.Fprintf(tw, "  %s\t%g\t%+.1f s\t%s\n", p.Name, p.Share, p.Debt, back)
		}
	} else if len(st.Debts) > 0 {
		fmt.Fprintln(tw, "projects:\tDEBT\tBACKOFF")
		names := make([]string, 0, len(st.Debts))
		for p := range st.Debts {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, p := range names {
			back := "-"
			if b, ok := st.Backoff[p]; ok {
				back = fmt.Sprintf("%.1f s", b)
			}
			fmt.Fprintf(tw, "  %s\t%+.1f s\t%s\n", p, st.Debts[p], back)
		}
	}
	return tw.Flush()
}

// printProjectStatus writes a project's ledger statistics as text.
func printProjectStatus(w io.Writer, st project.Stats) error {
	fmt.Fprintln(w, "jobs:")
	for _, k := range sortedKeys(st.Jobs) {
		fmt.Fprintf(w, "  %-10s %d\n", k, st.Jobs[k])
	}
	fmt.Fprintln(w, "units:")
	for _, k := range sortedKeys(st.Units) {
		fmt.Fprintf(w, "  %-13s %d\n", k, st.Units[k])
	}
	if len(st.Adaptive) > 0 {
		fmt.Fprintln(w, "adaptive units (single: accepted alone; spot-check, replicated: given a second copy):")
		for _, k := range sortedKeys(st.Adaptive) {
			fmt.Fprintf(w, "  %-13s %d\n", k, st.Adaptive[k])
		}
	}
	fmt.Fprintf(w, "results: %d (%d in the last hour)\n", st.Results, st.LastHour)
	if n := st.HarvestTimed; n > 0 {
		fmt.Fprintf(w, "submit→harvest: p50 %s s, p99 %s s (%d %s)\n",
			latencySeconds(st.HarvestP50), latencySeconds(st.HarvestP99), n, plural(n, "result", "results"))
	}
	if st.Lost > 0 {
		fmt.Fprintf(w, "lost: %d (no node could serve the result; each unit got another copy)\n", st.Lost)
	}
	if st.OldestAge > 0 {
		fmt.Fprintf(w, "oldest unfinished job: %s\n", st.OldestAge.Round(time.Second))
	}
	if len(st.Stuck) > 0 {
		fmt.Fprintln(w, "stuck (submitted, no result in over twice their T_finish and at least 10m):")
		for _, s := range st.Stuck {
			fmt.Fprintf(w, "  %d of app '%s' [%s], T_finish %s: %s\n",
				s.Jobs, s.App, strings.Join(s.Keywords, " "), s.TFinish, s.Hint())
		}
	}
	fmt.Fprintln(w, "credit (valid results):")
	for _, c := range st.Credit {
		dup := ""
		if c.Duplicate > 0 { // copies of units it returned before: flagged, no credit
			dup = fmt.Sprintf("  %d duplicate", c.Duplicate)
		}
		fmt.Fprintf(w, "  %-24s %6d valid  %4d invalid%s  %s CPU\n", c.Client, c.Valid, c.Invalid, dup, c.CPU.Round(time.Millisecond))
	}
	return nil
}

// plural returns one when n is 1, many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// latencySeconds renders d in seconds, without unit: to the millisecond
// under 1 s, the tenth of a second under 10 s, the second above.
func latencySeconds(d time.Duration) string {
	switch s := d.Seconds(); {
	case s < 1:
		return fmt.Sprintf("%.3f", s)
	case s < 10:
		return fmt.Sprintf("%.1f", s)
	default:
		return fmt.Sprintf("%.0f", s)
	}
}
