package client_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/client"
)

// TestCheckSpec: a spec as a granting node sends it is taken only when it
// is the claimed job's, signed under the certificate sent of the project
// it names; the undamaged spec is the control.
func TestCheckSpec(t *testing.T) {
	cn := startCaseNet(t, 91)
	key := cn.submit(t, "echo", []string{"a"}, time.Minute)
	other := cn.submit(t, "echo", []string{"b"}, time.Minute)
	a, err := cn.net.NewAgent(context.Background(), certs.RoleClient, "checker")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	signed, _, err := cn.net.Node(cn.net.Holders(key)[0]).Pool().Get(key)
	if err != nil {
		t.Fatal(err)
	}
	cert := cn.proj.Agent().Identity().Cert.Raw
	now := cn.clock.Now()
	if _, _, err := client.CheckSpec(a, now, key, signed, [][]byte{cert}); err != nil {
		t.Fatalf("control: the job's own spec: %v", err)
	}
	tampered := bytes.Clone(signed)
	tampered[len(tampered)-3] ^= 1 // in the signature
	for name, tc := range map[string]struct {
		key, spec []byte
		certs     [][]byte
	}{
		"another job's spec":   {other, signed, [][]byte{cert}},
		"a damaged signature":  {key, tampered, [][]byte{cert}},
		"no certificate":       {key, signed, nil},
		"a client certificate": {key, signed, [][]byte{a.Identity().Cert.Raw}},
		"garbage":              {key, []byte{0x82, 1}, [][]byte{cert}},
	} {
		if _, _, err := client.CheckSpec(a, now, tc.key, tc.spec, tc.certs); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}
