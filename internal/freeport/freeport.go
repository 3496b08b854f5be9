// Package freeport picks loopback ports for the servers that tests and the lab start.
//
// A port the kernel hands out for "127.0.0.1:0" comes from the ephemeral range, the same range
// outgoing connections take their local ports from: between the moment a port is chosen and
// the moment the server binds it, any process's outgoing connection may take it, and the
// server then fails with "address already in use" (seen in the end-to-end tests on a busy
// machine). So ports are picked at random below the ephemeral range, where no outgoing
// connection lands, and never twice in one process.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the smallest port picked: clear of the well-known and registered services most
// hosts run (below 10000, Prometheus' own 9090 and the exporters' 9100-9999 among them).
const lowest = 10000

// given holds the ports this process handed out. It is process-wide on purpose: ports are a
// resource of the whole process (every test of a package binary shares one network stack).
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Pick returns a loopback port, free for network ("tcp" or "udp") when asked, below the
// ephemeral range and not handed out before by this process.
func Pick(network string) (int, error) {
	if network != "tcp" && network != "udp" {
		return 0, fmt.Errorf("freeport: network %q is not tcp or udp", network)
	}
	high := ephemeralLow()
	if high-lowest < 1000 {
		return kernelPort(network) // no room below the range: the kernel's choice
	}
	given.Lock()
	defer given.Unlock()
	for range 200 {
		p := lowest + rand.IntN(high-lowest)
		if given.ports[p] || !free(network, p) {
			continue
		}
		given.ports[p] = true
		return p, nil
	}
	return 0, errors.New("freeport: no free port found in 200 tries")
}

// free reports whether port can be bound on 127.0.0.1 for network now.
func free(network string, port int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if network == "udp" {
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		return c.Close() == nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	return l.Close() == nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default when it
// cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				return v
			}
		}
	}
	return 32768
}

func kernelPort(network string) (int, error) {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
