package nat_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/up-pool/up/testnet/nat"
)

// helperEnv makes the test binary one of the small programs the tests run
// inside namespaces: "echo - PORT", "dial ADDR LOCALPORT ROUNDS" or
// "probe DATADIR BOOTFILE TARGETSFILE".
const helperEnv = "UP_NAT_HELPER"

func TestMain(m *testing.M) {
	nat.DelayerMain()
	if os.Getenv(helperEnv) != "" {
		if err := helperMain(os.Args[len(os.Args)-3:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if upPath != "" {
		_ = os.RemoveAll(filepath.Dir(upPath))
	}
	os.Exit(code)
}

// helperMain runs the helper named by the environment with its last
// three arguments.
func helperMain(args []string) error {
	switch os.Getenv(helperEnv) {
	case "echo":
		return echoServer(args[2])
	case "dial":
		return dialRounds(args[0], args[1], args[2])
	case "probe":
		return probeMain(args[0], args[1], args[2])
	}
	return fmt.Errorf("unknown helper %q", os.Getenv(helperEnv))
}

// echoServer listens on port; to each connection it first writes the
// remote address it sees and a newline, then echoes.
func echoServer(port string) error {
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			fmt.Fprintln(c, c.RemoteAddr().String())
			_, _ = io.Copy(c, c)
		}()
	}
}

// dialReport is what the dial helper prints.
type dialReport struct {
	Seen string    `json:"seen"`
	RTTs []float64 `json:"rtts_ms"`
}

// dialRounds connects to addr from localPort, reads the address the
// server saw, then times rounds one-byte round trips and prints a
// dialReport.
func dialRounds(addr, localPort, rounds string) error {
	var n int
	if _, err := fmt.Sscan(rounds, &n); err != nil {
		return err
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	if localPort != "0" {
		la, err := net.ResolveTCPAddr("tcp", ":"+localPort)
		if err != nil {
			return err
		}
		d.LocalAddr = la
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	rep := dialReport{Seen: line[:len(line)-1]}
	b := []byte{1}
	for range n {
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		rep.RTTs = append(rep.RTTs, float64(time.Since(start).Microseconds())/1000)
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}
