package kubelab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/rotahq/rota/internal/testutil"
)

// Binaries are the programs a cluster runs, all built by `make tools` into .tools/bin.
var Binaries = []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}

// Cluster is a running control plane.
type Cluster struct {
	Conf Conf
	// Admin is a client with every right (system:masters).
	Admin *k8s.Clientset
	// APIServer is the kube-apiserver process (stop it to see how clients cope).
	APIServer *testutil.Process
}

// Start runs etcd, kube-apiserver, kube-controller-manager (Controllers) and kube-scheduler on
// loopback, each ready before the next starts, and stops them at the test's cleanup. A missing
// binary skips the test locally and fails it under CI=true.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bins := map[string]string{}
	for _, b := range Binaries {
		bins[b] = testutil.Tool(t, b)
	}
	// A short folder of its own: etcd's data stays out of the test's temporary folder names.
	dir, err := os.MkdirTemp("", "kubelab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := Conf{Dir: dir, EtcdPort: testutil.FreePort(t), EtcdPeerPort: testutil.FreePort(t),
		APIPort: testutil.FreePort(t), SchedulerPort: testutil.FreePort(t), ControllersPort: testutil.FreePort(t)}
	if err := conf.Write(); err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, bins["etcd"], conf.EtcdArgs()...)
	testutil.WaitHTTP(t, conf.EtcdHealth(), time.Minute)
	c := &Cluster{Conf: conf}
	c.APIServer = testutil.Start(t, bins["kube-apiserver"], conf.APIServerArgs()...)
	// The serving certificate is written at start; /readyz is open to anyone.
	testutil.Eventually(t, 3*time.Minute, "kube-apiserver /readyz", func() error {
		if _, err := os.Stat(conf.CAFile()); err != nil {
			return err
		}
		return Ready(conf.URL()+"/readyz", conf.CAFile())
	})
	if c.Admin, err = k8s.NewForConfig(conf.Admin()); err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, bins["kube-controller-manager"], conf.ControllersArgs()...)
	testutil.Eventually(t, 2*time.Minute, "kube-controller-manager /healthz", func() error { return Ready(Health(conf.ControllersPort), "") })
	testutil.Start(t, bins["kube-scheduler"], conf.SchedulerArgs()...)
	testutil.Eventually(t, 2*time.Minute, "kube-scheduler /healthz", func() error { return Ready(Health(conf.SchedulerPort), "") })
	return c
}

// Ready fetches url over HTTPS and wants 200: the certificate is checked against caFile, or
// not at all when caFile is "" (the self-signed health ports of the scheduler and controllers).
func Ready(url, caFile string) error {
	cfg := &tls.Config{InsecureSkipVerify: true} // #nosec G402: loopback probe of a test daemon
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("%s holds no certificate", caFile)
		}
		cfg = &tls.Config{RootCAs: pool}
	}
	return testutil.GetOK(context.Background(), &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 2 * time.Second}, url)
}

// Namespace creates a namespace.
func (c *Cluster) Namespace(t testing.TB, name string) {
	t.Helper()
	_, err := c.Admin.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// Token returns a bearer token of service account namespace/name, valid for an hour.
func (c *Cluster) Token(t testing.TB, namespace, name string) string {
	t.Helper()
	token, err := ServiceAccountToken(context.Background(), c.Admin, namespace, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// ServiceAccountToken asks the API server (TokenRequest) for a bearer token of service account
// namespace/name, valid for ttl.
func ServiceAccountToken(ctx context.Context, c k8s.Interface, namespace, name string, ttl time.Duration) (string, error) {
	seconds := int64(ttl.Seconds())
	tr, err := c.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// Kubeconfig writes a kubeconfig for bearer token into the test's temporary folder.
func (c *Cluster) Kubeconfig(t testing.TB, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, c.Conf.URL(), c.Conf.CAFile(), token); err != nil {
		t.Fatal(err)
	}
	return path
}
