package webconfig

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
)

// TestConnectionsCounted: the gauges say how many connections a listener holds open and its
// bound, rising at each accept and falling once at each close (a second Close counts
// nothing), with the bound or without one; and no more than the bound are accepted.
func TestConnectionsCounted(t *testing.T) {
	for _, max := range []int{2, 0} {
		c := NewConnections("test")
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := LimitConnections(inner, max, c)
		defer l.Close()
		name := inner.Addr().String()
		open := func() float64 { return promtest.ToFloat64(c.open.WithLabelValues(name)) }
		if got := promtest.ToFloat64(c.max.WithLabelValues(name)); got != float64(max) {
			t.Errorf("max %d: http_connections_max %v", max, got)
		}
		accepted := make(chan net.Conn, 3)
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				accepted <- conn
			}
		}()
		for range 3 {
			conn, err := net.Dial("tcp", name)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
		}
		want := 3
		if max > 0 {
			want = max
		}
		var served []net.Conn
		for range want {
			select {
			case conn := <-accepted:
				served = append(served, conn)
			case <-time.After(10 * time.Second):
				t.Fatalf("max %d: %d of 3 connections accepted, want %d", max, len(served), want)
			}
		}
		if max > 0 {
			select {
			case <-accepted:
				t.Fatalf("max %d: a connection past the bound was accepted", max)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if got := open(); got != float64(want) {
			t.Errorf("max %d: %v open, want %d", max, got, want)
		}
		_ = served[0].Close()
		_ = served[0].Close() // already closed: counts nothing
		if max > 0 {
			// The one waiting is accepted now (at once: it may already be counted), so as many
			// are open as before.
			select {
			case conn := <-accepted:
				served = append(served, conn)
			case <-time.After(10 * time.Second):
				t.Fatalf("max %d: the connection waiting was not accepted once one closed", max)
			}
		} else {
			want--
		}
		if got := open(); got != float64(want) {
			t.Errorf("max %d: %v open after one closed (twice), want %d", max, got, want)
		}
		for _, conn := range served {
			_ = conn.Close()
		}
		if got := open(); got != 0 {
			t.Errorf("max %d: %v open after all closed", max, got)
		}
		if _, err := reg.Gather(); err != nil {
			t.Errorf("gathering: %v", err)
		}
	}
}
