package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/up-pool/up/project"
)

// walkthroughBegin and walkthroughEnd mark the README's walkthrough: every
// ```sh block between them is one script a newcomer pastes in order.
const (
	walkthroughBegin = "<!-- walkthrough:begin -->"
	walkthroughEnd   = "<!-- walkthrough:end -->"
)

// readmeWalkthrough returns the shell blocks between the walkthrough
// markers of the README text, joined in order.
func readmeWalkthrough(readme string) (string, error) {
	start := strings.Index(readme, walkthroughBegin)
	end := strings.Index(readme, walkthroughEnd)
	if start < 0 || end < start {
		return "", fmt.Errorf("README has no %s … %s section", walkthroughBegin, walkthroughEnd)
	}
	var script strings.Builder
	in := false
	sc := bufio.NewScanner(strings.NewReader(readme[start:end]))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in:
			script.WriteString(line)
			script.WriteByte('\n')
		}
	}
	if in {
		return "", fmt.Errorf("README walkthrough: a ```sh block is not closed")
	}
	if script.Len() == 0 {
		return "", fmt.Errorf("README walkthrough has no ```sh block")
	}
	return script.String(), nil
}

func TestReadmeWalkthroughExtract(t *testing.T) {
	got, err := readmeWalkthrough("x\n" + walkthroughBegin + "\n```sh\necho a\n```\ntext\n```go\nnot this\n```\n```sh\necho b\n```\n" + walkthroughEnd)
	if err != nil || got != "echo a\necho b\n" {
		t.Fatalf("extract = %q, %v", got, err)
	}
	if _, err := readmeWalkthrough("no markers"); err == nil {
		t.Fatal("a README without the walkthrough markers must fail")
	}
}

// TestReadmeWalkthrough runs the README's walkthrough exactly as pasted
// (bash, from the repository root: CA, five nodes, two projects, two
// volunteers, the job-file example, harvests) and then checks each
// project's ledger: every submitted unit decided with a canonical result,
// and every job that had a result recorded exactly once.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("the README walkthrough builds the binary and runs a network: not in -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash here")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := readmeWalkthrough(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = root
	// mktemp -d in the walkthrough makes its scratch directory here.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A script that fails (set -e) leaves its background daemons holding
	// the output pipe: Wait would wait for them for ever. WaitDelay ends
	// the wait for the pipe 5 s after bash exits; the daemons are killed
	// below.
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	// Whatever the script left running in the background goes with it.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("README walkthrough failed: %v\n%s", err, tail(out.String(), 60))
	}
	ledgers, _ := filepath.Glob(filepath.Join(tmp, "*", "*", "ledger.db"))
	if len(ledgers) < 2 {
		t.Fatalf("walkthrough left %d project ledgers under %s, want 2 (two projects)\n%s", len(ledgers), tmp, tail(out.String(), 40))
	}
	for _, l := range ledgers {
		checkLedgerComplete(t, l)
	}
	checkCreditShown(t, out.String(), ledgers)
}

// creditLine is the first line of a credit report: the client's key and
// its total.
var creditLine = regexp.MustCompile(`(?m)^client ([0-9a-f]{64}): (\d+) credit from`)

// checkCreditShown fails the test unless the walkthrough printed two
// clients' credit (alice's and bob's) and each total is the client's
// valid results in the projects' ledgers: every receipt published and
// gathered, none counted twice.
func checkCreditShown(t *testing.T, out string, ledgers []string) {
	t.Helper()
	shown := creditLine.FindAllStringSubmatch(out, -1)
	if len(shown) != 2 {
		t.Fatalf("walkthrough printed %d credit reports, want 2 (alice's and bob's)\n%s", len(shown), tail(out, 40))
	}
	for _, m := range shown {
		want := 0
		for _, path := range ledgers {
			want += validResultsOf(t, path, m[1])
		}
		if strconv.Itoa(want) != m[2] || want == 0 {
			t.Errorf("client %s…: credit shown %s, want its %d valid results in the ledgers", m[1][:8], m[2], want)
		}
	}
}

// validResultsOf counts the valid results of the client with the hex key
// in the ledger at path.
func validResultsOf(t *testing.T, path, key string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM results WHERE valid = 1 AND hex(client_key) = upper(?)`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkLedgerComplete fails the test with ledgerProblems' findings.
func checkLedgerComplete(t *testing.T, path string) {
	t.Helper()
	units, problems, err := ledgerProblems(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", path, p)
	}
	t.Logf("%s: %d units, %d problems", path, units, len(problems))
}

// ledgerProblems reads the project ledger at path and says what is not
// complete: a unit not valid with a canonical result, a canonical result
// that is not exactly one results row, a job told collected with no
// result in the ledger.
func ledgerProblems(path string) (units int, problems []string, err error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return 0, nil, err
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT COUNT(*) FROM units`).Scan(&units); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	if units == 0 {
		problems = append(problems, "no units submitted")
	}
	for _, c := range []struct{ what, q string }{
		{"units not valid with a canonical result", `SELECT COUNT(*) FROM units WHERE status != 'valid' OR canonical IS NULL`},
		{"units whose canonical result is not exactly one ledger row", `SELECT COUNT(*) FROM units u WHERE u.canonical IS NOT NULL AND (SELECT COUNT(*) FROM results r WHERE r.cid = u.canonical) != 1`},
		{"jobs collected with no result in the ledger", `SELECT COUNT(*) FROM jobs j WHERE j.state = 'collected' AND NOT EXISTS (SELECT 1 FROM results r WHERE r.job = j.id)`},
	} {
		var n int
		if err := db.QueryRow(c.q).Scan(&n); err != nil {
			return units, problems, fmt.Errorf("%s: %s: %w", path, c.q, err)
		}
		if n != 0 {
			problems = append(problems, fmt.Sprintf("%d %s", n, c.what))
		}
	}
	return units, problems, nil
}

// TestLedgerProblemsFindsLoss is the negative control of the walkthrough's
// ledger check: a job collected with no result row (the loss an INSERT OR
// IGNORE once caused) and a unit left open are both found.
func TestLedgerProblemsFindsLoss(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE units(id INTEGER PRIMARY KEY, status TEXT, canonical TEXT)`,
		`CREATE TABLE jobs(id INTEGER PRIMARY KEY, cid TEXT, unit INTEGER, state TEXT)`,
		`CREATE TABLE results(job INTEGER UNIQUE, cid TEXT)`,
		`INSERT INTO units VALUES(1, 'valid', 'a'), (2, 'open', NULL)`,
		`INSERT INTO jobs VALUES(1, 'a', 1, 'collected'), (2, 'b', 2, 'collected')`,
		`INSERT INTO results VALUES(1, 'a')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	units, problems, err := ledgerProblems(path)
	want := []string{"1 units not valid with a canonical result", "1 jobs collected with no result in the ledger"}
	if err != nil || units != 2 || strings.Join(problems, "; ") != strings.Join(want, "; ") {
		t.Fatalf("ledgerProblems = %d, %q, %v; want 2, %q", units, problems, err, want)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestReadmeJobFileExample: the Project section's job-file example is the
// one the walkthrough submits (so it runs as documented), and it parses.
func TestReadmeJobFileExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	section := s[strings.Index(s, "### Project"):]
	start := strings.Index(section, "```yaml\n")
	if start < 0 {
		t.Fatal("README's Project section has no ```yaml job-file example")
	}
	example := section[start+len("```yaml\n"):]
	example = example[:strings.Index(example, "```")]
	walk, err := readmeWalkthrough(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(walk, example) {
		t.Fatalf("the walkthrough does not submit the Project section's job-file example:\n%s", example)
	}
	units, _, err := project.ParseJobFile([]byte(example), "cms")
	if err != nil || len(units) == 0 {
		t.Fatalf("the README's job-file example: %d units, %v", len(units), err)
	}
}
