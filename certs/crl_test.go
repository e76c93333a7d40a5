package certs

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"slices"
	"testing"
	"time"
)

func bigs(xs ...int64) []*big.Int {
	out := make([]*big.Int, len(xs))
	for i, x := range xs {
		out[i] = big.NewInt(x)
	}
	return out
}

func serialsEqual(a, b []*big.Int) bool {
	return slices.EqualFunc(a, b, func(x, y *big.Int) bool { return x.Cmp(y) == 0 })
}

func TestRevokeAccumulates(t *testing.T) {
	f := newFixture(t)
	rl1, err := f.ca.Revoke(nil, bigs(30, 10, 20, 10), t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rl1.Number.Cmp(big.NewInt(1)) != 0 {
		t.Fatalf("first number %v, want 1", rl1.Number)
	}
	if !rl1.ThisUpdate.Equal(t0) || !rl1.NextUpdate.Equal(t0.Add(time.Hour)) {
		t.Fatalf("window %v..%v", rl1.ThisUpdate, rl1.NextUpdate)
	}
	if got := rl1.Serials(); !serialsEqual(got, bigs(10, 20, 30)) {
		t.Fatalf("serials %v", got)
	}
	t1 := t0.Add(30 * time.Minute)
	rl2, err := f.ca.Revoke(rl1, append(bigs(5, 20), f.node.SerialNumber), t1, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rl2.Number.Cmp(big.NewInt(2)) != 0 {
		t.Fatalf("second number %v, want 2", rl2.Number)
	}
	if !rl2.ThisUpdate.Equal(t1) || !rl2.NextUpdate.Equal(t1.Add(2*time.Hour)) {
		t.Fatalf("window %v..%v", rl2.ThisUpdate, rl2.NextUpdate)
	}
	want := append(bigs(5, 10, 20, 30), f.node.SerialNumber)
	if got := rl2.Serials(); !serialsEqual(got, want) {
		t.Fatalf("serials %v, want %v", got, want)
	}
	for _, s := range want {
		if !rl2.IsRevoked(s) {
			t.Errorf("%v not revoked", s)
		}
	}
	if rl2.IsRevoked(big.NewInt(11)) || rl1.IsRevoked(big.NewInt(5)) || rl1.IsRevoked(f.node.SerialNumber) {
		t.Error("unexpected revocation")
	}
	// Entries keep their original revocation time.
	crl, err := x509.ParseRevocationList(rl2.DER)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range crl.RevokedCertificateEntries {
		wantT := t1
		if e.SerialNumber.Cmp(big.NewInt(10)) == 0 || e.SerialNumber.Cmp(big.NewInt(20)) == 0 || e.SerialNumber.Cmp(big.NewInt(30)) == 0 {
			wantT = t0
		}
		if !e.RevocationTime.Equal(wantT) {
			t.Errorf("serial %v revoked at %v, want %v", e.SerialNumber, e.RevocationTime, wantT)
		}
	}
	// Re-publishing without new serials bumps the number only.
	rl3, err := f.ca.Revoke(rl2, nil, t1.Add(time.Hour), time.Hour)
	if err != nil || rl3.Number.Cmp(big.NewInt(3)) != 0 || !serialsEqual(rl3.Serials(), want) {
		t.Fatalf("republish: %v %v", rl3, err)
	}
	// Serials returns a copy.
	s := rl3.Serials()
	s[0] = big.NewInt(999)
	if rl3.Serials()[0].Cmp(big.NewInt(5)) != 0 {
		t.Error("Serials exposes internal slice")
	}
}

func TestRevokeErrors(t *testing.T) {
	f := newFixture(t)
	for name, serials := range map[string][]*big.Int{"nil": {nil}, "zero": bigs(0), "negative": bigs(-5)} {
		if _, err := f.ca.Revoke(nil, serials, t0, time.Hour); err == nil {
			t.Errorf("%s serial accepted", name)
		}
	}
	if _, err := f.ca.Revoke(nil, bigs(1), t0, 0); err == nil {
		t.Error("zero validity accepted")
	}
	other, err := f.otherCA.Revoke(nil, bigs(1), t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.Revoke(other, bigs(2), t0, time.Hour); !errors.Is(err, ErrUnknownIssuer) {
		t.Errorf("extending another CA's list: got %v, want ErrUnknownIssuer", err)
	}
}

func TestParseRevocationList(t *testing.T) {
	f := newFixture(t)
	rl, err := f.ca.Revoke(nil, bigs(7, 8), t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := rl.PEM()
	if !bytes.HasPrefix(p, []byte("-----BEGIN X509 CRL-----")) {
		t.Fatalf("CRL PEM header %q", p[:25])
	}
	for name, in := range map[string][]byte{"PEM": p, "DER": rl.DER, "PEM with leading newline": append([]byte("\n"), p...)} {
		got, err := ParseRevocationList(in, f.ca.Cert)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Number.Cmp(rl.Number) != 0 || !got.ThisUpdate.Equal(rl.ThisUpdate) || !got.NextUpdate.Equal(rl.NextUpdate) ||
			!bytes.Equal(got.DER, rl.DER) || !serialsEqual(got.Serials(), rl.Serials()) {
			t.Fatalf("%s: round trip differs", name)
		}
	}

	other, err := f.otherCA.Revoke(nil, bigs(7), t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sameName, err := f.sameName.Revoke(nil, bigs(7), t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(rl.DER)
	flipped[len(flipped)-1] ^= 1
	wrongType := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rl.DER})
	cases := []struct {
		name string
		in   []byte
		ca   *x509.Certificate
		want error
	}{
		{"other CA's CRL", other.PEM(), f.ca.Cert, ErrUnknownIssuer},
		{"same-name CA's CRL", sameName.PEM(), f.ca.Cert, ErrUnknownIssuer},
		{"our CRL against other CA", p, f.otherCA.Cert, ErrUnknownIssuer},
		{"flipped signature", flipped, f.ca.Cert, ErrUnknownIssuer},
		{"nil CA", p, nil, ErrUnknownIssuer},
		{"garbage", []byte("garbage"), f.ca.Cert, ErrMalformed},
		{"empty", nil, f.ca.Cert, ErrMalformed},
		{"wrong PEM type", wrongType, f.ca.Cert, ErrMalformed},
		{"broken PEM", []byte("-----BEGIN X509 CRL-----\n!!\n"), f.ca.Cert, ErrMalformed},
		{"too large", append(bytes.Clone(p), make([]byte, MaxCRLSize)...), f.ca.Cert, ErrMalformed},
	}
	for _, tc := range cases {
		if _, err := ParseRevocationList(tc.in, tc.ca); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestRevocationListNil(t *testing.T) {
	var rl *RevocationList
	if rl.IsRevoked(big.NewInt(1)) || rl.Serials() != nil {
		t.Fatal("nil list revokes something")
	}
	rl = &RevocationList{}
	if rl.IsRevoked(nil) {
		t.Fatal("nil serial revoked")
	}
}

func TestSetRevocationList(t *testing.T) {
	f := newFixture(t)
	v := NewVerifier(f.ca.Cert)
	rl1, _ := f.ca.Revoke(nil, bigs(1), t0, time.Hour)
	rl2, _ := f.ca.Revoke(rl1, bigs(2), t0, time.Hour)
	rl2b, _ := f.ca.Revoke(rl1, bigs(3), t0, time.Hour) // same number as rl2
	other, _ := f.otherCA.Revoke(nil, bigs(1, 2, 3), t0, time.Hour)

	if v.SetRevocationList(nil) {
		t.Fatal("nil adopted")
	}
	if v.SetRevocationList(other) {
		t.Fatal("other CA's list adopted")
	}
	if v.SetRevocationList(&RevocationList{Number: big.NewInt(100)}) {
		t.Fatal("hand-built list adopted")
	}
	if v.RevocationList() != nil {
		t.Fatal("list set by refused calls")
	}
	if !v.SetRevocationList(rl2) {
		t.Fatal("rl2 not adopted")
	}
	if v.SetRevocationList(rl1) {
		t.Fatal("older rl1 adopted over rl2")
	}
	if v.SetRevocationList(rl2b) {
		t.Fatal("equal-numbered list adopted")
	}
	if v.SetRevocationList(rl2) {
		t.Fatal("same list adopted twice")
	}
	if v.RevocationList() != rl2 || !v.IsRevoked(big.NewInt(2)) || v.IsRevoked(big.NewInt(3)) {
		t.Fatal("current list is not rl2")
	}
	rl3, _ := f.ca.Revoke(rl2, nil, t0, time.Hour)
	if !v.SetRevocationList(rl3) || v.RevocationList() != rl3 {
		t.Fatal("newer rl3 not adopted")
	}
}

func TestRevokeLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	f := newFixture(t)
	serials := make([]*big.Int, 20_000)
	for i := range serials {
		s, err := randomSerial(nil)
		if err != nil {
			t.Fatal(err)
		}
		serials[i] = s
	}
	rl, err := f.ca.Revoke(nil, serials, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.Serials()) != len(serials) {
		t.Fatalf("%d serials, want %d", len(rl.Serials()), len(serials))
	}
	if _, err := ParseRevocationList(rl.PEM(), f.ca.Cert); err != nil {
		t.Fatal(err)
	}
	// Far more than fit in MaxCRLSize: Revoke refuses rather than producing
	// a list nobody can parse.
	more := slices.Clone(serials)
	for range 20_000 {
		s, _ := randomSerial(nil)
		more = append(more, s)
	}
	if _, err := f.ca.Revoke(nil, more, t0, time.Hour); err == nil {
		t.Fatal("oversized CRL produced")
	}
}
