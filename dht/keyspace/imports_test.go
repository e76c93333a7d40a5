package keyspace

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports is everything the non-test package may import directly.
var allowedImports = map[string]bool{
	"crypto/sha256":   true,
	"encoding/binary": true,
	"encoding/hex":    true,
	"errors":          true,
	"fmt":             true,
	"math/bits":       true,
	"math/rand/v2":    true,
	"slices":          true,
	"sort":            true,
}

// TestImportsArePure keeps the package pure: its direct imports must be in
// allowedImports, and nothing it depends on, transitively, may be outside
// the standard library.
func TestImportsArePure(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	goList := func(format string) []string {
		out, err := exec.Command("go", "list", "-f", format, ".").Output()
		if err != nil {
			t.Fatalf("go list -f %q: %v", format, err)
		}
		return strings.Fields(string(out))
	}
	imports := goList(`{{join .Imports " "}}`)
	if len(imports) == 0 {
		t.Fatal("go list reported no imports; the check is not working")
	}
	for _, imp := range imports {
		if !allowedImports[imp] {
			t.Errorf("package imports %q, which is not in the allow-list", imp)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{.Standard}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	self := strings.Join(goList(`{{.ImportPath}}`), "")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, std, _ := strings.Cut(line, " ")
		if path == self {
			continue
		}
		first, _, _ := strings.Cut(path, "/")
		if std != "true" || strings.Contains(first, ".") {
			t.Errorf("dependency %q is not in the standard library", path)
		}
		if path == "net" || strings.HasPrefix(path, "net/") {
			t.Errorf("dependency %q pulls in networking", path)
		}
	}
}
