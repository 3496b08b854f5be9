package testutil

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy on loopback that a test can cut, as a network partition would: Cut
// closes every connection through it and leaves new ones open but silent (nothing forwarded,
// as if the packets were dropped); Restore closes those and forwards new ones again.
type Proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

// StartProxy forwards a loopback port to target until cleanup.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() {
		_ = l.Close()
		p.closeAll()
	})
	return p
}

// Addr is host:port of the proxy.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Cut drops every connection and holds new ones silent until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

// Restore forwards new connections again; the ones held silent are closed, so their clients
// connect anew.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.closeAll()
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[c] = true
	return !p.cut
}

func (p *Proxy) accept() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			continue // silent: held open, nothing forwarded
		}
		go p.forward(in)
	}
}

func (p *Proxy) forward(in net.Conn) {
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	if !p.track(out) {
		_ = in.Close()
		_ = out.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
	}
	go pipe(out, in)
	go pipe(in, out)
	wg.Wait()
}
