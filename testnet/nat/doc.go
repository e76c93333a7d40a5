// Package nat owns the wide-area test topology: a public segment and home
// networks behind NAT routers, built on one machine with Linux network
// namespaces, veth pairs and iptables (real kernel NAT, no U.P. code on
// the packet path), and the runs of real `up` processes on it.
//
// The public segment is a router namespace ("wan") with one link per
// public host, each in a /16 of its own in 11.0.0.0/8 (publicly routable
// addresses to libp2p, so AutoNAT, identify's observed addresses and hole
// punching treat them as the internet; the namespaces have no route to
// anywhere else). Home routers masquerade their LAN (192.168.K.0/24) out
// of their public link: a cone NAT keeps each flow's source port
// (Linux's default, endpoint-independent mapping), a symmetric one maps
// every flow to a random port (--random-fully); both filter inbound
// packets that match no flow they started.
//
// The kernel here has no netem qdisc, so delay and loss on the public
// segment come from a user-space stage: the wan router's forwarded
// packets go through a TUN device, read by a helper process that holds
// each one for its delay and drops some (Delayer). It is test
// infrastructure, as netem would be.
//
// Everything needs root and a kernel that allows namespaces; Available
// says plainly why not when it cannot run.
package nat
