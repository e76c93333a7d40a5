package overlay

import (
	"testing"
	"time"
)

// TestAdmittedRelayACL: the relay reserves only for admitted nodes and
// relays only admitted parties to admitted nodes; an unbound list, a
// client reserving, and a peer that never says hello are refused (the
// negative controls of each allowance).
func TestAdmittedRelayACL(t *testing.T) {
	f := newAdmFixture(t)
	node, cli, stranger := newPeerID(t, 1), newPeerID(t, 2), newPeerID(t, 3)
	var acl AdmittedRelayACL
	acl.Wait = 50 * time.Millisecond
	if acl.AllowReserve(node, nil) {
		t.Fatal("an unbound list let a node reserve")
	}
	acl.Bind(f.adm)
	f.mustAdmit(t, node, f.node.hello(node, 1))
	f.mustAdmit(t, cli, f.cli.hello(cli, 1))
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"node reserves", acl.AllowReserve(node, nil), true},
		{"client reserves", acl.AllowReserve(cli, nil), false},
		{"stranger reserves", acl.AllowReserve(stranger, nil), false},
		{"client to node", acl.AllowConnect(cli, nil, node), true},
		{"node to client", acl.AllowConnect(node, nil, cli), false},
		{"stranger to node", acl.AllowConnect(stranger, nil, node), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: allowed %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
