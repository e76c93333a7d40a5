package nat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Delay is what the public segment does to every packet crossing it (one
// way: a round trip between two hosts crosses it twice).
type Delay struct {
	// OneWay is the mean one-way delay; each packet's is uniform in
	// OneWay ± Jitter (so packets may be reordered, as with netem).
	OneWay, Jitter time.Duration
	// Loss is the probability that a packet is dropped, 0..1.
	Loss float64
	// Seed seeds the delay stage's random source.
	Seed uint64
}

// String is the delay as the environment variable carries it.
func (d Delay) String() string {
	return fmt.Sprintf("%s,%s,%g,%d", d.OneWay, d.Jitter, d.Loss, d.Seed)
}

// parseDelay reads Delay.String's form.
func parseDelay(s string) (Delay, error) {
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return Delay{}, fmt.Errorf("delay %q: want oneway,jitter,loss,seed", s)
	}
	var d Delay
	var err error
	if d.OneWay, err = time.ParseDuration(f[0]); err != nil {
		return Delay{}, fmt.Errorf("delay %q: %w", s, err)
	}
	if d.Jitter, err = time.ParseDuration(f[1]); err != nil {
		return Delay{}, fmt.Errorf("delay %q: %w", s, err)
	}
	if d.Loss, err = strconv.ParseFloat(f[2], 64); err != nil || d.Loss < 0 || d.Loss > 1 {
		return Delay{}, fmt.Errorf("delay %q: loss must be in 0..1", s)
	}
	if d.Seed, err = strconv.ParseUint(f[3], 10, 64); err != nil {
		return Delay{}, fmt.Errorf("delay %q: %w", s, err)
	}
	return d, nil
}

// delayEnv carries the delay to the helper process.
const delayEnv = "UP_NAT_DELAY"

// tunName is the delay stage's TUN device in the wan namespace.
const tunName = "dly0"

// DelayerMain runs the delay stage and exits when this process was
// started as one (by StartDelay); otherwise it returns at once. Call it
// first in TestMain.
func DelayerMain() {
	s, ok := os.LookupEnv(delayEnv)
	if !ok {
		return
	}
	d, err := parseDelay(s)
	if err == nil {
		err = runDelayer(d)
	}
	fmt.Fprintln(os.Stderr, "delay stage:", err)
	os.Exit(1)
}

// runDelayer opens the TUN device and forwards every packet it reads back
// into it after the packet's delay, dropping d.Loss of them. The kernel
// routes what comes back out of the TUN device by the main table (the
// policy rule sends only packets from the public links into it). It runs
// until killed.
func runDelayer(d Delay) error {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(tunName)
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return fmt.Errorf("create %s: %w", tunName, err)
	}
	rng := rand.New(rand.NewPCG(d.Seed, 0x6e6574))
	var inFlight atomic.Int64
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", tunName, err)
		}
		if rng.Float64() < d.Loss || inFlight.Load() > 1<<16 {
			continue
		}
		wait := d.OneWay + time.Duration((2*rng.Float64()-1)*float64(d.Jitter))
		pkt := append([]byte(nil), buf[:n]...)
		inFlight.Add(1)
		time.AfterFunc(wait, func() {
			_, _ = unix.Write(fd, pkt)
			inFlight.Add(-1)
		})
	}
}

// StartDelay starts the delay stage: self (a binary whose main calls
// DelayerMain first) runs in the wan namespace, and every packet the wan
// router forwards from a public link goes through it.
func (n *Net) StartDelay(self string, d Delay) error {
	if n.delayer != nil {
		return errors.New("delay stage already running")
	}
	wan := n.ns[wanNS]
	c := exec.Command("ip", "netns", "exec", wan, self)
	c.Env = append(os.Environ(), delayEnv+"="+d.String())
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Start(); err != nil {
		return fmt.Errorf("start the delay stage: %w", err)
	}
	n.delayer = c
	deadline := time.Now().Add(10 * time.Second)
	for run("ip", "-n", wan, "link", "show", tunName) != nil {
		if time.Now().After(deadline) {
			n.StopDelay()
			return fmt.Errorf("the delay stage made no %s in 10 s", tunName)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's device: no event to await
	}
	steps := [][]string{
		{"ip", "netns", "exec", wan, "sh", "-c", "echo 0 > /proc/sys/net/ipv4/conf/" + tunName + "/rp_filter"},
		{"ip", "-n", wan, "link", "set", tunName, "up"},
		{"ip", "-n", wan, "route", "add", "default", "dev", tunName, "table", "100"},
	}
	for _, l := range n.wanLink {
		steps = append(steps, []string{"ip", "-n", wan, "rule", "add", "iif", l, "lookup", "100"})
	}
	if err := runAll(steps); err != nil {
		n.StopDelay()
		return fmt.Errorf("route the public segment through the delay stage: %w", err)
	}
	return nil
}

// StopDelay stops the delay stage; the public segment forwards directly
// again.
func (n *Net) StopDelay() {
	if n.delayer == nil {
		return
	}
	wan := n.ns[wanNS]
	for _, l := range n.wanLink {
		_ = run("ip", "-n", wan, "rule", "del", "iif", l, "lookup", "100")
	}
	_ = n.delayer.Process.Kill()
	_ = n.delayer.Wait()
	n.delayer = nil
}
