package kubelab

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Conf is one cluster's folder and ports. Write lays the files out; the *Args methods give each
// daemon's command line.
type Conf struct {
	// Dir holds etcd's data, the API server's certificates and keys, the token file and the
	// kubeconfigs.
	Dir string
	// EtcdPort and EtcdPeerPort are etcd's client and peer ports; APIPort the API server's
	// (HTTPS); SchedulerPort and ControllersPort the health ports of kube-scheduler and
	// kube-controller-manager.
	EtcdPort, EtcdPeerPort, APIPort, SchedulerPort, ControllersPort int
	// AdminToken is the bearer token of the cluster's administrator (group system:masters);
	// Write makes one when empty.
	AdminToken string
}

// Controllers are the kube-controller-manager controllers the cluster runs: ReplicaSets and
// Deployments start a pod elsewhere for each one evicted, the Job controller counts an evicted
// pod as a failure of its Job (which fails at its backoffLimit), and the disruption controller
// keeps each PodDisruptionBudget's count of allowed disruptions, which the Eviction API obeys.
// The node lifecycle controller stays off: with no kubelet it would mark every Node unreachable.
const Controllers = "replicaset,deployment,job,disruption"

// URL is the API server's address.
func (c Conf) URL() string { return "https://127.0.0.1:" + strconv.Itoa(c.APIPort) }

// CAFile is the API server's self-signed serving certificate, its clients' CA.
func (c Conf) CAFile() string { return filepath.Join(c.Dir, "pki", "apiserver.crt") }

// AdminKubeconfig is the administrator's kubeconfig (written by Write).
func (c Conf) AdminKubeconfig() string { return filepath.Join(c.Dir, "admin.kubeconfig") }

// Admin is the administrator's client configuration.
func (c Conf) Admin() *rest.Config {
	return &rest.Config{Host: c.URL(), BearerToken: c.AdminToken, TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile()}}
}

func (c Conf) path(name string) string { return filepath.Join(c.Dir, name) }

// Write creates the folder and writes the service-account signing key, the token file and the
// administrator's kubeconfig. It fills AdminToken when empty.
func (c *Conf) Write() error {
	for _, d := range []string{"etcd", "pki"} {
		if err := os.MkdirAll(c.path(d), 0o700); err != nil {
			return err
		}
	}
	if c.AdminToken == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		c.AdminToken = hex.EncodeToString(b)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(c.path("pki/sa.key"), keyPEM, 0o600); err != nil {
		return err
	}
	tokens := fmt.Sprintf("%s,admin,admin,system:masters\n", c.AdminToken)
	if err := os.WriteFile(c.path("tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	return WriteKubeconfig(c.AdminKubeconfig(), c.URL(), c.CAFile(), c.AdminToken)
}

// WriteKubeconfig writes a kubeconfig with one cluster (server, CA file) and one user (a bearer
// token), its current context.
func WriteKubeconfig(path, server, caFile, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "user"}
	kc.CurrentContext = "lab"
	return clientcmd.WriteToFile(*kc, path)
}

// EtcdArgs is etcd's command line: one member on loopback.
func (c Conf) EtcdArgs() []string {
	client := "http://127.0.0.1:" + strconv.Itoa(c.EtcdPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.EtcdPeerPort)
	return []string{
		"--name=lab", "--data-dir=" + c.path("etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=lab=" + peer, "--log-level=warn",
	}
}

// EtcdHealth is etcd's health address.
func (c Conf) EtcdHealth() string { return "http://127.0.0.1:" + strconv.Itoa(c.EtcdPort) + "/health" }

// APIServerArgs is kube-apiserver's command line: RBAC on, bearer tokens from the token file,
// service-account tokens signed with Write's key, a self-signed serving certificate made in
// pki/ at start.
func (c Conf) APIServerArgs() []string {
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(c.EtcdPort),
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.APIPort),
		"--cert-dir=" + c.path("pki"),
		"--token-auth-file=" + c.path("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.path("pki/sa.key"),
		"--service-account-signing-key-file=" + c.path("pki/sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller makes each namespace's default service account, and no pod here
		// runs: pods need none. TaintNodesByCondition taints every new Node not-ready until
		// the node lifecycle controller, which does not run here, sees it Ready.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--profiling=false",
	}
}

// SchedulerArgs is kube-scheduler's command line, as the administrator.
func (c Conf) SchedulerArgs() []string {
	return []string{
		"--kubeconfig=" + c.AdminKubeconfig(), "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.SchedulerPort),
		"--profiling=false",
	}
}

// ControllersArgs is kube-controller-manager's command line, as the administrator, running
// Controllers only.
func (c Conf) ControllersArgs() []string {
	return []string{
		"--kubeconfig=" + c.AdminKubeconfig(), "--leader-elect=false",
		"--controllers=" + Controllers, "--use-service-account-credentials=false",
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.ControllersPort),
		"--profiling=false",
	}
}

// Health is the health address of kube-scheduler or kube-controller-manager on port (HTTPS,
// self-signed, readable without credentials).
func Health(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz" }
