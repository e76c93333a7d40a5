// Command net tries to reach the network: "dial ADDR" calls net.Dial
// (tcp); "accept FD" calls WASI's sock_accept on that descriptor
// directly. A failure is printed on stderr and exits 1; success prints
// "connected" or "accepted".
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "net:", err)
		os.Exit(1)
	}
}

// errnoNames names the WASI errno values sock_accept may return.
var errnoNames = map[int32]string{8: "EBADF", 28: "EINVAL", 52: "ENOSYS", 57: "ENOTSOCK", 58: "ENOTSUP"}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "dial":
		c, err := net.Dial("tcp", args[1])
		if err != nil {
			return err
		}
		c.Close()
		fmt.Println("connected")
		return nil
	case len(args) == 2 && args[0] == "accept":
		fd, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		if errno := accept(int32(fd)); errno != 0 {
			return fmt.Errorf("sock_accept(%d): errno %d (%s)", fd, errno, errnoNames[errno])
		}
		fmt.Println("accepted")
		return nil
	}
	return fmt.Errorf("usage: dial ADDR | accept FD, got %q", args)
}
