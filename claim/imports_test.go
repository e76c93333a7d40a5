package claim

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports is everything the non-test package may import directly.
// The package is pure: no network, no files, no clock, no randomness.
var allowedImports = map[string]bool{
	"bytes":                       true,
	"crypto/ed25519":              true,
	"errors":                      true,
	"fmt":                         true,
	"github.com/up-pool/up/codec": true,
	"github.com/up-pool/up/job":   true,
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func TestImportsAllowed(t *testing.T) {
	imports := goList(t, "-f", `{{join .Imports " "}}`, ".")
	if len(imports) == 0 {
		t.Fatal("go list reported no imports; the check is not working")
	}
	for _, imp := range imports {
		if !allowedImports[imp] {
			t.Errorf("package imports %q, which is not in the allow-list", imp)
		}
	}
}

func TestNoNetworkDeps(t *testing.T) {
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}", ".")
	if len(deps) < len(allowedImports) {
		t.Fatalf("go list reported %d dependencies; the check is not working", len(deps))
	}
	for _, d := range deps {
		if strings.Contains(d, "libp2p") || d == "net" {
			t.Errorf("package depends on %q", d)
		}
	}
}
