package nat_test

import (
	"fmt"
	"slices"
	"strings"
)

// markdown renders the report: hole punching, the role watch, and the
// two lifecycle phases side by side.
func (r natReport) markdown() string {
	var b strings.Builder
	direct := 0
	for _, p := range r.Probes {
		if p.Direct {
			direct++
		}
	}
	fmt.Fprintf(&b, "## Hole punching: %d of %d NAT-ed nodes reached directly\n\n", direct, len(r.Probes))
	b.WriteString("| node | NAT | direct | after | via | hole-punched (node's count) |\n|---|---|---|---|---|---|\n")
	for _, p := range r.Probes {
		kind := "cone"
		if p.Name == "n3h" {
			kind = "symmetric"
		}
		after := "—"
		if p.Direct {
			after = fmt.Sprintf("%.1f s", p.AfterS)
		}
		fmt.Fprintf(&b, "| %s | %s | %v | %s | %s | %d |\n", p.Name, kind, p.Direct, after, p.Via, r.Punched[p.Name])
	}
	if m := r.Mapped; m != nil {
		fmt.Fprintf(&b, "\nPort mapping: %s, behind a cone router running miniupnpd (UPnP IGD, NAT-PMP), is %s, DHT server %v, mapped %s.\n",
			mappedNode, m.Reach.Reachability, m.DHTServer, strings.Join(m.Reach.Mapped, ", "))
	} else {
		b.WriteString("\nPort mapping: not tested here (miniupnpd not installed).\n")
	}
	fmt.Fprintf(&b, "\nRole watch: %d samples of every node's status; %d times an unreachable node was in a routing table, served the DHT or held a job or index entry.\n\n", r.Samples, len(r.Violations))
	b.WriteString("## Lifecycle: project and half the clients behind NAT\n\n| | ")
	for _, p := range r.Phases {
		b.WriteString(phaseTitle(p.Name) + " | ")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(r.Phases)) + "\n")
	row := func(label string, f func(p phaseReport) string) {
		b.WriteString("| " + label + " | ")
		for _, p := range r.Phases {
			b.WriteString(f(p) + " | ")
		}
		b.WriteString("\n")
	}
	row("units valid / jobs", func(p phaseReport) string { return fmt.Sprintf("%d / %d", p.Valid, p.Jobs) })
	row("lost", func(p phaseReport) string { return fmt.Sprint(p.Lost) })
	row("claims won (double)", func(p phaseReport) string { return fmt.Sprintf("%d (%d)", p.Won, p.Won-p.Jobs) })
	row("failed claim attempts", func(p phaseReport) string { return fmt.Sprint(p.Failed) })
	row("claim p50 (median of clients')", func(p phaseReport) string { return ms(medianOf(p.Clients)) })
	row("claim p99 (worst client's)", func(p phaseReport) string { return ms(maxOf(p.Clients)) })
	row("submit → harvest p50", func(p phaseReport) string { return fmt.Sprintf("%.2f s", p.HarvestP50) })
	row("submit → harvest p99", func(p phaseReport) string { return fmt.Sprintf("%.2f s", p.HarvestP99) })
	row("submit (all jobs, r acks)", func(p phaseReport) string { return fmt.Sprintf("%.1f s", p.SubmitS) })
	row("submit to last harvest", func(p phaseReport) string { return fmt.Sprintf("%.1f s", p.WallS) })
	return b.String()
}

func phaseTitle(name string) string {
	switch name {
	case "lan":
		return "no delay (namespaces, ~0.1 ms)"
	case "wan":
		return "80 ± 20 ms RTT, 1 % loss"
	case "far":
		return "300 ± 50 ms RTT, 2 % loss"
	}
	return name
}

func ms(s float64) string { return fmt.Sprintf("%.0f ms", s*1000) }

func medianOf(cs []clientFigures) float64 {
	var xs []float64
	for _, c := range cs {
		if c.Won > 0 {
			xs = append(xs, c.P50)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func maxOf(cs []clientFigures) float64 {
	m := 0.0
	for _, c := range cs {
		m = max(m, c.P99)
	}
	return m
}
