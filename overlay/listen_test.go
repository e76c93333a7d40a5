package overlay

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/multiformats/go-multiaddr"
)

// TestListenAddressInUse: a second host on the listen address of a
// running one fails with an error saying the address is in use, rather
// than sharing the port with it (SO_REUSEPORT), on TCP and on QUIC's UDP
// port alike.
func TestListenAddressInUse(t *testing.T) {
	newKey := func() crypto.PrivKey {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, listen := range []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"} {
		t.Run(listen, func(t *testing.T) {
			first, err := NewHost(HostConfig{Key: newKey(), Listen: []multiaddr.Multiaddr{multiaddr.StringCast(listen)}})
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			addr := first.Addrs()[0]
			second, err := NewHost(HostConfig{Key: newKey(), Listen: []multiaddr.Multiaddr{addr}})
			if err == nil {
				second.Close()
				t.Fatalf("a second host listens on %s too", addr)
			}
			if want := "listen address " + addr.String() + " is in use"; !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q, want it to say %q", err, want)
			}
		})
	}
}
