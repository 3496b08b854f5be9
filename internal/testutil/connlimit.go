package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// CheckConnectionLimit checks a listener that serves at most max connections at once (both
// listeners' --web.max-connections): it opens max connections with dial, each answered 200 to
// a GET of path and then kept open, and one more, whose GET is not answered while they stay
// open, and is once one of them closes. dial returns a connection not yet spoken on: a
// tls.Client over TCP handshakes at its first write, so the one more's handshake waits with it.
//
// "Not answered" is seen by waiting half a second: a listener without the limit answers within
// that on an idle machine, and one with it cannot answer at all, so the check cannot fail
// wrongly on a slow machine (there, at worst, it could miss a listener without the limit).
func CheckConnectionLimit(t testing.TB, dial func() (net.Conn, error), path string, max int) {
	t.Helper()
	held := make([]net.Conn, max)
	for i := range held {
		c, err := dial()
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, max, err)
		}
		defer c.Close()
		// A connection the caller left open (a client's idle one) could hold a slot: bound the
		// wait so that shows as a failure, not a hung test.
		if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := get(c, path); err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, max, err)
		}
		if err := c.SetDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		held[i] = c
	}
	extra, err := dial()
	if err != nil {
		t.Fatalf("connection %d: %v", max+1, err)
	}
	defer extra.Close()
	served := make(chan error, 1)
	go func() { served <- get(extra, path) }()
	select {
	case err := <-served:
		t.Fatalf("connection %d was answered (error: %v) while %d were open, want it to wait until one closes", max+1, err, max)
	case <-time.After(500 * time.Millisecond):
	}
	held[0].Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("connection %d, once one of the others closed: %v", max+1, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("connection %d not answered 30 s after one of the others closed", max+1)
	}
}

// get sends one GET of path on c and reads the whole answer, which must be a 200; c stays open.
func get(c net.Conn, path string) error {
	req, err := http.NewRequest(http.MethodGet, "http://rota"+path, nil)
	if err != nil {
		return err
	}
	if err := req.Write(c); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}
