package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/spf13/cobra"

	"github.com/up-pool/up/cadir"
	"github.com/up-pool/up/certs"
	"github.com/up-pool/up/dht"
	"github.com/up-pool/up/keystore"
	"github.com/up-pool/up/node"
	"github.com/up-pool/up/overlay"
)

func newNodeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a volunteer node of the overlay",
		Long: `A node stores job replicas and index entries and answers the overlay's RPCs.
Set one up with 'up node init', have the CA issue its certificate, then
'up node run'.`,
	}
	cmd.AddCommand(newNodeInitCmd(), newNodeRunCmd(), newNodeStatusCmd(), newNodeEvidenceCmd())
	return cmd
}

func newNodeInitCmd() *cobra.Command {
	var data, caFile, name string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a node's data directory: keys, identity and certificate request",
		Example: `  up node init --data n1 --ca ca/ca.crt --name n1
  up ca issue --data ca --role node --in n1/node.csr --out n1/node.crt`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("data", data, "ca", caFile, "name", name); err != nil {
				return err
			}
			if err := initParty(cmd.OutOrStdout(), data, certs.RoleNode, name, caFile); err != nil {
				return err
			}
			p, err := writeNodeSettings(data)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "settings: %s (then: up node run --config %s)\n", p, shellQuote(p))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "data directory to create (required)")
	f.StringVar(&caFile, "ca", "", "the CA's certificate, ca.crt (required)")
	f.StringVar(&name, "name", "", "this node's name, for its certificate (required)")
	return cmd
}

// initParty creates a party's data directory and tells what to do next:
// the 'up ca issue' command that certifies it, complete when the CA's
// directory is the one caFile lies in.
func initParty(w io.Writer, dir string, role certs.Role, name, caFile string) error {
	if err := checkPartyName(name); err != nil {
		return usageError{fmt.Errorf("--name %q: %w", name, err)}
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("CA certificate: %w", err)
	}
	csr, err := keystore.Init(dir, role, name, caPEM, time.Now(), nil)
	if err != nil {
		return err
	}
	p := keystore.Paths{Dir: dir, Role: role}
	caDir, who := filepath.Dir(caFile), "have the CA run"
	if !cadir.Holds(caDir) {
		caDir, who = "CA_DIR", "send "+csr+" to the CA, who runs"
	}
	fmt.Fprintf(w, "%s %q initialised in %s\nnext: %s: up ca issue --data %s --role %s --in %s --out %s\n",
		role, name, dir, who, shellQuote(caDir), role, shellQuote(csr), shellQuote(p.Cert()))
	return nil
}

// nodeRunFlags are the flags of 'up node run'.
type nodeRunFlags struct {
	settings      string
	data          string
	listen        []string
	bootstrap     []string
	bootstrapFile string
	http          string
	logLevel      string
	logFormat     string
	r             int
	cacheTTL      time.Duration
	rewrite       time.Duration
	republish     time.Duration
	capacity      float64
	balance       time.Duration // 0: the default period (--no-balance turns balancing off)
	noBalance     bool
	maxGrindBits  int
	storeSync     time.Duration // 0: fsync every write
	dhtMode       string
	announce      []string
	noAnnounce    []string
	noPortMap     bool
	noQuota       bool
}

// config turns the flags into a node configuration, or a usage error naming
// the bad value. It touches no file and no network.
func (f *nodeRunFlags) config(stderr io.Writer) (node.Config, error) {
	if err := required("data", f.data); err != nil {
		return node.Config{}, err
	}
	listen, err := parseMultiaddrs("--listen", f.listen)
	if err != nil {
		return node.Config{}, err
	}
	boot, err := bootstrapPeers(f.bootstrap, f.bootstrapFile)
	if err != nil {
		return node.Config{}, err
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return node.Config{}, err
	}
	if f.r < 1 || f.r > 20 {
		return node.Config{}, usageError{fmt.Errorf("--replication %d out of 1..20", f.r)}
	}
	if f.cacheTTL < 0 {
		return node.Config{}, usageError{fmt.Errorf("--lookup-cache %s is negative", f.cacheTTL)}
	}
	cfg := node.Config{DataDir: f.data, Listen: listen, Bootstrap: boot, HTTPAddr: f.http, Logger: logger, LibP2PMetrics: true, Version: version}
	if cfg.DHT.Mode, err = dhtMode(f.dhtMode, listen); err != nil {
		return node.Config{}, usageError{err}
	}
	reach := overlay.NodeReachability()
	reach.PortMap = !f.noPortMap
	cfg.Claim.RequireTicket = !f.noQuota
	if reach.Announce, err = parseMultiaddrs("--announce", f.announce); err != nil {
		return node.Config{}, err
	}
	for _, a := range f.noAnnounce {
		if err := overlay.ParseNoAnnounce(a); err != nil {
			return node.Config{}, usageError{fmt.Errorf("--no-announce: %w", err)}
		}
	}
	reach.NoAnnounce = f.noAnnounce
	cfg.Reachability = &reach
	cfg.DHT.Replication = f.r
	cfg.DHT.LookupCacheTTL = f.cacheTTL
	cfg.DHT.DisableLookupCache = f.cacheTTL == 0 // the config's zero TTL means the default
	if f.rewrite < 0 || f.republish < 0 {
		return node.Config{}, usageError{fmt.Errorf("--rewrite and --republish must not be negative")}
	}
	if f.rewrite > 0 {
		cfg.IndexWriter.RewriteMin, cfg.IndexWriter.RewriteMax = f.rewrite, f.rewrite*3/2
		cfg.IndexWriter.Tick = max(f.rewrite/10, time.Second)
		cfg.Index.Server.Table.Expiry = (f.rewrite * 16 / 10).Milliseconds()
	}
	if f.republish > 0 {
		cfg.Pool.RepublishInterval, cfg.Pool.RepublishJitter = f.republish, f.republish/5
	}
	if f.capacity < 0 || f.capacity > 1e6 {
		return node.Config{}, usageError{fmt.Errorf("--capacity %g out of 0..1000000", f.capacity)}
	}
	if f.maxGrindBits < 0 || f.maxGrindBits > 40 {
		return node.Config{}, usageError{fmt.Errorf("--max-grind-bits %d out of 0..40", f.maxGrindBits)}
	}
	cfg.Balance.Capacity = f.capacity
	switch {
	case f.storeSync < 0:
		return node.Config{}, usageError{fmt.Errorf("--store-sync %s is negative", f.storeSync)}
	case f.storeSync == 0:
		cfg.StoreSyncEachWrite = true // the config's zero interval means the default
	default:
		cfg.StoreSyncInterval = f.storeSync
	}
	switch {
	case f.balance < 0:
		return node.Config{}, usageError{fmt.Errorf("--balance-interval %s is negative (--no-balance turns balancing off)", f.balance)}
	case f.balance > 0 && f.balance < time.Millisecond:
		return node.Config{}, usageError{fmt.Errorf("--balance-interval %s is below 1ms", f.balance)}
	}
	cfg.Balance.Interval = f.balance
	cfg.Balance.Off = f.noBalance
	cfg.Balance.MaxGrindBits = f.maxGrindBits
	return cfg, nil
}

// parseMultiaddrs parses multiaddr flag values.
func parseMultiaddrs(flag string, vals []string) ([]multiaddr.Multiaddr, error) {
	var out []multiaddr.Multiaddr
	for _, v := range vals {
		a, err := multiaddr.NewMultiaddr(strings.TrimSpace(v))
		if err != nil {
			return nil, usageError{fmt.Errorf("%s %q is not a multiaddr: %v", flag, v, err)}
		}
		out = append(out, a)
	}
	return out, nil
}

// parseBootstrap parses bootstrap multiaddrs, which must end in /p2p/<id>.
func parseBootstrap(vals []string) ([]peer.AddrInfo, error) {
	addrs, err := parseMultiaddrs("--bootstrap", vals)
	if err != nil {
		return nil, err
	}
	var out []peer.AddrInfo
	for i, a := range addrs {
		ai, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil {
			return nil, usageError{fmt.Errorf("--bootstrap %q needs a /p2p/<peer id> part: %v", vals[i], err)}
		}
		out = append(out, *ai)
	}
	return out, nil
}

// newLogger builds the structured logger of the flags.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", level)}
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want text or json", format)}
}

func newNodeRunCmd() *cobra.Command {
	var fl nodeRunFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the node daemon until interrupted",
		Example: `  up node run --data n1 --listen /ip4/0.0.0.0/tcp/4001 --http 127.0.0.1:8040
  up node run --data n2 --listen /ip4/0.0.0.0/tcp/4002 \
      --bootstrap /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW...`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loadNodeSettings(cmd.Flags(), os.Environ()); err != nil {
				return err
			}
			cfg, err := fl.config(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			setLibp2pLogger(cfg.Logger)
			// A volunteer's machine may start before its network: join
			// until stopped, unless the peers refuse this node itself.
			cfg.JoinUntilStopped = true
			// Open and Abandon undo a failed first start: no store is left.
			n, err := node.Open(cfg)
			if err != nil {
				return err
			}
			if err := n.Start(ctx); err != nil {
				_ = n.Abandon()
				if ctx.Err() != nil {
					return nil // stopped while joining
				}
				return err
			}
			for _, a := range n.Addrs() {
				fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", a)
			}
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			for {
				select {
				case <-hup:
					n.ReloadCRL()
				case <-ctx.Done():
					return n.Close()
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.settings, "config", "", "YAML settings file (keys are these flags' names; 'up node init' writes DATA/node.yaml, read by default when present); flags, then UP_… environment variables (UP_LOG_LEVEL for --log-level), override it")
	f.StringVar(&fl.data, "data", "", "data directory made by 'up node init' (required)")
	f.StringSliceVar(&fl.listen, "listen", []string{"/ip4/0.0.0.0/tcp/4001", "/ip4/0.0.0.0/udp/4001/quic-v1"}, "multiaddr to listen on (repeatable; TCP and QUIC)")
	f.StringSliceVar(&fl.bootstrap, "bootstrap", nil, "multiaddr of a node to join through, with /p2p/<id> (repeatable)")
	f.StringVar(&fl.bootstrapFile, "bootstrap-file", "", "file of bootstrap multiaddrs, one per line")
	f.StringVar(&fl.http, "http", "", "address of the local HTTP API (/status, /metrics), e.g. 127.0.0.1:8040; off when empty")
	f.StringVar(&fl.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&fl.logFormat, "log-format", "text", "log format: text or json")
	f.IntVar(&fl.r, "replication", 5, "r, the number of closest nodes that hold each job")
	f.DurationVar(&fl.cacheTTL, "lookup-cache", 90*time.Second, "how long a closest-nodes lookup is reused; 0 turns the cache off")
	f.DurationVar(&fl.rewrite, "rewrite", 0, "T_rewrite, how often index entries are rewritten (default 10-15 min; entries expire after 1.6x)")
	f.DurationVar(&fl.republish, "republish", 0, "mean time between republish rounds (default 25 min, ± 5 min)")
	f.Float64Var(&fl.capacity, "capacity", 0, "this node's capacity relative to a typical volunteer's (default 1): load balancing divides its load by it")
	f.DurationVar(&fl.balance, "balance-interval", 0, "mean time between load-balancing probes (default 40 min, ± half)")
	f.BoolVar(&fl.noBalance, "no-balance", false, "no automatic load balancing: no probes, no reactions to loads piggy-backed on replies (the node still answers others)")
	f.DurationVar(&fl.storeSync, "store-sync", 100*time.Millisecond, "how often the store's log is synced to disk for the writes since (replicas repair each other, so a write waits for the OS, not its own fsync); 0 syncs every write")
	f.StringVar(&fl.dhtMode, "dht-mode", "auto", "auto: a DHT client (in no routing table, holding no job or index entry) until AutoNAT finds the node publicly reachable, then a server; server or client force it (auto on loopback-only listen addresses means server)")
	f.StringSliceVar(&fl.announce, "announce", nil, "multiaddr to announce instead of the listen and observed ones, e.g. a port forwarded by hand (repeatable)")
	f.StringSliceVar(&fl.noAnnounce, "no-announce", nil, "multiaddr or CIDR network never to announce, e.g. 10.0.0.0/8 (repeatable)")
	f.BoolVar(&fl.noPortMap, "no-port-map", false, "do not ask the router to forward the listen ports (UPnP, NAT-PMP)")
	f.BoolVar(&fl.noQuota, "no-quota", false, "grant claims without a quota ticket from the client's record nodes (clients of old versions)")
	f.IntVar(&fl.maxGrindBits, "max-grind-bits", 0, "longest position prefix this node grinds an identity for when it moves (default 28; each bit doubles the cost)")
	return cmd
}

func newNodeStatusCmd() *cobra.Command {
	var addr, token string
	var asJSON bool
	var wait time.Duration
	var peers int
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print a running node's status from its HTTP API",
		Long: `Status asks a running node's HTTP API (up node run --http) for its peer ID,
position, addresses, routing table, neighbours, jobs and index entries.
With --wait it keeps asking until the node answers (and, with --peers N,
until its routing table holds N nodes), for at most that long: what a
script that has just started a node runs before it goes on.`,
		Example: `  up node status --http 127.0.0.1:8040
  up node status --http http://127.0.0.1:8040 --json
  up node status --http 127.0.0.1:8040 --wait 30s --peers 4
  up node status --http 10.0.0.5:8040 --token "$(cat n1/http.token)"   # an API beyond loopback`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("http", addr); err != nil {
				return err
			}
			if wait < 0 || peers < 0 || (peers > 0 && wait == 0) {
				return usageError{fmt.Errorf("--wait %s --peers %d: want a positive --wait, and --peers only with it", wait, peers)}
			}
			st, err := waitNodeStatus(cmd.Context(), nodeAPI{addr, apiTokenOr(token, os.Getenv)}, wait, peers)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return printNodeStatus(cmd.OutOrStdout(), st)
		},
	}
	cmd.Flags().StringVar(&addr, "http", "", "the node's HTTP API: host:port or http(s)://host:port (required)")
	cmd.Flags().StringVar(&token, "token", "", tokenHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().DurationVar(&wait, "wait", 0, "keep asking until the node answers, for at most this long (0: ask once)")
	cmd.Flags().IntVar(&peers, "peers", 0, "with --wait: also wait until the node's routing table holds this many nodes")
	return cmd
}

// waitNodeStatus fetches the node's status at addr; with wait > 0 it asks
// again every 200 ms while the node does not answer or its routing table
// holds fewer than peers nodes, and fails with the last reason after wait.
func waitNodeStatus(ctx context.Context, api nodeAPI, wait time.Duration, peers int) (node.Status, error) {
	deadline := time.Now().Add(wait)
	addr := api.addr
	for {
		var st node.Status
		err := fetchStatusToken(addr, "node", api.token, &st)
		if err == nil && st.RoutingTable < peers {
			err = fmt.Errorf("node at %s: routing table holds %d nodes, want %d", addr, st.RoutingTable, peers)
		}
		if err == nil || wait == 0 {
			return st, err
		}
		var refused *wrongRoleError
		if errors.As(err, &refused) || time.Now().After(deadline) {
			return st, fmt.Errorf("after waiting %s: %w", wait, err)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// bootstrapPeers reads bootstrap multiaddrs from flags and, when given, a
// file of one multiaddr per line ('#' starts a comment).
func bootstrapPeers(flags []string, file string) ([]peer.AddrInfo, error) {
	vals := append([]string(nil), flags...)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("bootstrap file: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				vals = append(vals, line)
			}
		}
	}
	return parseBootstrap(vals)
}

// dhtMode reads --dht-mode. Auto on listen addresses that are all loopback
// (a node tried out on one machine, the README's quick start) is server:
// there is no NAT between such nodes, and AutoNAT, which tests public
// addresses only, would never find them reachable.
func dhtMode(s string, listen []multiaddr.Multiaddr) (dht.Mode, error) {
	if s == "" {
		s = dht.ModeAuto.String()
	}
	m, err := dht.ParseMode(s)
	if err != nil {
		return 0, fmt.Errorf("--dht-mode: %w", err)
	}
	if m == dht.ModeAuto && len(listen) > 0 && !slices.ContainsFunc(listen, func(a multiaddr.Multiaddr) bool { return !manet.IsIPLoopback(a) }) {
		return dht.ModeServer, nil
	}
	return m, nil
}
