package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/jobclass"
	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/internal/slurmcli/slurmclitest"
	"github.com/rotahq/rota/internal/slurmlab"
	"github.com/rotahq/rota/internal/testutil"
)

func fixtureView(t *testing.T, name string) func(context.Context) (slurmcli.View, error) {
	t.Helper()
	// The outputs the Slurm adapter's tests recorded from a real cluster, kept with the parser
	// the collector and the adapter share.
	nodes, err := slurmcli.ParseNodes(slurmclitest.ReadRecorded(t, name+".sinfo"))
	if err != nil {
		t.Fatal(err)
	}
	queue, err := slurmcli.ParseJobs(slurmclitest.ReadRecorded(t, name+".squeue"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return func(context.Context) (slurmcli.View, error) { return slurmcli.View{Nodes: nodes, Jobs: queue}, nil }
}

// TestSlurmCollectorGolden: the exposition for recorded queues (work pending on held nodes;
// jobs running) matches testdata/slurm-*.golden.
func TestSlurmCollectorGolden(t *testing.T) {
	for _, name := range []string{"pending", "running", "draining", "powered-down"} {
		t.Run(name, func(t *testing.T) {
			u := &updater{c: NewSlurmCollector(fixtureView(t, name), jobclass.Defaults(), time.Minute)}
			got := gather(t, u)
			if u.err != nil {
				t.Fatal(u.err)
			}
			golden(t, "slurm-"+name, got)
		})
	}
}

func TestSlurmCollectorSeries(t *testing.T) {
	u := &updater{c: NewSlurmCollector(fixtureView(t, "pending"), jobclass.Defaults(), time.Minute)}
	got := series(t, u)
	for k, want := range map[string]float64{
		// Eight batch jobs wait (one more is held and not counted): 3+2+1 of one node (one
		// --exclusive), one of two.
		`rota_slurm_pending_jobs{class="light",partition="batch"}`: 8,
		`rota_slurm_pending_cpus{class="light",partition="batch"}`: 3*1 + 2*2 + 1*2 + 1*1 + 1,
		// two nodes of two gpus, and one of two gpus with two cpus each (--cpus-per-gpu)
		`rota_slurm_pending_gpus{class="heavy",partition="gpu"}`:   2*2 + 2,
		`rota_slurm_pending_cpus{class="heavy",partition="gpu"}`:   2*3 + 4,
		`rota_slurm_pending_jobs{class="medium",partition="gpu"}`:  2,
		`rota_slurm_pending_jobs{class="heavy",partition="batch"}`: 0,
		`rota_slurm_jobs{partition="batch",state="pending"}`:       9,
		`rota_slurm_nodes{state="drained"}`:                        4,
		`rota_slurm_nodes{state="idle"}`:                           0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
}

// TestSlurmCollectorFailure: a failed read fails the scrape and sends nothing.
func TestSlurmCollectorFailure(t *testing.T) {
	boom := errors.New("slurm_load_jobs error: Unable to contact slurm controller")
	u := &updater{c: NewSlurmCollector(func(context.Context) (slurmcli.View, error) { return slurmcli.View{}, boom },
		jobclass.Defaults(), time.Minute)}
	if got := gather(t, u); got != "" || !errors.Is(u.err, boom) {
		t.Fatalf("sent %q, error %v", got, u.err)
	}
}

// TestSlurmCollectorGarbledPartition: a partition name that is not UTF-8 (a slurm.conf in
// Latin-1, garbled output) is served with U+FFFD in its place, as the GPU collector does with
// NVML's strings: Prometheus panics on such a label value, and the Exporter runs each collector
// in a goroutine of its own, so the first scrape ended the exporter, CPU and memory with it.
// Names that differ only in such bytes count as one.
func TestSlurmCollectorGarbledPartition(t *testing.T) {
	job := []byte("\x1fbatch\x1fPENDING")
	for _, tc := range []struct {
		name   string
		sinfo  func([]byte) []byte
		squeue func([]byte) []byte
		series string
		want   float64
	}{
		{"a job's partition", nil,
			func(b []byte) []byte { return bytes.Replace(b, job, []byte("\x1fb\xe9tch\x1fPENDING"), 1) },
			"rota_slurm_jobs{partition=\"b\uFFFDtch\",state=\"pending\"}", 1},
		{"two jobs' partitions garbled apart", nil,
			func(b []byte) []byte {
				b = bytes.Replace(b, job, []byte("\x1fb\xe9tch\x1fPENDING"), 1)
				return bytes.Replace(b, job, []byte("\x1fb\xeatch\x1fPENDING"), 1)
			},
			"rota_slurm_pending_jobs{class=\"light\",partition=\"b\uFFFDtch\"}", 2},
		{"a node's partition",
			func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\x1fgpu\x1f"), []byte("\x1fg\xffpu\x1f")) }, nil,
			"rota_slurm_pending_jobs{class=\"heavy\",partition=\"g\uFFFDpu\"}", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sinfo, squeue := slurmclitest.ReadRecorded(t, "pending.sinfo"), slurmclitest.ReadRecorded(t, "pending.squeue")
			if tc.sinfo != nil {
				sinfo = tc.sinfo(sinfo)
			}
			if tc.squeue != nil {
				squeue = tc.squeue(squeue)
			}
			nodes, err := slurmcli.ParseNodes(sinfo)
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := slurmcli.ParseJobs(squeue, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			read := func(context.Context) (slurmcli.View, error) { return slurmcli.View{Nodes: nodes, Jobs: jobs}, nil }
			u := &updater{c: NewSlurmCollector(read, jobclass.Defaults(), time.Minute)}
			got := series(t, u)
			if u.err != nil {
				t.Fatal(u.err)
			}
			if v, ok := got[tc.series]; !ok || v != tc.want {
				t.Errorf("%s = %v (present %v), want %v", tc.series, v, ok, tc.want)
			}
		})
	}
}

func TestLoadClasses(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		want       []string
		err        bool
	}{
		{"default", "", []string{"light", "medium", "heavy"}, false},
		{"the example config", "../deploy/rota/rota.yml", []string{"light", "medium", "heavy"}, false},
		{"missing file", "testdata/no-such-file.yml", nil, true},
		{"misspelt class field", writeTemp(t, "classes:\n  - name: light\n    max_gpu: 0\n"), nil, true},
		{"no classes section", writeTemp(t, "jobs: {adapter: slurm}\n"), []string{"light", "medium", "heavy"}, false},
		{"an empty list", writeTemp(t, "classes: []\n"), nil, true},
		{"a key with nothing", writeTemp(t, "classes:\npools: []\n"), nil, true},
		{"own classes", writeTemp(t, "pools: []\nclasses:\n  - name: small\n    max_cpus: 4\n  - name: big\n"), []string{"small", "big"}, false},
		// rota reads aliases anywhere in the file: a class may name the partitions a pool's
		// profile anchored
		{"an alias of an anchor outside the classes", writeTemp(t, "pools:\n  - profile: {partitions: &gpu [gpu, gpu-long]}\n"+
			"classes:\n  - {name: gpu, partitions: *gpu}\n  - name: rest\n"), []string{"gpu", "rest"}, false},
		{"a misspelt field beside the alias", writeTemp(t, "pools:\n  - profile: {partitions: &gpu [gpu]}\n"+
			"classes:\n  - {name: gpu, partitions: *gpu, max_gpu: 1}\n  - name: rest\n"), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadClasses(tc.path)
			if (err != nil) != tc.err {
				t.Fatalf("error %v", err)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.want) {
				t.Fatalf("classes %v, want %v", names, tc.want)
			}
		})
	}
	// The example config's light class names the cpu partition.
	classes, err := LoadClasses("../deploy/rota/rota.yml")
	if err != nil {
		t.Fatal(err)
	}
	if got := jobclass.Classify(classes, jobclass.Shape{Partition: "cpu", CPUs: 64}); got != "light" {
		t.Errorf("a cpu-partition job is %q, want light", got)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rota.yml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSlurmCollectorRealPrometheus: on a real cluster with work waiting, a real Prometheus
// scrapes the collector and PromQL reads the queue back.
func TestSlurmCollectorRealPrometheus(t *testing.T) {
	promBin := testutil.Tool(t, "prometheus")
	c := slurmlab.Start(t, slurmlab.Options{Nodes: []slurmlab.Node{
		{Name: "cpu1", Partition: "cpu", CPUs: 2, MemoryMB: 1000},
		{Name: "gpu1", Partition: "gpu", CPUs: 2, MemoryMB: 1000, GPUs: 2},
	}})
	// Hold the servers (as if powered off) so the work waits.
	c.Command("scontrol", "update", "nodename=cpu1,gpu1", "state=drain", "reason=rota: powered off")
	for _, args := range [][]string{
		{"--partition=cpu", "--cpus-per-task=2"},
		{"--partition=cpu", "--cpus-per-task=2"},
		{"--partition=gpu", "--gres=gpu:2"},
	} {
		c.Submit(append(args, "--wrap=sleep 300")...)
	}

	log, _ := quietLog()
	col, err := NewSlurmCollectorFromConfig(SlurmConfig{Conf: c.Conf, BinDir: c.BinDir, Timeout: 10 * time.Second}, log)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExporter(map[string]Collector{CollectorSlurm: col}, time.Now, log))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })

	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: head\n    static_configs:\n      - targets: [%q]\n", l.Addr().String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--web.listen-address="+promAddr, "--storage.tsdb.path="+filepath.Join(dir, "data"))
	testutil.WaitHTTP(t, "http://"+promAddr+"/-/ready", 60*time.Second)
	client, err := api.NewClient(api.Config{Address: "http://" + promAddr})
	if err != nil {
		t.Fatal(err)
	}
	prom := v1.NewAPI(client)
	for query, want := range map[string]float64{
		`rota_slurm_pending_jobs{partition="cpu",class="light"}`:                            2,
		`rota_slurm_pending_cpus{partition="cpu",class="light"}`:                            4,
		`rota_slurm_pending_gpus{partition="gpu",class="heavy"}`:                            2,
		`sum(rota_slurm_jobs{state="pending"})`:                                             3,
		`rota_slurm_nodes{state="drained"}`:                                                 2,
		`rota_exporter_collector_success{collector="slurm"}`:                                1,
		`sum(rota_slurm_pending_jobs) - sum(rota_slurm_pending_jobs{class=~"light|heavy"})`: 0,
	} {
		testutil.Eventually(t, 60*time.Second, query, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, _, _, err := prom.Query(ctx, query, time.Now())
			if err != nil {
				return err
			}
			vec, ok := res.(model.Vector)
			if !ok || len(vec) != 1 || float64(vec[0].Value) != want {
				return fmt.Errorf("%v, want %v", res, want)
			}
			return nil
		})
	}
}

// TestSlurmCollectorDeadline: the whole read runs under the collector's deadline, and a read
// that outlasts it fails the scrape in time.
func TestSlurmCollectorDeadline(t *testing.T) {
	const timeout = 200 * time.Millisecond
	read := func(ctx context.Context) (slurmcli.View, error) {
		if _, ok := ctx.Deadline(); !ok {
			return slurmcli.View{}, errors.New("read of slurm without a deadline")
		}
		<-ctx.Done()
		return slurmcli.View{}, ctx.Err()
	}
	u := &updater{c: NewSlurmCollector(read, jobclass.Defaults(), timeout)}
	start := time.Now()
	got := gather(t, u)
	if took := time.Since(start); !errors.Is(u.err, context.DeadlineExceeded) || got != "" || took > timeout+time.Second {
		t.Fatalf("after %s: error %v, sent %q; want a deadline error and nothing, within %s", took, u.err, got, timeout)
	}
}

// TestSlurmCommandsShareOneDeadline: sinfo and squeue together get the timeout, not each: two
// commands of 0.6 s fail the scrape under a 1 s timeout (with a timeout per command the scrape
// could take twice the timeout, past Prometheus's scrape timeout, which drops the whole
// scrape) and pass under 3 s.
func TestSlurmCommandsShareOneDeadline(t *testing.T) {
	bin, recorded := t.TempDir(), slurmclitest.RecordedDir(t)
	for _, cmd := range []string{"sinfo", "squeue"} {
		script := fmt.Sprintf("#!/bin/sh\nsleep 0.6\nexec cat %s\n", filepath.Join(recorded, "pending."+cmd))
		if err := os.WriteFile(filepath.Join(bin, cmd), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		wantErr error
	}{
		{"both within the timeout", 3 * time.Second, nil},
		{"each within the timeout, not both", time.Second, slurmcli.ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := quietLog()
			c, err := NewSlurmCollectorFromConfig(SlurmConfig{BinDir: bin, Timeout: tc.timeout}, log)
			if err != nil {
				t.Fatal(err)
			}
			u := &updater{c: c}
			start := time.Now()
			got := gather(t, u)
			took := time.Since(start)
			if !errors.Is(u.err, tc.wantErr) || (tc.wantErr == nil) != (got != "") {
				t.Fatalf("after %s: error %v, sent %d bytes; want %v", took, u.err, len(got), tc.wantErr)
			}
			// The deadline, then at most slurmcli's WaitDelay for a killed command's pipes.
			if took > tc.timeout+1500*time.Millisecond {
				t.Errorf("the scrape took %s with a %s timeout", took, tc.timeout)
			}
		})
	}
}
