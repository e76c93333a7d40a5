package sched

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports is everything the non-test package may import: the
// package is pure, standard library only.
var allowedImports = map[string]bool{
	"errors": true, "fmt": true, "maps": true, "math": true, "math/rand/v2": true,
	"slices": true, "sort": true, "time": true,
}

func TestImportsStandardOnly(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := strings.Fields(string(out))
	if len(imports) == 0 {
		t.Fatal("go list reported no imports; the check is not working")
	}
	for _, imp := range imports {
		if !allowedImports[imp] {
			t.Errorf("sched imports %q, which is not in the allow-list", imp)
		}
	}
}
