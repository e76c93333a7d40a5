package overlay

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/multiformats/go-multiaddr"
)

// ReachInfo is what a host knows of its reachability.
type ReachInfo struct {
	// Reachability is AutoNAT's verdict (or the forced one): "public",
	// "private" or "unknown".
	Reachability string `json:"reachability"`
	// Why explains it in a sentence: how it was learned, whether the
	// router maps a port, whether the host is relayed or hole-punched.
	Why string `json:"why"`
	// Forced: set by configuration, not by AutoNAT.
	Forced bool `json:"forced,omitempty"`
	// Addrs are the addresses the host announces to peers.
	Addrs []string `json:"addrs"`
	// Reachable are the addresses AutoNAT v2 confirmed by dialling back.
	Reachable []string `json:"reachable_addrs,omitempty"`
	// Mapped are external addresses the router maps to listen addresses
	// (UPnP IGD or NAT-PMP).
	Mapped []string `json:"mapped_addrs,omitempty"`
	// NAT: the port mapper found a NAT device on the way out.
	NAT bool `json:"nat,omitempty"`
	// Relayed: the host announces relayed (/p2p-circuit) addresses.
	Relayed bool `json:"relayed"`
	// HolePunched counts the direct connections hole punching made.
	HolePunched int `json:"hole_punched"`
	// Since is when Reachability last changed.
	Since time.Time `json:"since"`
}

// Summary is the status in a few words: "reachable", "behind NAT" or
// "reachability unknown", with how (port mapped, relayed, hole-punched).
func (i ReachInfo) Summary() string {
	var how []string
	if len(i.Mapped) > 0 {
		how = append(how, "port mapped")
	}
	if i.HolePunched > 0 {
		how = append(how, "hole-punched")
	}
	if i.Relayed {
		how = append(how, "relayed")
	}
	s := "reachability unknown"
	switch i.Reachability {
	case "public":
		s = "reachable"
	case "private":
		s = "behind NAT"
	}
	if len(how) > 0 {
		s += " (" + strings.Join(how, ", ") + ")"
	}
	return s
}

// ReachStatus follows a host's reachability on its event bus and logs
// each change at INFO. Safe for concurrent use.
type ReachStatus struct {
	log     *slog.Logger
	now     func() time.Time
	autoNAT bool

	mu        sync.Mutex
	info      ReachInfo
	mapped    map[string]string // listen address → external one
	last      string            // the last summary logged
	sub       event.Subscription
	closeOnce sync.Once
}

// NewReachStatus returns a status logging to log (slog.Default when nil).
// autoNAT says whether the host runs AutoNAT, for the explanation; force
// is the configured reachability, unknown when AutoNAT decides.
func NewReachStatus(log *slog.Logger, now func() time.Time, autoNAT bool, force network.Reachability) *ReachStatus {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	s := &ReachStatus{log: log, now: now, autoNAT: autoNAT, mapped: map[string]string{}}
	s.info.Reachability = reachName(force)
	s.info.Forced = force != network.ReachabilityUnknown
	s.info.Since = now()
	// The state it starts in is not a change: it is logged when it
	// changes (a node that fails to start says one line, its error).
	s.last = s.info.Reachability + " " + s.why()
	return s
}

// reachName is the status word for r.
func reachName(r network.Reachability) string {
	switch r {
	case network.ReachabilityPublic:
		return "public"
	case network.ReachabilityPrivate:
		return "private"
	}
	return "unknown"
}

// Watch follows h's events until Close. Call it once.
func (s *ReachStatus) Watch(h host.Host) error {
	sub, err := h.EventBus().Subscribe([]any{
		new(event.EvtLocalReachabilityChanged),
		new(event.EvtLocalAddressesUpdated),
		new(event.EvtHostReachableAddrsChanged),
	})
	if err != nil {
		return fmt.Errorf("watch reachability: %w", err)
	}
	s.mu.Lock()
	s.sub = sub
	s.mu.Unlock()
	s.setAddrs(h.Addrs())
	go func() {
		for e := range sub.Out() {
			switch e := e.(type) {
			case event.EvtLocalReachabilityChanged:
				s.setReachability(e.Reachability)
			case event.EvtLocalAddressesUpdated:
				addrs := make([]multiaddr.Multiaddr, 0, len(e.Current))
				for _, a := range e.Current {
					addrs = append(addrs, a.Address)
				}
				s.setAddrs(addrs)
			case event.EvtHostReachableAddrsChanged:
				s.mu.Lock()
				s.info.Reachable = addrStrings(e.Reachable)
				s.mu.Unlock()
			}
		}
	}()
	return nil
}

// Close stops watching.
func (s *ReachStatus) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		sub := s.sub
		s.mu.Unlock()
		if sub != nil {
			_ = sub.Close()
		}
	})
}

// Info returns the current status.
func (s *ReachStatus) Info() ReachInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.info
	i.Addrs = slices.Clone(i.Addrs)
	i.Reachable = slices.Clone(i.Reachable)
	i.Mapped = slices.Clone(i.Mapped)
	i.Why = s.why()
	return i
}

func (s *ReachStatus) setReachability(r network.Reachability) {
	s.mu.Lock()
	if name := reachName(r); name != s.info.Reachability {
		s.info.Reachability = name
		s.info.Since = s.now()
	}
	s.changedLocked()
}

func (s *ReachStatus) setAddrs(addrs []multiaddr.Multiaddr) {
	s.mu.Lock()
	s.info.Addrs = addrStrings(addrs)
	s.info.Relayed = slices.ContainsFunc(addrs, IsRelayed)
	s.changedLocked()
}

// noteMapping records the port mapper's answer for a listen address.
func (s *ReachStatus) noteMapping(listen, external multiaddr.Multiaddr, nat bool) {
	s.mu.Lock()
	if external == nil {
		delete(s.mapped, listen.String())
	} else {
		s.mapped[listen.String()] = external.String()
	}
	s.info.Mapped = s.info.Mapped[:0]
	for _, m := range s.mapped {
		s.info.Mapped = append(s.info.Mapped, m)
	}
	slices.Sort(s.info.Mapped)
	s.info.NAT = nat
	s.changedLocked()
}

// Trace counts successful hole punches (holepunch.EventTracer).
func (s *ReachStatus) Trace(e *holepunch.Event) {
	if end, ok := e.Evt.(*holepunch.EndHolePunchEvt); ok && end.Success {
		s.mu.Lock()
		s.info.HolePunched++
		s.changedLocked()
	}
}

// changedLocked logs the status when its summary changed, and unlocks.
func (s *ReachStatus) changedLocked() {
	why := s.why()
	summary := s.info.Reachability + " " + why
	if summary == s.last {
		s.mu.Unlock()
		return
	}
	s.last = summary
	reach, addrs := s.info.Reachability, slices.Clone(s.info.Addrs)
	s.mu.Unlock()
	s.log.Info("reachability", "reachability", reach, "why", why, "addrs", strings.Join(addrs, " "))
}

// why explains the status; s.mu held.
func (s *ReachStatus) why() string {
	i := &s.info
	var parts []string
	switch {
	case i.Forced:
		parts = append(parts, "set by configuration")
	case i.Reachability == "public":
		parts = append(parts, "peers dialled it back (AutoNAT)")
	case i.Reachability == "private":
		parts = append(parts, "behind NAT or a firewall: peers could not dial it back (AutoNAT)")
	case !s.autoNAT:
		parts = append(parts, "AutoNAT is off")
	default:
		parts = append(parts, "not yet probed: AutoNAT waits for connected peers to dial it back")
	}
	if len(i.Mapped) > 0 {
		parts = append(parts, "router maps "+strings.Join(i.Mapped, " "))
	} else if i.NAT {
		parts = append(parts, "a NAT device was found but maps no port")
	}
	if i.Relayed {
		parts = append(parts, "reachable through relays")
	}
	if i.HolePunched > 0 {
		parts = append(parts, fmt.Sprintf("%d connections hole-punched", i.HolePunched))
	}
	return strings.Join(parts, "; ")
}

// addrStrings renders multiaddrs, sorted.
func addrStrings(addrs []multiaddr.Multiaddr) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}
