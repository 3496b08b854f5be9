package kubernetes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs/kubernetes"
)

// A pod's view of its service account, as the kubelet mounts it and client-go's
// rest.InClusterConfig reads it: fixed paths, and the API server's Service in the environment.
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// podEnv names the folder whose token, ca.crt and namespace the pod process mounts at
	// serviceAccountDir ("-" for none); set, the test binary runs podMain instead of the tests.
	podEnv = "ROTA_TEST_POD_SERVICE_ACCOUNT"
	// podConfigEnv is the config file the pod process runs with.
	podConfigEnv = "ROTA_TEST_POD_CONFIG"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(podEnv); dir != "" {
		os.Exit(podMain(dir, os.Getenv(podConfigEnv)))
	}
	os.Exit(m.Run())
}

// podMain is rota's pod with no kubelet: in a mount namespace of its own (runPod), an empty
// /var/run with the service account's files at serviceAccountDir (none when dir is "-"), it
// builds the adapter from config as the daemon does and prints what it reads of the servers
// (JSON) or why it cannot (exit 1).
func podMain(dir, conf string) int {
	if err := mountServiceAccount(dir); err != nil {
		fmt.Fprintln(os.Stderr, "pod set-up:", err)
		return 2
	}
	cfg, err := config.LoadFor(conf, config.Daemon)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log := logrus.New()
	log.SetOutput(os.Stderr)
	m, err := kubernetes.NewFromConfig(cfg, clock.Real{}, logrus.NewEntry(log))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	views, err := m.Nodes(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(views); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// mountServiceAccount puts a fresh tmpfs over /var/run (only this process's mount namespace
// sees it) and copies dir's files to serviceAccountDir.
func mountServiceAccount(dir string) error {
	run, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", run, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", run, err)
	}
	if dir == "-" {
		return nil
	}
	if err := os.MkdirAll(serviceAccountDir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"token", "ca.crt", "namespace"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(serviceAccountDir, f), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pod is how the parent starts a pod process and what came of it.
type pod struct {
	views  map[string]fleet.JobsView
	stderr string
	err    error
}

// runPod runs the test binary as rota's pod: a new mount namespace (and a user namespace that
// maps the caller to root, when the tests do not run as root), the API server's Service in
// KUBERNETES_SERVICE_HOST/PORT when service is set, and the service account's files from dir.
func runPod(t *testing.T, dir, conf string, service *kubelab.Conf) pod {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), podEnv+"="+dir, podConfigEnv+"="+conf)
	if service != nil {
		cmd.Env = append(cmd.Env, "KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT="+strconv.Itoa(service.APIPort))
	}
	// Go makes the new namespace's mounts private before it runs the child.
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if os.Geteuid() != 0 {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	cmd.SysProcAttr = attr
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		t.Fatalf("the pod process could not set up its service account: %s", stderr.String())
	case err != nil && !errors.As(err, &exit):
		// No mount namespace for this user (not root, and user namespaces are off).
		testutil.Missing(t, fmt.Sprintf("a mount namespace (%v)", err), "run the tests as root")
	}
	p := pod{stderr: stderr.String(), err: err}
	if err == nil {
		if jerr := json.Unmarshal([]byte(stdout.String()), &p.views); jerr != nil {
			t.Fatalf("the pod printed %q: %v", stdout.String(), jerr)
		}
	}
	return p
}

// testInCluster runs the adapter as it runs in rota's pod (deploy/kubernetes/deployment.yaml
// with the shipped config/rota.yml, whose kubeconfig is empty): client-go's in-cluster config
// finds the API server from the environment and reads the token and CA at the pod's fixed
// paths. Under rota's service account it reads the cluster; under one without rota's role it
// names the role; outside a cluster it says so. Neither failure reads as "no work".
func testInCluster(t *testing.T, e *env) {
	conf := filepath.Join(testutil.RepoRoot(t), "deploy", "kubernetes", "config", "rota.yml")
	shipped, err := config.LoadFor(conf, config.Daemon)
	if err != nil {
		t.Fatal(err)
	}
	if k := shipped.Jobs.Kubernetes.Kubeconfig; k != "" {
		t.Fatalf("deploy/kubernetes/config/rota.yml names kubeconfig %q: the pod would not use its service account", k)
	}
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 8}, true)
	work := e.pod("work", 2, 0)
	work.Spec.NodeName = "cpu01"
	e.create(t, work)

	ca, err := os.ReadFile(e.c.Conf.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	account := func(namespace, name string) string {
		dir := t.TempDir()
		for f, b := range map[string]string{"token": e.c.Token(t, namespace, name), "ca.crt": string(ca), "namespace": namespace} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}

	p := runPod(t, account("rota", "rota"), conf, &e.c.Conf)
	if p.err != nil {
		t.Fatalf("rota's pod on its service account: %v: %s", p.err, p.stderr)
	}
	if v := p.views["cpu01"]; !v.Known || !v.Responding || v.Jobs != 1 || v.CPUs != 2 {
		t.Errorf("rota's pod reads cpu01 as %+v; want known, responding, 1 pod of 2 CPUs", v)
	}
	if v, ok := p.views["cpu02"]; ok {
		t.Errorf("cpu02 has no Node but rota's pod reads %+v", v)
	}

	// A service account without rota's role: authenticated, and refused.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "not-rota", Namespace: e.ns}}
	if _, err := e.admin.CoreV1().ServiceAccounts(e.ns).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = runPod(t, account(e.ns, "not-rota"), conf, &e.c.Conf)
	if p.err == nil || !strings.Contains(p.stderr, "rota's role does not allow it") || !strings.Contains(p.stderr, "not-rota") {
		t.Errorf("a pod on a service account without rota's role: %v, read %v: %s", p.err, p.views, p.stderr)
	}

	p = runPod(t, "-", conf, nil)
	if p.err == nil || !strings.Contains(p.stderr, "jobs.kubernetes.kubeconfig is empty and rota runs outside a cluster") {
		t.Errorf("outside a cluster: %v, read %v: %s", p.err, p.views, p.stderr)
	}
}
