package nat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/overlay"
)

// probeTarget is a NAT-ed node the probe dials: its peer ID and the
// addresses it announces (relayed ones among them).
type probeTarget struct {
	Name  string   `json:"name"`
	ID    string   `json:"id"`
	Addrs []string `json:"addrs"`
}

// probeResult is what the probe learned of one target.
type probeResult struct {
	Name   string  `json:"name"`
	Direct bool    `json:"direct"`  // a direct (not relayed) connection came up
	AfterS float64 `json:"after_s"` // seconds from the relayed dial to the direct connection
	Via    string  `json:"via"`     // the direct connection's remote address, or the error
}

// probeMain is a certified client behind NAT that wants to reach NAT-ed
// nodes, as any peer would: it joins the public nodes in bootFile (so its
// own public address is observed), dials each target of targetsFile on
// its relayed addresses, and waits for libp2p's hole punching (DCUtR) to
// replace the relayed connection with a direct one. It prints one
// probeResult per target as JSON.
func probeMain(dir, bootFile, targetsFile string) error {
	id, err := keystore.Load(dir, certs.RoleClient, time.Now())
	if err != nil {
		return err
	}
	h, err := overlay.NewHost(overlay.HostConfig{Key: id.PeerKey,
		Listen:       []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/0.0.0.0/udp/0/quic-v1"), multiaddr.StringCast("/ip4/0.0.0.0/tcp/0")},
		Reachability: &overlay.Reachability{HolePunch: true}})
	if err != nil {
		return err
	}
	a, err := agent.Open(agent.Config{Identity: id, Host: h})
	if err != nil {
		return err
	}
	defer a.Close()
	boot, err := readAddrInfos(bootFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := a.Join(ctx, boot); err != nil {
		return err
	}
	if err := awaitPublicAddr(ctx, a); err != nil {
		return err
	}
	var targets []probeTarget
	b, err := os.ReadFile(targetsFile)
	if err == nil {
		err = json.Unmarshal(b, &targets)
	}
	if err != nil {
		return fmt.Errorf("targets %s: %w", targetsFile, err)
	}
	var out []probeResult
	for _, tg := range targets {
		out = append(out, probeOne(ctx, a, tg))
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// awaitPublicAddr waits until identify's observers agree on a public
// address of this host, which hole punching needs to offer.
func awaitPublicAddr(ctx context.Context, a *agent.Agent) error {
	for {
		for _, m := range a.Host().Addrs() {
			if manet.IsPublicAddr(m) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no public address observed: %v", a.Host().Addrs())
		case <-time.After(200 * time.Millisecond): // identify's observations: no event U.P. subscribes to
		}
	}
}

// probeOne dials tg on its relayed addresses and waits up to 30 s for a
// direct connection (DCUtR takes a few round trips, 3 attempts at most).
func probeOne(ctx context.Context, a *agent.Agent, tg probeTarget) probeResult {
	res := probeResult{Name: tg.Name}
	p, err := peer.Decode(tg.ID)
	if err != nil {
		res.Via = err.Error()
		return res
	}
	var relayed []multiaddr.Multiaddr
	for _, s := range tg.Addrs {
		if strings.Contains(s, "/p2p-circuit") {
			relayed = append(relayed, multiaddr.StringCast(s))
		}
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.Host().Connect(network.WithAllowLimitedConn(dctx, "probe"), peer.AddrInfo{ID: p, Addrs: relayed}); err != nil {
		res.Via = "relayed dial: " + err.Error()
		return res
	}
	for dctx.Err() == nil {
		for _, c := range a.Host().Network().ConnsToPeer(p) {
			if !c.Stat().Limited {
				res.Direct, res.AfterS, res.Via = true, time.Since(start).Seconds(), c.RemoteMultiaddr().String()
				return res
			}
		}
		select {
		case <-dctx.Done():
		case <-time.After(100 * time.Millisecond): // the swarm's connections: polled
		}
	}
	res.Via = "relayed only"
	return res
}

// readAddrInfos reads a file of multiaddrs with /p2p/ IDs, one per line.
func readAddrInfos(path string) ([]peer.AddrInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var addrs []multiaddr.Multiaddr
	for _, l := range strings.Fields(string(b)) {
		m, err := multiaddr.NewMultiaddr(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		addrs = append(addrs, m)
	}
	return peer.AddrInfosFromP2pAddrs(addrs...)
}
