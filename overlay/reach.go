package overlay

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	bhost "github.com/libp2p/go-libp2p/p2p/host/basic"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Reachability configures how a host learns whether the network can dial
// it and how it becomes dialable when it cannot, with libp2p's own
// services only (no NAT, relay or hole-punching code of U.P.'s own).
// The zero value turns every service off, as a dial-only party (a worker
// client, a project) or a test on loopback wants; nodes start from
// NodeReachability.
type Reachability struct {
	// AutoNAT asks connected peers to dial this host back (AutoNAT v1,
	// which drives the host's reachability events, and v2, which tests
	// each address on its own) and answers their probes in turn, within
	// libp2p's throttles (v1: 30 probes a minute in all, 3 per peer).
	AutoNAT bool
	// PortMap asks the home router to forward the listen ports (UPnP IGD
	// or NAT-PMP) where it allows it; the mapped addresses are announced
	// once AutoNAT confirms them.
	PortMap bool
	// RelayService serves circuit relay v2 to peers behind NAT, but only
	// while AutoNAT finds this host public (libp2p starts and stops the
	// service on the host's reachability), within RelayResources.
	RelayService bool
	// RelayResources bounds the relay service; nil: TightRelayResources.
	RelayResources *relayv2.Resources
	// RelayACL, when set, decides who may reserve a slot on the relay
	// service and be relayed (a node uses AdmittedRelayACL); nil: anyone
	// within RelayResources.
	RelayACL relayv2.ACLFilter
	// RelayPeers, when set, turns auto-relay on: while AutoNAT finds this
	// host private, it reserves a slot on up to MaxRelays relays among the
	// peers this function offers (a node offers its routing table's peers)
	// and announces the relayed /p2p-circuit addresses, so others can
	// reach it to hole-punch.
	RelayPeers autorelay.PeerSource
	// MaxRelays is how many relays auto-relay keeps a reservation on.
	// Default 2.
	MaxRelays int
	// AutoRelayOptions are more of auto-relay's options (tests: a shorter
	// boot delay, fewer candidates; libp2p waits for 4 candidates or 3 min).
	AutoRelayOptions []autorelay.Option
	// HolePunch upgrades relayed connections to direct ones (DCUtR over
	// the relay, then simultaneous TCP or QUIC dials).
	HolePunch bool
	// Force, when public or private, fixes the host's reachability instead
	// of AutoNAT's verdict (tests; operators who know). Default unknown:
	// AutoNAT decides.
	Force network.Reachability
	// Announce, when set, replaces the host's direct addresses announced
	// to peers (an operator's known public addresses, a port forwarded by
	// hand); relayed addresses are kept.
	Announce []multiaddr.Multiaddr
	// NoAnnounce are addresses never announced: each a multiaddr, removed
	// when equal, or an IP network in CIDR notation (10.0.0.0/8), removing
	// every address in it.
	NoAnnounce []string
	// Status, when set, is kept up to date with the host's reachability
	// (NewHost starts it watching the host).
	Status *ReachStatus
}

// NodeReachability is a node's default: AutoNAT, port mapping, a relay
// service within TightRelayResources while public, hole punching.
// Auto-relay needs the caller's RelayPeers.
func NodeReachability() Reachability {
	return Reachability{AutoNAT: true, PortMap: true, RelayService: true, HolePunch: true}
}

// TightRelayResources bounds what a volunteer relays for others: relayed
// connections carry only the DCUtR exchange that upgrades them to direct
// ones (U.P.'s protocols do not run on limited connections), so each
// lasts at most 2 min and 128 KiB each way (libp2p's per-circuit
// defaults), at most 32 reservations of 1 h are held (libp2p: 128), 4 per
// IP (8) and 8 per AS (32), and at most 4 circuits per peer (16), with
// 2 KiB buffers. At most 32 × 4 × 2 × 128 KiB = 32 MiB relayed per
// 2 minutes, about 2 Mbit/s at worst.
func TightRelayResources() relayv2.Resources {
	return relayv2.Resources{
		Limit:                  &relayv2.RelayLimit{Duration: 2 * time.Minute, Data: 128 << 10},
		ReservationTTL:         time.Hour,
		MaxReservations:        32,
		MaxCircuits:            4,
		BufferSize:             2048,
		MaxReservationsPerPeer: 1,
		MaxReservationsPerIP:   4,
		MaxReservationsPerASN:  8,
	}
}

// options are the libp2p options for r. Without AutoRelay or RelayService
// the relay transport is still on, so a host can dial a relayed address.
func (r *Reachability) options() ([]libp2p.Option, error) {
	var opts []libp2p.Option
	if r.AutoNAT {
		opts = append(opts, libp2p.EnableAutoNATv2(), libp2p.EnableNATService())
	}
	switch r.Force {
	case network.ReachabilityPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	case network.ReachabilityPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	}
	if r.PortMap {
		opts = append(opts, libp2p.NATManager(func(n network.Network) bhost.NATManager {
			m := bhost.NewNATManager(n)
			if r.Status == nil {
				return m
			}
			return &watchedNAT{NATManager: m, s: r.Status}
		}))
	}
	if r.RelayService {
		res := TightRelayResources()
		if r.RelayResources != nil {
			res = *r.RelayResources
		}
		ro := []relayv2.Option{relayv2.WithResources(res)}
		if r.RelayACL != nil {
			ro = append(ro, relayv2.WithACL(r.RelayACL))
		}
		opts = append(opts, libp2p.EnableRelayService(ro...))
	}
	if r.RelayPeers != nil {
		n := r.MaxRelays
		if n == 0 {
			n = 2
		}
		opts = append(opts, libp2p.EnableAutoRelayWithPeerSource(r.RelayPeers,
			append([]autorelay.Option{autorelay.WithNumRelays(n), autorelay.WithMinInterval(time.Minute)}, r.AutoRelayOptions...)...))
	}
	if r.HolePunch {
		var hp []holepunch.Option
		if r.Status != nil {
			hp = append(hp, holepunch.WithTracer(r.Status))
		}
		opts = append(opts, libp2p.EnableHolePunching(hp...))
	}
	if len(r.Announce) > 0 || len(r.NoAnnounce) > 0 {
		f, err := announceFilter(r.Announce, r.NoAnnounce)
		if err != nil {
			return nil, err
		}
		opts = append(opts, libp2p.AddrsFactory(f))
	}
	return opts, nil
}

// ParseNoAnnounce checks a --no-announce value: a multiaddr or a CIDR.
func ParseNoAnnounce(s string) error {
	_, err := parseNoAnnounce(s)
	return err
}

// noAnnounce is one NoAnnounce entry.
type noAnnounce struct {
	addr multiaddr.Multiaddr // or
	net  *net.IPNet
}

func parseNoAnnounce(s string) (noAnnounce, error) {
	if strings.HasPrefix(s, "/") {
		a, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			return noAnnounce{}, fmt.Errorf("no-announce %q: %w", s, err)
		}
		return noAnnounce{addr: a}, nil
	}
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		return noAnnounce{}, fmt.Errorf("no-announce %q: neither a multiaddr nor a CIDR network", s)
	}
	return noAnnounce{net: n}, nil
}

// announceFilter is the host's AddrsFactory: announce replaces the direct
// addresses (relayed ones stay), then the noAnnounce ones go.
func announceFilter(announce []multiaddr.Multiaddr, no []string) (func([]multiaddr.Multiaddr) []multiaddr.Multiaddr, error) {
	var drop []noAnnounce
	for _, s := range no {
		d, err := parseNoAnnounce(s)
		if err != nil {
			return nil, err
		}
		drop = append(drop, d)
	}
	announce = slices.Clone(announce)
	return func(addrs []multiaddr.Multiaddr) []multiaddr.Multiaddr {
		if len(announce) > 0 {
			out := slices.Clone(announce)
			for _, a := range addrs {
				if IsRelayed(a) {
					out = append(out, a)
				}
			}
			addrs = out
		}
		return slices.DeleteFunc(slices.Clone(addrs), func(a multiaddr.Multiaddr) bool {
			for _, d := range drop {
				if d.addr != nil && d.addr.Equal(a) {
					return true
				}
				if d.net != nil {
					if ip, err := manet.ToIP(a); err == nil && d.net.Contains(ip) {
						return true
					}
				}
			}
			return false
		})
	}, nil
}

// IsRelayed reports whether a is a relayed (/p2p-circuit) address.
func IsRelayed(a multiaddr.Multiaddr) bool {
	_, err := a.ValueForProtocol(multiaddr.P_CIRCUIT)
	return err == nil
}

// watchedNAT is libp2p's NAT manager, telling a ReachStatus which listen
// addresses the router mapped.
type watchedNAT struct {
	bhost.NATManager
	s *ReachStatus
}

// GetMapping returns libp2p's mapping of addr and notes it.
func (w *watchedNAT) GetMapping(addr multiaddr.Multiaddr) multiaddr.Multiaddr {
	m := w.NATManager.GetMapping(addr)
	w.s.noteMapping(addr, m, w.NATManager.HasDiscoveredNAT())
	return m
}

// RelayPeerSource is an auto-relay PeerSource offering the peers list
// returns (a node's routing-table peers, with their addresses), at most
// as many as asked for each time.
func RelayPeerSource(list func() []peer.AddrInfo) autorelay.PeerSource {
	return func(_ context.Context, num int) <-chan peer.AddrInfo {
		ps := list()
		if len(ps) > num {
			ps = ps[:num]
		}
		ch := make(chan peer.AddrInfo, len(ps))
		for _, p := range ps {
			ch <- p
		}
		close(ch)
		return ch
	}
}
