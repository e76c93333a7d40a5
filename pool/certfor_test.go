package pool_test

import (
	"bytes"
	"testing"

	"github.com/up-pool/up/job"
)

// TestCertForHeldAndGone: a node finds a held job's project certificate
// from the CertRef kept at acceptance, and — should the job leave the
// pool after its envelope was read — from the envelope's spec, so the
// envelope never goes out without it. Control: with neither the job held
// nor a readable spec, none is found.
func TestCertForHeldAndGone(t *testing.T) {
	pn := startPoolNet(t, 4, 1, 23)
	key := pn.keys[0]
	for i := range pn.net.Len() {
		p := pn.net.Node(i).Pool()
		h, held := p.Lookup(key)
		if !held {
			continue
		}
		env, err := p.Envelope(key)
		if err != nil {
			t.Fatal(err)
		}
		_, spec, err := job.Decode(env.Signed)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := p.Cert(spec.CertRef)
		if !ok || h.CertRef != string(spec.CertRef) {
			t.Fatalf("node %d: Held.CertRef %x, the spec's %x (certificate held: %v)", i, h.CertRef, spec.CertRef, ok)
		}
		if ref, der, ok := p.CertForTests(key, env.Signed); !ok || ref != h.CertRef || !bytes.Equal(der, want) {
			t.Fatalf("node %d, held: certFor %x %v", i, ref, ok)
		}
		if err := p.Forget(key); err != nil {
			t.Fatal(err)
		}
		if ref, der, ok := p.CertForTests(key, env.Signed); !ok || ref != h.CertRef || !bytes.Equal(der, want) {
			t.Fatalf("node %d, gone: certFor %x %v; want the certificate from the spec", i, ref, ok)
		}
		if _, _, ok := p.CertForTests(key, []byte("not a spec")); ok {
			t.Fatalf("node %d: control: a certificate found for a job neither held nor readable", i)
		}
		return
	}
	t.Fatal("no node holds the job")
}
