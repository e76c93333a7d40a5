package index

import (
	"os/exec"
	"strings"
	"testing"
)

var allowedImports = map[string]bool{
	"bytes":                              true,
	"cmp":                                true,
	"errors":                             true,
	"fmt":                                true,
	"math":                               true,
	"math/rand/v2":                       true,
	"slices":                             true,
	"strings":                            true,
	"github.com/google/btree":            true,
	"github.com/up-pool/up/job":          true,
	"github.com/up-pool/up/dht/keyspace": true,
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, append(args, ".")...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// The index core stays pure: no networking, no libp2p.
func TestImportsArePure(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	imports := goList(t, "-f", `{{join .Imports " "}}`)
	if len(imports) == 0 {
		t.Fatal("go list reported no imports; the check is not working")
	}
	for _, imp := range imports {
		if !allowedImports[imp] {
			t.Errorf("package imports %q, which is not in the allow-list", imp)
		}
	}
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}")
	if len(deps) < len(imports) {
		t.Fatalf("go list -deps reported %d packages; the check is not working", len(deps))
	}
	for _, d := range deps {
		if d == "net" || strings.Contains(d, "libp2p") {
			t.Errorf("dependency %q: the index core must not reach the network", d)
		}
	}
}
