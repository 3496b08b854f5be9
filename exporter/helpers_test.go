package exporter

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/procfs"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedClock makes every collector take 0 s, so golden files are stable.
func fixedClock() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// quietLog returns a logger that records entries (for "logs once" checks) and prints nothing.
func quietLog() (*logrus.Entry, *test.Hook) {
	l, hook := test.NewNullLogger()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l), hook
}

// fixtureDir is the procfs fixture folder testdata/dir.
func fixtureDir(dir string) string { return filepath.Join("testdata", dir) }

func fixtureFS(t testing.TB, dir string) procfs.FS {
	t.Helper()
	fs, err := procfs.NewFS(fixtureDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// gather scrapes c once through a registry and returns the text exposition.
func gather(t testing.TB, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// series scrapes c once and returns each sample as "name{l1="v1",...}" -> value.
func series(t testing.TB, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+`"`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			default:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// golden compares got with testdata/<name>.golden, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("exposition differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// updater adapts a Collector to prometheus.Collector for a test, without meta-metrics.
type updater struct {
	c   Collector
	err error
}

func (u *updater) Describe(chan<- *prometheus.Desc)    {}
func (u *updater) Collect(ch chan<- prometheus.Metric) { u.err = u.c.Update(ch) }
