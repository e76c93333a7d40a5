package cadir

import (
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// crash is the panic value of a simulated crash.
type crash struct{}

// crashAt makes write number k (from 0) of the package crash the process,
// as a kill or a power cut would: it leaves a torn temporary file beside
// its target and panics, so no clean-up runs. The writes before it go
// through. It returns how many writes happen when none crashes.
func crashAt(t *testing.T, k int) *int {
	t.Helper()
	n := new(int)
	t.Cleanup(func() { writeFile = realWrite })
	writeFile = func(path string, data []byte, perm os.FileMode) error {
		i := *n
		*n++
		if i != k {
			return realWrite(path, data, perm)
		}
		torn := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-crash")
		_ = os.WriteFile(torn, data[:len(data)/2], perm)
		panic(crash{})
	}
	return n
}

var realWrite = writeFile

// crashed runs f and reports whether it crashed.
func crashed(f func()) (did bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			did = true
		}
	}()
	f()
	return false
}

// TestCreateCrashSafe: wherever Create crashes, the directory either
// holds a complete CA that loads, or holds no ca.key and Create run
// again makes one.
func TestCreateCrashSafe(t *testing.T) {
	for k := 0; ; k++ {
		dir := filepath.Join(t.TempDir(), "ca")
		writes := crashAt(t, k)
		var c *CA
		if !crashed(func() { c, _ = Create(dir, "crash CA", t0, time.Hour, nil) }) {
			if _, err := Load(dir); err != nil || c == nil {
				t.Fatalf("no crash, yet the CA does not load: %v", err)
			}
			if *writes != 2 {
				t.Fatalf("Create made %d writes, want 2: ca.crt, then ca.key", *writes)
			}
			return
		}
		writeFile = realWrite
		if _, err := Load(dir); err == nil {
			continue // crashed after the CA was complete
		}
		if _, err := os.Stat(filepath.Join(dir, KeyFile)); err == nil {
			t.Fatalf("crash at write %d: ca.key there but the CA does not load", k)
		}
		if _, err := Create(dir, "crash CA", t0, time.Hour, nil); err != nil {
			t.Fatalf("crash at write %d: Create again: %v", k, err)
		}
		if _, err := Load(dir); err != nil {
			t.Fatalf("crash at write %d: Create again made a CA that does not load: %v", k, err)
		}
	}
}

// TestRevokeCrashSafe: wherever Revoke crashes, crl.pem is the old list
// or the new one, whole, and Revoke run again goes on from it.
func TestRevokeCrashSafe(t *testing.T) {
	for k := 0; ; k++ {
		c := newCA(t, filepath.Join(t.TempDir(), "ca"))
		if _, _, err := c.Revoke([]*big.Int{big.NewInt(1)}, t0, time.Hour); err != nil {
			t.Fatal(err)
		}
		crashAt(t, k)
		if !crashed(func() { _, _, _ = c.Revoke([]*big.Int{big.NewInt(2)}, t0, time.Hour) }) {
			if k == 0 {
				t.Fatal("Revoke wrote nothing")
			}
			return
		}
		writeFile = realWrite
		rl, err := c.RevocationList()
		if err != nil {
			t.Fatalf("crash at write %d: crl.pem: %v", k, err)
		}
		if n := rl.Number.Int64(); n != 1 && n != 2 {
			t.Fatalf("crash at write %d: list number %d", k, n)
		}
		again, _, err := c.Revoke([]*big.Int{big.NewInt(2)}, t0, time.Hour)
		if err != nil || again == nil && !rl.IsRevoked(big.NewInt(2)) {
			t.Fatalf("crash at write %d: Revoke again: %v", k, err)
		}
		if final, _ := c.RevocationList(); !final.IsRevoked(big.NewInt(1)) || !final.IsRevoked(big.NewInt(2)) {
			t.Fatalf("crash at write %d: final list revokes %v", k, final.Serials())
		}
	}
}
