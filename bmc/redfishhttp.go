package bmc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxRetryAfter caps the wait a BMC may ask for in Retry-After: one that asks an hour (a BMC
// rebooting, a bug) must not hold the operation, whose own timeout is a few minutes.
const maxRetryAfter = time.Minute

// maxRedfishBody is the most of an answer rota reads (a Redfish resource is a few KiB).
const maxRedfishBody = 1 << 20

// redfishTransport is the RoundTripper under rota's Redfish client, gofish's APIClient, which
// prefixes its endpoint to every URI it follows and keeps no header of an answer it reports
// as an error. It makes up for both:
//   - a link on the endpoint's host written as an absolute URI ("@odata.id":
//     "https://10.0.0.5/redfish/v1/Systems/1", as some BMCs write them) is taken to its path,
//     in a JSON body and in Location, so that gofish (the login, the logout) and rota follow it.
//     One on another host is left as it is, for redfishReader.local to refuse;
//   - the Retry-After of a 429 or 503 answer is kept for the retry, and a request sent whose
//     answer was lost (it may have been done) is noted (annotate);
//   - gofish fixes one context for a client's life, at the login: each request also ends
//     when the context of the call that makes it does (within), so that cancelling an
//     operation ends the request a hung BMC holds, not the call timeout.
//
// It is made for one connection (httpClient), so what it keeps is that connection's.
type redfishTransport struct {
	base  http.RoundTripper
	host  string // the endpoint's host
	clock Clock

	mu         sync.Mutex
	retryAfter time.Duration   // the longest Retry-After not yet taken
	unanswered bool            // a request was sent, its answer lost, since the last annotate
	call       context.Context // the context of the call now making requests; nil: none
}

// within makes ctx end every request made until end is called (the call that makes them
// returns), as well as the request's own context.
func (t *redfishTransport) within(ctx context.Context) (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.call
	t.call = ctx
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.call = prev
	}
}

func (t *redfishTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	call := t.call
	t.mu.Unlock()
	release := func() {}
	ctx := req.Context()
	if call != nil {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		stop := context.AfterFunc(call, func() { cancel(context.Cause(call)) })
		release = func() { stop(); cancel(nil) }
	}
	var sent atomic.Bool // the request's headers were written: the BMC may have it
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }}))
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		release()
		t.lost(sent.Load())
		return nil, err
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), t.clock.Now()); ok {
			t.mu.Lock()
			t.retryAfter = max(t.retryAfter, d)
			t.mu.Unlock()
		}
	}
	if loc, ok := localLink(resp.Header.Get("Location"), t.host); ok {
		resp.Header.Set("Location", loc)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRedfishBody+1))
	if err != nil {
		resp.Body.Close()
		release()
		t.lost(true)
		return nil, err
	}
	if len(b) > maxRedfishBody {
		// Too long to be a resource: passed on as it came, whole, the request's context
		// kept until it is closed.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), resp.Body), closeThen{resp.Body, release}}
		return resp, nil
	}
	resp.Body.Close()
	release()
	if local, changed := localLinks(b, t.host); changed {
		b = local
		resp.Header.Del("Content-Length")
		resp.ContentLength = int64(len(b))
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// closeThen closes its Closer, then runs then.
type closeThen struct {
	io.Closer
	then func()
}

func (c closeThen) Close() error {
	err := c.Closer.Close()
	c.then()
	return err
}

// lost notes a request that failed without an answer, when it was sent.
func (t *redfishTransport) lost(sent bool) {
	if !sent {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unanswered = true
}

// annotate gives a transient failure what the transport saw since the last one taken: the
// longest wait a BMC answer asked for, and whether a request was sent whose answer was lost;
// and forgets them.
func (t *redfishTransport) annotate(err error) error {
	var te *transientError
	if t == nil || !errors.As(err, &te) {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	te.retryAfter = max(te.retryAfter, t.retryAfter)
	te.unanswered = te.unanswered || t.unanswered
	t.retryAfter, t.unanswered = 0, false
	return err
}

// parseRetryAfter reads a Retry-After header, delay-seconds or an HTTP-date (RFC 9110
// 10.2.3), capped at maxRetryAfter; false when there is none, it is not one of the two, or it
// asks no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if err != nil || n >= uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(n) * time.Second, n > 0
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := at.Sub(now)
	if d <= 0 {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// localLinks returns body with every JSON string that is an absolute URI of a Redfish resource
// on host (localLink) taken to its path. changed is false, and body returned as it is, when
// there is none, or body is not one JSON value.
func localLinks(body []byte, host string) (_ []byte, changed bool) {
	// Most answers hold no absolute URI: they are passed on without being decoded.
	if !bytes.Contains(body, []byte("://")) && !bytes.Contains(body, []byte(`:\/\/`)) {
		return body, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers written back as they came
	var doc any
	if dec.Decode(&doc) != nil {
		return body, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return body, false
	}
	doc, changed = localValue(doc, host)
	if !changed {
		return body, false
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body, false
	}
	return out, true
}

// localValue takes the links on host in v to their paths, in place where v is an object or an
// array.
func localValue(v any, host string) (any, bool) {
	changed := false
	switch x := v.(type) {
	case string:
		return localLink(x, host)
	case map[string]any:
		for k, e := range x {
			if n, ok := localValue(e, host); ok {
				x[k], changed = n, true
			}
		}
	case []any:
		for i, e := range x {
			if n, ok := localValue(e, host); ok {
				x[i], changed = n, true
			}
		}
	}
	return v, changed
}

// localLink returns the path (with query and fragment) of s when s is an absolute http or
// https URI of a Redfish resource (its path under /redfish) on host, whatever its port: the
// endpoint's BMC naming itself.
func localLink(s, host string) (string, bool) {
	if !strings.Contains(s, "://") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !sameHost(u.Hostname(), host) ||
		(u.Path != "/redfish" && !strings.HasPrefix(u.Path, "/redfish/")) {
		return "", false
	}
	u.Scheme, u.Host, u.User = "", "", nil
	return u.String(), true
}

// sameHost compares host names without case, and IP addresses as addresses.
func sameHost(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	return ia != nil && ia.Equal(ib)
}
