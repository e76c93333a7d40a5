package credit_test

import (
	"testing"

	"github.com/up-pool/up/credit"
)

// FuzzDecode: any bytes either fail to decode or decode to a receipt that
// validates and re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	fx := newFixture(f)
	f.Add(fx.sign(f, fx.receipt("lhc", 1, 0, 3), "lhc"))
	f.Add([]byte{0x83, 0x40, 0x40, 0x40})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, r, err := credit.Decode(b)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("decoded receipt does not validate: %v", err)
		}
		if string(s.Encode()) != string(b) {
			t.Fatal("decoded receipt re-encodes differently")
		}
		_, _ = credit.Verify(b, fx.v, t0)
	})
}
