package testnet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/up-pool/up/agent"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/project"
)

// NodeAddrs lists the running nodes for a party started in a process of
// its own (testkit.ChildCommand), which gets it in its environment: the
// first address of each, with its /p2p/ ID, joined by commas. Over
// mocknet no other process can reach them; use the TCP transport.
func (n *Network) NodeAddrs() string {
	var addrs []string
	for _, nd := range n.Live() {
		addrs = append(addrs, nd.Addrs()[0].String())
	}
	return strings.Join(addrs, ",")
}

// JoinProject is how a project in a process of its own starts, as `up
// project` does: it loads the project's data directory dir, opens its
// agent, joins the nodes listed in addrs (NodeAddrs' list) and returns
// the project. The caller closes its agent.
func JoinProject(ctx context.Context, dir, addrs string) (*project.Project, error) {
	var nodes []peer.AddrInfo
	for _, s := range strings.Split(addrs, ",") {
		ma, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("node address %q: %w", s, err)
		}
		ai, err := peer.AddrInfoFromP2pAddr(ma)
		if err != nil {
			return nil, fmt.Errorf("node address %q: %w", s, err)
		}
		nodes = append(nodes, *ai)
	}
	id, err := keystore.Load(dir, certs.RoleProject, time.Now())
	if err != nil {
		return nil, err
	}
	a, err := agent.Open(agent.Config{Identity: id})
	if err != nil {
		return nil, err
	}
	if err := a.Join(ctx, nodes); err != nil {
		a.Close()
		return nil, err
	}
	p, err := project.New(a)
	if err != nil {
		a.Close()
		return nil, err
	}
	return p, nil
}
