package job

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports is everything the non-test package may import directly.
// The package is pure: no network, no files, no clock, no randomness.
var allowedImports = map[string]bool{
	"bytes":                                true,
	"cmp":                                  true,
	"crypto/ed25519":                       true,
	"crypto/sha256":                        true,
	"encoding/binary":                      true,
	"errors":                               true,
	"fmt":                                  true,
	"slices":                               true,
	"unicode":                              true,
	"unicode/utf8":                         true,
	"github.com/ipfs/go-cid":               true,
	"github.com/multiformats/go-multihash": true,
	"github.com/up-pool/up/codec":          true,
}

// forbiddenImports must never be imported directly, whatever the allow-list
// says.
var forbiddenImports = []string{"net", "os", "time", "math/rand", "math/rand/v2", "crypto/rand"}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

func TestImportsArePure(t *testing.T) {
	const self = "github.com/up-pool/up/job"
	imports := goList(t, "-f", `{{join .Imports " "}}`, self)
	if len(imports) == 0 {
		t.Fatal("go list reported no imports; the check is not working")
	}
	for _, imp := range imports {
		if !allowedImports[imp] {
			t.Errorf("job imports %q, which is not in the allow-list", imp)
		}
		if strings.Contains(imp, "libp2p") {
			t.Errorf("job imports libp2p package %q", imp)
		}
		for _, f := range forbiddenImports {
			if imp == f || strings.HasPrefix(imp, f+"/") {
				t.Errorf("job imports %q", imp)
			}
		}
	}
}

// TestNoLibp2pDeps: nothing job depends on, transitively (its codec
// included), pulls in libp2p.
func TestNoLibp2pDeps(t *testing.T) {
	for _, pkg := range []string{"github.com/up-pool/up/job", "github.com/up-pool/up/codec"} {
		deps := goList(t, "-deps", pkg)
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s reported %d packages; the check is not working", pkg, len(deps))
		}
		for _, d := range deps {
			if strings.Contains(d, "libp2p") {
				t.Errorf("%s depends on %q", pkg, d)
			}
		}
	}
}
