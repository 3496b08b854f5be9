package app

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/exporter"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/internal/webconfig"
)

// TestDisableDefaults: --collector.disable-defaults turns off every collector the command line
// does not name, and leaves those it names as it says.
func TestDisableDefaults(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"cpu", "gpu", "memory"}},
		{[]string{"--no-collector.gpu"}, []string{"cpu", "memory"}},
		{[]string{"--collector.disable-defaults"}, nil},
		{[]string{"--collector.disable-defaults", "--collector.memory"}, []string{"memory"}},
		{[]string{"--collector.disable-defaults", "--collector.slurm", "--no-collector.memory", "--collector.cpu"}, []string{"cpu", "slurm"}},
	} {
		f, err := parse(tc.args, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for name, on := range f.collectors() {
			if on {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: collectors %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestFlagsTableListsEveryFlag: docs/exporter.md's flags table names every flag rota-exporter
// has (a --collector.<name> switch with its --no- form), and no flag it does not have.
func TestFlagsTableListsEveryFlag(t *testing.T) {
	app, _ := newApp(io.Discard, io.Discard)
	var have []string
	for _, fl := range app.Model().Flags {
		if !fl.Hidden {
			have = append(have, "--"+fl.Name)
		}
	}
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "exporter.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "## Flags\n")
	if !ok {
		t.Fatal("docs/exporter.md has no ## Flags section")
	}
	var listed []string
	inTable := false
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the table ended
			}
			continue
		}
		inTable = true
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range regexp.MustCompile("`(--[a-z0-9.-]+)`").FindAllStringSubmatch(first, -1) {
			listed = append(listed, m[1])
		}
	}
	for _, f := range have {
		if !slices.Contains(listed, f) {
			t.Errorf("flag %s is not in docs/exporter.md's flags table", f)
		}
	}
	for _, f := range listed {
		if name, ok := strings.CutPrefix(f, "--no-"); ok && slices.Contains(have, "--"+name) {
			continue
		}
		if !slices.Contains(have, f) {
			t.Errorf("docs/exporter.md lists %s, which rota-exporter does not have", f)
		}
	}
}

// stub is a collector that sends one gauge; with release, it first says it entered (entered
// holds one word: the first scrape's lands even before anyone waits, a later scrape's is
// dropped) and waits until release is closed.
type stub struct {
	desc    *prometheus.Desc
	entered chan struct{}
	release chan struct{}
}

func newStub(name string) *stub {
	return &stub{desc: prometheus.NewDesc("stub_"+name, "A stub.", nil, nil)}
}

func (s *stub) Update(ch chan<- prometheus.Metric) error {
	if s.release != nil {
		select {
		case s.entered <- struct{}{}:
		default: // a word already waits: a later scrape
		}
		<-s.release
	}
	ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, 1)
	return nil
}

func handler(t *testing.T, args []string, collectors map[string]exporter.Collector) http.Handler {
	t.Helper()
	f, err := parse(args, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := test.NewNullLogger()
	log := logrus.NewEntry(logger)
	h, err := newHandler(f, exporter.NewExporter(collectors, time.Now, log), webconfig.NewConnections("rota_exporter"), log)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(h http.Handler, target string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.String()
}

// TestCollectFilter: collect[] and exclude[] pick collectors per scrape, as node_exporter's do;
// the build info and the exporter's own series come with a filtered scrape; a collector that
// does not run is a 400 naming it.
func TestCollectFilter(t *testing.T) {
	h := handler(t, nil, map[string]exporter.Collector{"a": newStub("a"), "b": newStub("b")})
	for _, tc := range []struct {
		query      string
		code       int
		has, hasNo []string
	}{
		{"", 200, []string{"stub_a ", "stub_b ", "rota_exporter_build_info{", "go_goroutines "}, nil},
		{"?collect[]=a", 200, []string{"stub_a ", `collector="a"`, "rota_exporter_build_info{", "go_goroutines "}, []string{"stub_b", `collector="b"`}},
		{"?collect[]=a&collect[]=b", 200, []string{"stub_a ", "stub_b "}, nil},
		{"?exclude[]=a", 200, []string{"stub_b "}, []string{"stub_a"}},
		{"?collect[]=gpu", 400, []string{`collector "gpu" is not enabled`}, []string{"stub_"}},
		{"?collect[]=a&exclude[]=b", 400, []string{"collect[] and exclude[] together"}, nil},
	} {
		code, body := serve(h, "/metrics"+tc.query)
		if code != tc.code {
			t.Errorf("GET /metrics%s: %d, want %d:\n%s", tc.query, code, tc.code, body)
		}
		for _, s := range tc.has {
			if !strings.Contains(body, s) {
				t.Errorf("GET /metrics%s lacks %q", tc.query, s)
			}
		}
		for _, s := range tc.hasNo {
			if strings.Contains(body, s) {
				t.Errorf("GET /metrics%s has %q", tc.query, s)
			}
		}
	}
}

// TestProfilingOnlyWhenServed: the landing page links /debug/pprof/ only with
// --web.enable-pprof, and the profiles are served exactly then.
func TestProfilingOnlyWhenServed(t *testing.T) {
	for _, on := range []bool{false, true} {
		var args []string
		if on {
			args = []string{"--web.enable-pprof"}
		}
		h := handler(t, args, map[string]exporter.Collector{"a": newStub("a")})
		_, landing := serve(h, "/")
		if !strings.Contains(landing, `href="/metrics"`) {
			t.Errorf("pprof %v: the landing page does not link /metrics", on)
		}
		if got := strings.Contains(landing, "debug/pprof"); got != on {
			t.Errorf("pprof %v: the landing page links debug/pprof: %v", on, got)
		}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
			code, _ := serve(h, path)
			if want := map[bool]int{false: 404, true: 200}[on]; code != want {
				t.Errorf("pprof %v: GET %s: %d, want %d", on, path, code, want)
			}
		}
	}
}

// TestMaxRequestsCoversFilteredScrapes: --web.max-requests bounds whole and filtered scrapes
// together; one over the limit is a 503.
func TestMaxRequestsCoversFilteredScrapes(t *testing.T) {
	slow := newStub("slow")
	slow.entered, slow.release = make(chan struct{}, 1), make(chan struct{})
	h := handler(t, []string{"--web.max-requests=1"}, map[string]exporter.Collector{"slow": slow})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		serve(h, "/metrics?collect[]=slow")
	}()
	<-slow.entered // the first scrape holds the one slot
	if code, body := serve(h, "/metrics"); code != http.StatusServiceUnavailable {
		t.Errorf("second scrape: %d, want 503:\n%s", code, body)
	}
	close(slow.release)
	wg.Wait()
	if code, _ := serve(h, "/metrics"); code != http.StatusOK {
		t.Errorf("after the first ended: %d, want 200", code)
	}
}

// TestBodyNeverHoldsAScrapeSlot: a GET /metrics whose chunked body never ends is refused at
// once and its connection closed within the read timeout, and the scrapes go on. It held its
// --web.max-requests slot while net/http waited on the body before writing the answer, for as
// long as the client kept the connection (40 connections, the default, made every scrape a 503).
func TestBodyNeverHoldsAScrapeSlot(t *testing.T) {
	f, err := parse([]string{"--web.max-requests=1"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(f, handler(t, []string{"--web.max-requests=1"}, map[string]exporter.Collector{"a": newStub("a")}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The answer comes at once, the collectors' work (a slot) never started.
	if err := conn.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a scrape with an endless body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a scrape with a body: %d, want 400", resp.StatusCode)
	}

	scrape, err := http.Get("http://" + l.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape.Body.Close()
	if scrape.StatusCode != http.StatusOK {
		t.Errorf("a scrape beside the endless body: %d, want 200", scrape.StatusCode)
	}

	start := time.Now()
	if err := conn.SetReadDeadline(start.Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the endless body's connection: %v after %s, want closed by the server", err, time.Since(start).Round(time.Second))
	}
}

// TestHeadersBounded: a request whose headers pass 64 KiB is refused with 431 before a
// handler runs; net/http's default let each connection make the exporter hold a megabyte.
func TestHeadersBounded(t *testing.T) {
	f, err := parse(nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler(t, nil, map[string]exporter.Collector{"a": newStub("a")}))
	srv.Config = newServer(f, srv.Config.Handler)
	srv.Start()
	defer srv.Close()
	testutil.CheckHeaderLimit(t, http.DefaultClient, srv.URL+"/metrics", "")
}
