package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPickIsBelowTheEphemeralRangeAndNeverRepeats(t *testing.T) {
	high := ephemeralLow()
	seen := map[int]bool{}
	for _, network := range []string{"tcp", "udp", "tcp", "udp"} {
		for range 50 {
			p, err := Pick(network)
			if err != nil {
				t.Fatal(err)
			}
			if high-lowest >= 1000 && (p < lowest || p >= high) {
				t.Fatalf("port %d outside [%d, %d)", p, lowest, high)
			}
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
}

func TestPickSkipsPortsInUse(t *testing.T) {
	p, err := Pick("tcp")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("picked port %d cannot be bound: %v", p, err)
	}
	defer l.Close()
	if free("tcp", p) {
		t.Fatalf("port %d reported free while bound", p)
	}
	if _, err := Pick("sctp"); err == nil {
		t.Fatal("an unknown network was accepted")
	}
}
