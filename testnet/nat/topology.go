package nat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NATKind is how a home router maps its LAN's flows to its public address.
type NATKind int

const (
	// Cone keeps a flow's source port where it can (Linux's MASQUERADE
	// default): every flow from one LAN socket leaves from one public
	// port, so hole punching works.
	Cone NATKind = iota
	// Symmetric gives every flow a random public port (MASQUERADE
	// --random-fully): the port a peer observed is not the one the next
	// flow leaves from, so hole punching fails and relays remain.
	Symmetric
)

func (k NATKind) String() string {
	if k == Symmetric {
		return "symmetric"
	}
	return "cone"
}

// Router is a home router: its NAT kind, the hosts on its LAN, and
// whether it lets them map ports (UPnP IGD and NAT-PMP, served by
// miniupnpd).
type Router struct {
	Name  string
	Kind  NATKind
	Homes []string
	UPnP  bool
}

// Spec describes a topology: hosts on the public segment and home routers
// with their LANs. Names are short (they name namespaces with a prefix).
type Spec struct {
	Public  []string
	Routers []Router
}

// Net is a built topology. Close removes it.
type Net struct {
	prefix  string
	spec    Spec
	ns      map[string]string // host or router name → namespace
	addr    map[string]string // host name → its own IPv4 address
	behind  map[string]Router // home host → its router
	wanLink []string          // the wan router's interfaces to public hosts and routers
	delayer *exec.Cmd
	upnp    []*exec.Cmd // the miniupnpd daemons of UPnP routers
	dir     string      // scratch: miniupnpd's configuration and leases
}

// wanNS is the name of the public segment's router.
const wanNS = "wan"

// Available says why namespaces cannot be built here, or nil when they
// can: root, the ip and iptables tools, and a kernel that allows them.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: network namespaces need root")
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not installed (Debian: iproute2, iptables)", tool)
		}
	}
	probe := fmt.Sprintf("upnatprobe%d", os.Getpid())
	if err := run("ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("the kernel refuses network namespaces: %w", err)
	}
	defer run("ip", "netns", "del", probe)
	if err := run("ip", "netns", "exec", probe, "iptables", "-t", "nat", "-L", "-n"); err != nil {
		return fmt.Errorf("no NAT table in a namespace: %w", err)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("no TUN device for the delay stage: %w", err)
	}
	return nil
}

// Build creates the namespaces, links, addresses, routes and NAT rules of
// spec, with namespace names starting with prefix. On error it removes
// what it made.
func Build(prefix string, spec Spec) (*Net, error) {
	n := &Net{prefix: prefix, spec: spec, ns: map[string]string{}, addr: map[string]string{}, behind: map[string]Router{}}
	var err error
	if n.dir, err = os.MkdirTemp("", "up-nat-"+prefix); err != nil {
		return nil, err
	}
	if err := n.build(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Net) build() error {
	if err := n.addNS(wanNS); err != nil {
		return err
	}
	wan := n.ns[wanNS]
	if err := n.sysctls(wan, "net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
		"net.ipv4.conf.default.rp_filter=0", "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0"); err != nil {
		return err
	}
	for i, h := range n.spec.Public {
		if err := n.addPublic(h, 1+i, "eth0"); err != nil {
			return err
		}
	}
	for i, r := range n.spec.Routers {
		if err := n.addRouter(r, 1+i); err != nil {
			return err
		}
	}
	return nil
}

// addNS creates the namespace of name with its loopback up.
func (n *Net) addNS(name string) error {
	ns := n.prefix + "-" + name
	if err := run("ip", "netns", "add", ns); err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	n.ns[name] = ns
	return run("ip", "-n", ns, "link", "set", "lo", "up")
}

// addPublic puts host (a public host, or a router's public side) on the
// public segment as 11.K.0.2/16 behind the wan router's 11.K.0.1, with k
// below 256 and the host's side named dev.
func (n *Net) addPublic(host string, k int, dev string) error {
	if k > 250 {
		return fmt.Errorf("too many public links (%d)", k)
	}
	if _, ok := n.ns[host]; !ok {
		if err := n.addNS(host); err != nil {
			return err
		}
	}
	ns, wan := n.ns[host], n.ns[wanNS]
	link := fmt.Sprintf("p%d", k)
	steps := [][]string{
		{"ip", "link", "add", "name", dev, "netns", ns, "type", "veth", "peer", "name", link, "netns", wan},
		{"ip", "-n", wan, "addr", "add", fmt.Sprintf("11.%d.0.1/16", k), "dev", link},
		{"ip", "-n", wan, "link", "set", link, "up"},
		{"ip", "-n", ns, "addr", "add", fmt.Sprintf("11.%d.0.2/16", k), "dev", dev},
		{"ip", "-n", ns, "link", "set", dev, "up"},
		{"ip", "-n", ns, "route", "add", "default", "via", fmt.Sprintf("11.%d.0.1", k)},
	}
	if err := runAll(steps); err != nil {
		return fmt.Errorf("public link of %s: %w", host, err)
	}
	n.wanLink = append(n.wanLink, link)
	n.addr[host] = fmt.Sprintf("11.%d.0.2", k)
	return nil
}

// addRouter builds router r, the j-th: its public side as 11.(100+j).0.2,
// a LAN bridge 192.168.j.1/24 with its homes at .10 and on, the NAT rule
// of its kind, and a filter that drops inbound packets of no known flow.
func (n *Net) addRouter(r Router, j int) error {
	if err := n.addPublic(r.Name, 100+j, "wan0"); err != nil {
		return err
	}
	ns := n.ns[r.Name]
	// A UPnP router's rules are all iptables-legacy's, where miniupnpd
	// (its libiptc backend) adds its own: one ruleset, not two.
	tool := "iptables"
	if r.UPnP {
		tool = "iptables-legacy"
	}
	ipt := func(args ...string) []string { return append([]string{"ip", "netns", "exec", ns, tool}, args...) }
	masq := ipt("-t", "nat", "-A", "POSTROUTING", "-o", "wan0", "-j", "MASQUERADE")
	if r.Kind == Symmetric {
		masq = append(masq, "--random-fully")
	}
	steps := [][]string{
		{"ip", "-n", ns, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", ns, "addr", "add", fmt.Sprintf("192.168.%d.1/24", j), "dev", "br0"},
		{"ip", "-n", ns, "link", "set", "br0", "up"},
	}
	if r.UPnP { // miniupnpd's chains, ahead of the NAT and the filter
		steps = append(steps,
			ipt("-t", "nat", "-N", "MINIUPNPD"), ipt("-t", "nat", "-A", "PREROUTING", "-i", "wan0", "-j", "MINIUPNPD"),
			ipt("-t", "nat", "-N", "MINIUPNPD-POSTROUTING"), ipt("-t", "nat", "-A", "POSTROUTING", "-o", "wan0", "-j", "MINIUPNPD-POSTROUTING"),
			ipt("-t", "mangle", "-N", "MINIUPNPD"), ipt("-t", "mangle", "-A", "PREROUTING", "-i", "wan0", "-j", "MINIUPNPD"),
			ipt("-N", "MINIUPNPD"), ipt("-A", "FORWARD", "-i", "wan0", "!", "-o", "wan0", "-j", "MINIUPNPD"))
	}
	steps = append(steps, masq,
		ipt("-A", "FORWARD", "-i", "wan0", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"),
		ipt("-A", "FORWARD", "-i", "wan0", "-j", "DROP"),
		ipt("-A", "INPUT", "-i", "wan0", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"),
		ipt("-A", "INPUT", "-i", "wan0", "-j", "DROP"),
	)
	if err := n.sysctls(ns, "net.ipv4.ip_forward=1"); err != nil {
		return err
	}
	if err := runAll(steps); err != nil {
		return fmt.Errorf("router %s: %w", r.Name, err)
	}
	for i, h := range r.Homes {
		if err := n.addHome(r, j, h, 10+i); err != nil {
			return err
		}
	}
	if r.UPnP {
		return n.startUPnP(r, j)
	}
	return nil
}

// startUPnP runs miniupnpd on router r (the j-th) in the foreground,
// serving UPnP IGD and NAT-PMP to its LAN for ports 1024–65535.
func (n *Net) startUPnP(r Router, j int) error {
	conf := filepath.Join(n.dir, r.Name+"-miniupnpd.conf")
	body := fmt.Sprintf(`ext_ifname=wan0
listening_ip=br0
http_port=0
enable_natpmp=yes
enable_upnp=yes
secure_mode=yes
system_uptime=yes
uuid=00000000-0000-4000-8000-0000000000%02d
allow 1024-65535 192.168.%d.0/24 1024-65535
deny 0-65535 0.0.0.0/0 0-65535
`, j, j)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return err
	}
	c := exec.Command("ip", "netns", "exec", n.ns[r.Name], "miniupnpd", "-d", "-f", conf,
		"-P", filepath.Join(n.dir, r.Name+"-miniupnpd.pid"))
	log, err := os.Create(filepath.Join(n.dir, r.Name+"-miniupnpd.log"))
	if err != nil {
		return err
	}
	c.Stdout, c.Stderr = log, log
	if err := c.Start(); err != nil {
		log.Close()
		return fmt.Errorf("miniupnpd on %s: %w", r.Name, err)
	}
	log.Close()
	n.upnp = append(n.upnp, c)
	return nil
}

// UPnPLog is the log of router's miniupnpd, for a failure's message.
func (n *Net) UPnPLog(router string) string {
	b, _ := os.ReadFile(filepath.Join(n.dir, router+"-miniupnpd.log"))
	return string(b)
}

// addHome puts host on router r's LAN (the j-th router) as 192.168.j.k.
func (n *Net) addHome(r Router, j int, host string, k int) error {
	if err := n.addNS(host); err != nil {
		return err
	}
	ns, rns := n.ns[host], n.ns[r.Name]
	port := fmt.Sprintf("h%d", k)
	steps := [][]string{
		{"ip", "link", "add", "name", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", rns},
		{"ip", "-n", rns, "link", "set", port, "master", "br0"},
		{"ip", "-n", rns, "link", "set", port, "up"},
		{"ip", "-n", ns, "addr", "add", fmt.Sprintf("192.168.%d.%d/24", j, k), "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", ns, "route", "add", "default", "via", fmt.Sprintf("192.168.%d.1", j)},
	}
	if err := runAll(steps); err != nil {
		return fmt.Errorf("home %s behind %s: %w", host, r.Name, err)
	}
	n.addr[host] = fmt.Sprintf("192.168.%d.%d", j, k)
	n.behind[host] = r
	return nil
}

// sysctls sets keys (name=value) in namespace ns by writing /proc/sys,
// which is the namespace's own for net.* keys.
func (n *Net) sysctls(ns string, kv ...string) error {
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		path := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
		if err := run("ip", "netns", "exec", ns, "sh", "-c", fmt.Sprintf("echo %s > %s", v, path)); err != nil {
			return fmt.Errorf("sysctl %s in %s: %w", s, ns, err)
		}
	}
	return nil
}

// NS is the namespace of host.
func (n *Net) NS(host string) string { return n.ns[host] }

// Addr is host's own IPv4 address (a public one, or its LAN address).
func (n *Net) Addr(host string) string { return n.addr[host] }

// Behind is the router host sits behind; ok is false for a public host.
func (n *Net) Behind(host string) (Router, bool) {
	r, ok := n.behind[host]
	return r, ok
}

// Command is name with args run in host's namespace.
func (n *Net) Command(host, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.ns[host], name}, args...)...)
}

// Close stops the delay stage and removes every namespace (and with them
// their links). Processes still running in them keep running: stop them
// first.
func (n *Net) Close() {
	n.StopDelay()
	for _, c := range n.upnp {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	n.upnp = nil
	if n.dir != "" {
		_ = os.RemoveAll(n.dir)
	}
	for _, ns := range n.ns {
		_ = run("ip", "netns", "del", ns)
	}
	n.ns = map[string]string{}
}

// run runs a command, returning its output in the error when it fails.
func run(name string, args ...string) error {
	return runArgs(append([]string{name}, args...))
}

func runArgs(args []string) error {
	var out bytes.Buffer
	c := exec.Command(args[0], args[1:]...)
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func runAll(steps [][]string) error {
	for _, s := range steps {
		if err := runArgs(s); err != nil {
			return err
		}
	}
	return nil
}
