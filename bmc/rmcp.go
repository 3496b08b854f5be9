package bmc

import (
	"bytes"
	"context"
	"net"
	"time"
)

// rmcpPresencePing is an ASF presence ping in an RMCP header (DSP0136): version 6, sequence
// 0xff (no ACK), class ASF; IANA 4542 (ASF), type 0x80 (ping), tag 1.
var rmcpPresencePing = [...]byte{0x06, 0x00, 0xff, 0x06, 0x00, 0x00, 0x11, 0xbe, 0x80, 0x01, 0x00, 0x00}

// RMCPPing sends an ASF presence ping to an IPMI BMC (UDP addr) and reports whether a pong came
// back within two seconds (or before ctx ends).
func RMCPPing(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	ping := rmcpPresencePing
	if _, err := c.Write(ping[:]); err != nil {
		return false
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return false
	}
	return isPresencePong(buf[:n])
}

// isPresencePong checks an RMCP/ASF answer for the presence pong message type (0x40).
func isPresencePong(b []byte) bool {
	return len(b) >= 9 && b[0] == 0x06 && b[3] == 0x06 && bytes.Equal(b[4:8], []byte{0x00, 0x00, 0x11, 0xbe}) && b[8] == 0x40
}
