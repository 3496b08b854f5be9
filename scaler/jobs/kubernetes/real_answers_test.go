package kubernetes_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/jobs/kubernetes"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// spoiler is a proxy in front of the real API server that spoils its answers as told: the
// adapter reads through it, and it records every request that would change something.
type spoiler struct {
	srv *httptest.Server

	mu     sync.Mutex
	mode   string
	writes []string
}

// The ways an answer is spoiled.
const (
	passThrough = ""
	truncate    = "truncate"     // half the body
	badQuantity = "bad-quantity" // a pod's request "1" becomes "one"
	wrongKind   = "wrong-kind"   // a list says it is something else
	noItems     = "no-items"     // a list without its items
	gone        = "gone"         // the second page of a list has expired (410)
	serverError = "server-error" // 500 on every list of pods
)

func newSpoiler(t *testing.T, c *kubelab.Cluster) *spoiler {
	t.Helper()
	target, err := url.Parse(c.Conf.URL())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(c.Conf.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	s := &spoiler{}
	proxy := &httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:      &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		ModifyResponse: s.spoil,
	}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		mode := s.mode
		if r.Method != http.MethodGet {
			s.writes = append(s.writes, r.Method+" "+r.URL.Path)
		}
		s.mu.Unlock()
		status := func(code int, reason, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d,"message":%q}`, reason, code, msg)
		}
		switch {
		case mode == gone && r.URL.Query().Get("continue") != "":
			status(http.StatusGone, "Expired", "continue token expired")
			return
		case mode == serverError && strings.HasSuffix(r.URL.Path, "/pods"):
			status(http.StatusInternalServerError, "InternalError", "etcd is sad")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *spoiler) set(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = mode
}

func (s *spoiler) written() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

func (s *spoiler) spoil(resp *http.Response) error {
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	if mode == passThrough || resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	switch mode {
	case truncate:
		body = body[:len(body)/2]
	case badQuantity:
		body = bytes.ReplaceAll(body, []byte(`"cpu":"1"`), []byte(`"cpu":"one"`))
	case wrongKind:
		body = bytes.Replace(body, []byte(`List","apiVersion"`), []byte(`","apiVersion"`), 1)
	case noItems:
		body = bytes.Replace(body, []byte(`"items":`), []byte(`"itemz":`), 1)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// testBadAnswers: every spoiled answer fails the read with an error naming the trouble (the
// pod whose request does not parse by name), a spoiled Node read fails a drain before it sends
// anything, and rota, reading through the spoiler, drains and powers off nothing although every
// server is idle, until the answers are whole again.
func testBadAnswers(t *testing.T, e *env) {
	ctx := context.Background()
	for _, n := range []string{"cpu01", "cpu02", "gpu01", "gpu02"} {
		e.node(t, kubelab.NodeSpec{Name: n, CPUs: 32}, true)
	}
	e.create(t, e.pod("web", 1, 0))
	e.kubelet(t, 1, time.Minute)
	e.create(t, e.pod("waits", 1, 1)) // no GPU anywhere: unschedulable
	e.create(t, e.pod("waits-too", 1, 1))
	e.waitDemand(t, 2)
	sp := newSpoiler(t, e.c)
	token := e.c.Token(t, "rota", "rota")
	cfg := quickOff(t, fleetConfig(t, e.c.Kubeconfig(t, token)))
	cfg.Jobs.Kubernetes.Kubeconfig = sp.kubeconfig(t, token)
	rc, err := kubernetes.RESTConfig(cfg.Jobs.Kubernetes, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	client, err := k8s.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	logger, _ := logtest.NewNullLogger()
	// One object a page, so that every list has a second page to lose.
	m := kubernetes.New(kubernetes.Options{Client: client, Classify: cfg.Classify, Clock: clock.Real{}, PageSize: 1, Log: logger.WithField("component", "jobs")})
	if _, err := m.Nodes(ctx); err != nil {
		t.Fatalf("through the proxy, unspoiled: %v", err)
	}
	for _, tc := range []struct {
		mode string
		want string
	}{
		{truncate, "unexpected kubernetes api answer"},
		{badQuantity, "pod " + e.ns + "/w"}, // web or waits, whichever is listed first
		{wrongKind, `asked for a NodeList, got kind "Node"`},
		{noItems, "NodeList without items"},
		{gone, "continue token expired"},
		{serverError, "etcd is sad"},
	} {
		sp.set(tc.mode)
		_, nodesErr := m.Nodes(ctx)
		_, demandErr := m.Demand(ctx)
		for what, err := range map[string]error{"Nodes": nodesErr, "Demand": demandErr} {
			if tc.mode == wrongKind || tc.mode == noItems {
				if what == "Demand" {
					continue // its spoiled list is the first of pods, not of Nodes
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, %s: %v, want an error with %q", tc.mode, what, err, tc.want)
			}
		}
	}
	sp.set(truncate)
	if err := m.Drain(ctx, "cpu01", "idle"); !errors.Is(err, kubeview.ErrBadAnswer) {
		t.Errorf("drain on a spoiled Node read: %v", err)
	}
	if w := sp.written(); len(w) > 0 {
		t.Fatalf("requests that change something went out on spoiled answers: %v", w)
	}

	// rota itself, through the spoiler: every server is idle and on.
	sp.set(badQuantity)
	r := startRota(t, cfg, e.manager(t, cfg), map[string]bmc.State{"cpu01": bmc.StateOn, "cpu02": bmc.StateOn, "gpu01": bmc.StateOn, "gpu02": bmc.StateOn})
	testutil.Eventually(t, time.Minute, "explain names the pod", func() error {
		x, err := r.loop.Explain(ctx, "cpu02")
		if err != nil {
			return err
		}
		if !strings.Contains(x.JobsError, "pod "+e.ns+"/w") || !strings.Contains(x.JobsError, "quantities must match") {
			return errors.New("explain says " + x.JobsError)
		}
		return nil
	})
	time.Sleep(blind)
	if sent, w := r.sent(), sp.written(); len(sent) > 0 || len(w) > 0 {
		t.Fatalf("on spoiled answers rota sent %v and wrote %v", sent, w)
	}
	for _, n := range []string{"cpu02", "gpu01", "gpu02"} {
		if node := e.getNode(t, n); node.Spec.Unschedulable {
			t.Errorf("%s cordoned on spoiled answers", n)
		}
	}
	sp.set(passThrough)
	r.waitScaleDown(t)
}

// agentDaemonSet creates the DaemonSet "agent" (a pod of 1 CPU per node) whose pods the tests
// write themselves, owned by it: no DaemonSet controller runs here.
func (e *env) agentDaemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{"app": "agent"}
	ds, err := e.admin.AppsV1().DaemonSets(e.ns).Create(context.Background(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: e.ns},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(1, 0)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// ownedPods creates, bound to node, a pod of a DaemonSet, one of a Job and a static pod's
// mirror, each owned as its controller would own it (no DaemonSet controller runs here). The
// Job is not there: the Job controller, which runs, would start a pod of its own for it.
func (e *env) ownedPods(t *testing.T, node string) {
	t.Helper()
	ctx := context.Background()
	ds := e.agentDaemonSet(t)
	never := corev1.RestartPolicyNever
	jobSpec := podSpec(2, 0)
	jobSpec.RestartPolicy = never
	n := e.getNode(t, node)
	for _, p := range []struct {
		name  string
		owner metav1.OwnerReference
		spec  corev1.PodSpec
		notes map[string]string
	}{
		{"agent-x1", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr(true)}, podSpec(1, 0), nil},
		{"batch-x1", metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "batch", UID: "5f0c7e52-6a44-4b1e-9d3a-0000000000b1", Controller: ptr(true)}, jobSpec, nil},
		{"static-" + node, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID, Controller: ptr(true)}, podSpec(1, 0),
			map[string]string{"kubernetes.io/config.mirror": "0123456789abcdef", "kubernetes.io/config.source": "file"}},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: e.ns, OwnerReferences: []metav1.OwnerReference{p.owner}, Annotations: p.notes}, Spec: p.spec}
		pod.Spec.NodeName = node
		if _, err := e.admin.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// kubeconfig writes a kubeconfig for the spoiler (its own certificate the CA) and a token.
func (s *spoiler) kubeconfig(t *testing.T, token string) string {
	t.Helper()
	dir := t.TempDir()
	ca := filepath.Join(dir, "spoiler.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spoiled.kubeconfig")
	if err := kubelab.WriteKubeconfig(path, s.srv.URL, ca, token); err != nil {
		t.Fatal(err)
	}
	return path
}

// recordFixtures (-record) writes what the real API server answers for a varied cluster into
// testdata/: the parser's fixtures, read by TestRecordedAnswers and the fuzz targets' seeds.
func recordFixtures(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 32, Memory: "128Gi", Labels: map[string]string{"zone": "a"}}, true)
	e.node(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 32, Memory: "128Gi", Cordoned: true}, true) // a person's cordon
	e.offNode(t, kubelab.NodeSpec{Name: "gpu01", CPUs: 96, Memory: "1Ti", GPUs: 8, Taints: gpuTaint(), Labels: map[string]string{"accelerator": "h100"}})
	e.offNode(t, kubelab.NodeSpec{Name: "gpu02", CPUs: 96, Memory: "1Ti", GPUs: 8, Taints: gpuTaint(), Labels: map[string]string{"accelerator": "a100"}})
	e.deployment(t, "web", 2, nil, podSpec(1, 0))
	e.deployment(t, "keep", 1, map[string]string{kubeview.KarpenterDoNotDisrupt: "true"}, podSpec(2, 0))
	e.create(t, e.pod("bare", 1, 0))
	e.ownedPods(t, "cpu01")
	e.kubelet(t, 7, time.Minute)
	sidecar := e.pod("sidecar", 1, 0)
	always := corev1.ContainerRestartPolicyAlways
	sidecar.Spec.InitContainers = []corev1.Container{
		{Name: "proxy", Image: "registry.example.internal/proxy:1", RestartPolicy: &always, Resources: sidecar.Spec.Containers[0].Resources},
		{Name: "setup", Image: "registry.example.internal/setup:1", Resources: podSpec(4, 0).Containers[0].Resources},
	}
	sidecar.Spec.NodeSelector = map[string]string{"zone": "b"}
	e.create(t, sidecar)
	for i, sel := range []string{"h100", "a100"} {
		p := e.pod("train-"+strconv.Itoa(i), 8, 2)
		p.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "accelerator", Operator: corev1.NodeSelectorOpIn, Values: []string{sel}}}}}}}}
		e.create(t, p)
	}
	e.waitDemand(t, 2) // the sidecar pod fits no server (zone b): no demand, but recorded
	dir := filepath.Join("kubeview", "testdata")
	nodes, err := e.admin.CoreV1().RESTClient().Get().Resource("nodes").Param("labelSelector", "test="+e.ns).Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	pods, err := e.admin.CoreV1().RESTClient().Get().Namespace(e.ns).Resource("pods").Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	page, err := e.admin.CoreV1().RESTClient().Get().Namespace(e.ns).Resource("pods").Param("limit", "2").Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"recorded-nodes.json": nodes, "recorded-pods.json": pods, "recorded-pods-page.json": page} {
		var out bytes.Buffer // indented for review; the content is the API server's
		if err := json.Indent(&out, b, "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(out.Bytes(), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded %d bytes into %s", len(nodes)+len(pods)+len(page), dir)
}
