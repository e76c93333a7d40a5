package overlay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/multiformats/go-multiaddr"
)

func mas(ss ...string) []multiaddr.Multiaddr {
	out := make([]multiaddr.Multiaddr, len(ss))
	for i, s := range ss {
		out[i] = multiaddr.StringCast(s)
	}
	return out
}

// TestAnnounceFilter: --announce replaces the direct addresses and keeps
// the relayed ones; --no-announce drops an address or a network.
func TestAnnounceFilter(t *testing.T) {
	relayed := "/ip4/203.0.113.9/tcp/4001/p2p/12D3KooWGGbiuEpRQ9Qe2Drsouy5vSbmokPneYDut8zRXSVvqVmp/p2p-circuit"
	host := mas("/ip4/192.168.1.7/tcp/4001", "/ip4/127.0.0.1/tcp/4001", "/ip4/198.51.100.4/udp/4001/quic-v1", relayed)
	for _, tc := range []struct {
		name     string
		announce []multiaddr.Multiaddr
		no       []string
		want     []string
	}{
		{"none", nil, nil, []string{"/ip4/192.168.1.7/tcp/4001", "/ip4/127.0.0.1/tcp/4001", "/ip4/198.51.100.4/udp/4001/quic-v1", relayed}},
		{"announce", mas("/dns4/up.example.org/tcp/4001"), nil, []string{"/dns4/up.example.org/tcp/4001", relayed}},
		{"no-announce cidr", nil, []string{"192.168.0.0/16", "127.0.0.0/8"}, []string{"/ip4/198.51.100.4/udp/4001/quic-v1", relayed}},
		{"no-announce addr", nil, []string{"/ip4/198.51.100.4/udp/4001/quic-v1"}, []string{"/ip4/192.168.1.7/tcp/4001", "/ip4/127.0.0.1/tcp/4001", relayed}},
		{"both", mas("/ip4/198.51.100.4/tcp/4001", "/ip4/10.1.2.3/tcp/4001"), []string{"10.0.0.0/8"}, []string{"/ip4/198.51.100.4/tcp/4001", relayed}},
	} {
		f, err := announceFilter(tc.announce, tc.no)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := f(slices.Clone(host))
		var gs []string
		for _, a := range got {
			gs = append(gs, a.String())
		}
		if !slices.Equal(gs, tc.want) {
			t.Errorf("%s: announced %v, want %v", tc.name, gs, tc.want)
		}
	}
	for _, bad := range []string{"10.0.0.0", "/ip4/nope", "example.org"} {
		if ParseNoAnnounce(bad) == nil {
			t.Errorf("--no-announce %q accepted", bad)
		}
	}
	for _, good := range []string{"10.0.0.0/8", "fd00::/8", "/ip4/10.0.0.1/tcp/4001"} {
		if err := ParseNoAnnounce(good); err != nil {
			t.Errorf("--no-announce %q: %v", good, err)
		}
	}
}

func reachHost(t *testing.T, r *Reachability, listen ...string) host.Host {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(HostConfig{Key: k, Listen: mas(listen...), Reachability: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.Status != nil {
			r.Status.Close()
		}
		_ = h.Close()
	})
	return h
}

// TestReachabilityRelayed: a host forced private reserves a slot on a
// public peer's relay service (offered by its peer source), announces the
// relayed address and says so in its status; a third host reaches it
// through the relay, on a limited connection.
func TestReachabilityRelayed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	relayStatus := NewReachStatus(quiet, nil, true, network.ReachabilityPublic)
	relay := reachHost(t, &Reachability{AutoNAT: true, RelayService: true, HolePunch: true,
		Force: network.ReachabilityPublic, Status: relayStatus,
		// Relays announce public addresses only (libp2p drops others from
		// reservations): the relay's loopback port passes for a public one
		// (as in go-libp2p's own autorelay tests); nobody dials it.
		Announce: mas(fmt.Sprintf("/ip4/1.2.3.4/tcp/%d", port))}, fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port))
	relayInfo := peer.AddrInfo{ID: relay.ID(), Addrs: relay.Network().ListenAddresses()}
	homeStatus := NewReachStatus(quiet, nil, true, network.ReachabilityPrivate)
	home := reachHost(t, &Reachability{AutoNAT: true, HolePunch: true, Force: network.ReachabilityPrivate,
		RelayPeers:       RelayPeerSource(func() []peer.AddrInfo { return []peer.AddrInfo{relayInfo} }),
		AutoRelayOptions: []autorelay.Option{autorelay.WithMinCandidates(1), autorelay.WithBootDelay(0), autorelay.WithMinInterval(100 * time.Millisecond)},
		Status:           homeStatus}, "/ip4/127.0.0.1/tcp/0")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := home.Connect(ctx, relayInfo); err != nil {
		t.Fatal(err)
	}
	var circuit multiaddr.Multiaddr
	for circuit == nil {
		if ctx.Err() != nil {
			t.Fatalf("no relayed address; home announces %v, status %+v", home.Addrs(), homeStatus.Info())
		}
		for _, a := range home.Addrs() {
			if IsRelayed(a) {
				circuit = a
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for !homeStatus.Info().Relayed {
		if ctx.Err() != nil {
			t.Fatalf("status not relayed: %+v", homeStatus.Info())
		}
		time.Sleep(20 * time.Millisecond)
	}
	info := homeStatus.Info()
	if info.Reachability != "private" || !info.Forced {
		t.Fatalf("home status %+v, want private, forced", info)
	}
	if ri := relayStatus.Info(); ri.Reachability != "public" || ri.Relayed {
		t.Fatalf("relay status %+v, want public, not relayed", ri)
	}
	// A third party dials home through the relay.
	other := reachHost(t, &Reachability{}, "/ip4/127.0.0.1/tcp/0")
	if err := other.Connect(ctx, relayInfo); err != nil { // the relay's real address
		t.Fatal(err)
	}
	if err := other.Connect(ctx, peer.AddrInfo{ID: home.ID(), Addrs: []multiaddr.Multiaddr{circuit}}); err != nil {
		t.Fatalf("dial %s: %v", circuit, err)
	}
	conns := other.Network().ConnsToPeer(home.ID())
	if len(conns) == 0 || !conns[0].Stat().Limited {
		t.Fatalf("connections to home %v, want a limited relayed one", conns)
	}
}

// TestReachStatusUnknown: without a verdict the status says why.
func TestReachStatusUnknown(t *testing.T) {
	s := NewReachStatus(slog.New(slog.DiscardHandler), nil, true, network.ReachabilityUnknown)
	h := reachHost(t, &Reachability{Status: s, NoAnnounce: []string{"127.0.0.0/8"}}, "/ip4/127.0.0.1/tcp/0")
	i := s.Info()
	if i.Reachability != "unknown" || i.Forced || i.Why == "" {
		t.Fatalf("status %+v", i)
	}
	if len(h.Addrs()) != 0 || len(i.Addrs) != 0 {
		t.Fatalf("announces %v (status %v) despite --no-announce 127.0.0.0/8", h.Addrs(), i.Addrs)
	}
}
