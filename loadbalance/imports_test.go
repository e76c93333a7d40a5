package loadbalance

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports is everything the non-test package may import directly.
var allowedImports = map[string]bool{
	"fmt":                                true,
	"math":                               true,
	"slices":                             true,
	"sort":                               true,
	"github.com/up-pool/up/dht/keyspace": true,
}

// allowedTestImports is what the tests may import on top.
var allowedTestImports = map[string]bool{
	"math/rand/v2": true,
	"os/exec":      true,
	"strings":      true,
	"testing":      true,
}

// TestImportsArePure keeps the package pure: its direct imports must be in
// allowedImports (math/rand/v2 only in tests), and nothing it depends on,
// transitively, may be outside the standard library and this module's
// keyspace package, or be networking.
func TestImportsArePure(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	goList := func(args ...string) []string {
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	imports := strings.Fields(strings.Join(goList("-f", `{{join .Imports " "}}`, "."), " "))
	if len(imports) == 0 {
		t.Fatal("go list reported no imports; the check is not working")
	}
	for _, imp := range imports {
		if !allowedImports[imp] {
			t.Errorf("package imports %q, which is not in the allow-list", imp)
		}
	}
	tests := strings.Fields(strings.Join(goList("-f", `{{join .TestImports " "}}`, "."), " "))
	for _, imp := range tests {
		if !allowedImports[imp] && !allowedTestImports[imp] {
			t.Errorf("tests import %q, which is not in the allow-list", imp)
		}
	}
	self := strings.Join(goList("-f", `{{.ImportPath}}`, "."), "")
	for _, line := range goList("-deps", "-f", `{{.ImportPath}} {{.Standard}}`, ".") {
		path, std, _ := strings.Cut(line, " ")
		if path == self || path == "github.com/up-pool/up/dht/keyspace" {
			continue
		}
		if std != "true" {
			t.Errorf("dependency %q is not in the standard library", path)
		}
		if path == "net" || strings.HasPrefix(path, "net/") || strings.Contains(path, "libp2p") {
			t.Errorf("dependency %q pulls in networking", path)
		}
	}
}
