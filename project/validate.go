package project

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
)

// Copy is one returned result of a unit, as validation sees it.
type Copy struct {
	CID       string
	ClientKey []byte
	Output    []byte
	Failed    bool // the job failed, was killed, or exited non-zero
}

// Verdict statuses of a unit.
const (
	UnitOpen         = "open"         // waiting for results
	UnitValid        = "valid"        // a quorum agreed: canonical result chosen
	UnitInconclusive = "inconclusive" // every copy returned, no quorum: issue another copy
)

// Verdict is the outcome of validating a unit's results.
type Verdict struct {
	Status    string
	Canonical string          // CID of the canonical result (UnitValid)
	Valid     map[string]bool // per result CID: whether it earns credit (decided results only)
	// Duplicate flags, per result CID, a later copy of the unit from a
	// client that returned one before: it earns no credit.
	Duplicate map[string]bool
}

// Equal is a validation rule: whether two outputs agree. The default is
// byte equality; a project may supply a fuzzier one (e.g. numeric
// tolerance).
type Equal func(a, b []byte) bool

// Quorum is the number of agreeing results from distinct clients a unit
// of copies needs (BOINC's min_quorum): 1 without redundancy, else 2.
func Quorum(copies int) int { return min(copies, 2) }

// Validate decides a unit from its returned results (BOINC's redundancy,
// seed 000 section 2.1): successful results from distinct clients are
// grouped by the rule; a group of at least quorum makes the canonical
// result, its members valid and every other result invalid — except a
// client's later copies of the unit, flagged as duplicates and given no
// credit (the quorum counts each client once already). With every
// issued copy returned and no quorum the unit is inconclusive; otherwise
// it waits. Pure.
func Validate(results []Copy, issued, quorum int, eq Equal) Verdict {
	if eq == nil {
		eq = bytes.Equal
	}
	var groups [][]Copy
	for _, r := range results {
		if r.Failed {
			continue
		}
		placed := false
		for i, g := range groups {
			if eq(g[0].Output, r.Output) {
				groups[i] = append(g, r)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []Copy{r})
		}
	}
	for _, g := range groups {
		clients := map[string]bool{}
		for _, r := range g {
			clients[string(r.ClientKey)] = true
		}
		if len(clients) < quorum {
			continue
		}
		v := Verdict{Status: UnitValid, Canonical: g[0].CID, Valid: map[string]bool{}, Duplicate: Duplicates(results)}
		for _, r := range results {
			v.Valid[r.CID] = false
		}
		for _, r := range g {
			v.Valid[r.CID] = !v.Duplicate[r.CID]
		}
		return v
	}
	if len(results) >= issued {
		return Verdict{Status: UnitInconclusive}
	}
	return Verdict{Status: UnitOpen}
}

// Grade judges the results of a unit already decided against its canonical
// result: a successful result the rule finds equal to the canonical output
// earns credit, any other none, nor a client's later copy of the unit
// (Duplicates). It grades results that arrive after the
// verdict (a late copy, a liar that returned last) the way Validate graded
// the others. Pure; an unknown canonical CID grades nothing.
func Grade(results []Copy, canonical string, eq Equal) map[string]bool {
	if eq == nil {
		eq = bytes.Equal
	}
	var canon *Copy
	for i := range results {
		if results[i].CID == canonical {
			canon = &results[i]
		}
	}
	if canon == nil {
		return nil
	}
	dup := Duplicates(results)
	out := make(map[string]bool, len(results))
	for _, r := range results {
		out[r.CID] = !r.Failed && !dup[r.CID] && eq(canon.Output, r.Output)
	}
	return out
}

// Regrade is the verdict of a unit already decided, with the results
// graded again (Grade) and duplicates flagged: what a harvest records for
// a decided unit that got late results. Pure.
func Regrade(results []Copy, canonical string, eq Equal) Verdict {
	return Verdict{Status: UnitValid, Canonical: canonical, Valid: Grade(results, canonical, eq), Duplicate: Duplicates(results)}
}

// Duplicates flags, per result CID, every copy of a unit after a client's
// first (in the order given: harvest order): one credit per client per
// unit, however many copies it claimed. A client's first copy is graded
// as any other; the later ones earn nothing. Pure.
func Duplicates(results []Copy) map[string]bool {
	seen := make(map[string]bool, len(results))
	var dup map[string]bool
	for _, r := range results {
		if seen[string(r.ClientKey)] {
			if dup == nil {
				dup = map[string]bool{}
			}
			dup[r.CID] = true
		}
		seen[string(r.ClientKey)] = true
	}
	return dup
}

// ExternalEqual is the validation rule of a program the project supplies:
// it runs program with the paths of two outputs and counts an exit code
// of 0 as agreement, anything else (or failing to run) as disagreement.
// The outputs are written to files in a fresh temporary directory, removed
// afterwards.
func ExternalEqual(program string) Equal {
	return func(a, b []byte) bool {
		dir, err := os.MkdirTemp("", "up-validate-")
		if err != nil {
			return false
		}
		defer os.RemoveAll(dir)
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		if os.WriteFile(pa, a, 0o600) != nil || os.WriteFile(pb, b, 0o600) != nil {
			return false
		}
		return exec.Command(program, pa, pb).Run() == nil
	}
}
