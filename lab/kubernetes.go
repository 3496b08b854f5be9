package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/rotahq/rota/internal/kubelab"
)

// The lab's job managers (Options.Profile).
const (
	ProfileSlurm      = "slurm"
	ProfileKubernetes = "kubernetes"
)

// The Kubernetes profile: a real control plane (internal/kubelab: etcd, kube-apiserver with
// RBAC, kube-controller-manager, kube-scheduler) with one Node per server, shaped as its pool's
// profile; rota runs as its own service account under deploy/kubernetes/rbac.yaml. The lab
// plays each server's kubelet, through the status subresources only: while the server's power
// file says on, its Node is Ready and the pods bound to it run (and succeed once their runtime
// has passed); while it says off, its Node is not Ready and carries the not-ready taint, as the
// node lifecycle controller would put on it (that controller needs kubelets: it does not run).
const (
	// Namespace holds the lab's workload.
	Namespace = "lab"
	// RuntimeAnnotation says how long a lab pod runs ("40s").
	RuntimeAnnotation = "lab.rotahq.github.io/runtime"
	// gpuTaint keeps CPU work off the GPU servers, as GPU fleets commonly do.
	gpuTaint = "nvidia.com/gpu"
	// notReadyTaint is the node lifecycle controller's taint on a Node that is not Ready.
	notReadyTaint = "node.kubernetes.io/not-ready"
)

func kubeDir(dir string) string { return filepath.Join(dir, "kubernetes") }

// AdminKubeconfig is the lab cluster's administrator kubeconfig (KUBECONFIG for kubectl).
func AdminKubeconfig(dir string) string { return filepath.Join(kubeDir(dir), "admin.kubeconfig") }

// RotaKubeconfig is rota's kubeconfig: a token of its service account (jobs.kubernetes.kubeconfig
// in the lab config).
func RotaKubeconfig(dir string) string { return filepath.Join(kubeDir(dir), "rota.kubeconfig") }

// kubeConf is the cluster's folder and ports.
func (l *Lab) kubeConf() (kubelab.Conf, error) {
	c := kubelab.Conf{Dir: kubeDir(l.Dir)}
	for name, p := range map[string]*int{"etcd": &c.EtcdPort, "etcd-peer": &c.EtcdPeerPort, "kube-apiserver": &c.APIPort,
		"kube-scheduler": &c.SchedulerPort, "kube-controller-manager": &c.ControllersPort} {
		port, err := l.Ports.TCP(name)
		if err != nil {
			return c, err
		}
		*p = port
	}
	return c, nil
}

// startKubernetes starts the control plane, each daemon ready before the next, applies rota's
// role, writes rota's kubeconfig and registers a Node per server.
func (l *Lab) startKubernetes(ctx context.Context) error {
	c, err := l.kubeConf()
	if err != nil {
		return err
	}
	if err := c.Write(); err != nil {
		return fmt.Errorf("writing the cluster's files: %w", err)
	}
	daemons := []struct {
		name   string
		args   []string
		health func() error
	}{
		{"etcd", c.EtcdArgs(), func() error { return getOK(ctx, c.EtcdHealth()) }},
		{"kube-apiserver", c.APIServerArgs(), func() error { return kubelab.Ready(c.URL()+"/readyz", c.CAFile()) }},
		{"kube-controller-manager", c.ControllersArgs(), func() error { return kubelab.Ready(kubelab.Health(c.ControllersPort), "") }},
		{"kube-scheduler", c.SchedulerArgs(), func() error { return kubelab.Ready(kubelab.Health(c.SchedulerPort), "") }},
	}
	for _, d := range daemons {
		if err := l.run(d.name, nil, l.tools.kube[d.name], d.args...); err != nil {
			return err
		}
		if err := waitFor(ctx, 3*time.Minute, d.name+" ready", d.health); err != nil {
			return err
		}
	}
	admin, err := k8s.NewForConfig(c.Admin())
	if err != nil {
		return err
	}
	l.kube = admin
	rbac, err := os.ReadFile(filepath.Join(l.opts.Root, "deploy", "kubernetes", "rbac.yaml"))
	if err != nil {
		return err
	}
	if _, err := kubelab.Apply(ctx, c.Admin(), rbac); err != nil {
		return fmt.Errorf("deploy/kubernetes/rbac.yaml: %w", err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	token, err := kubelab.ServiceAccountToken(ctx, admin, "rota", "rota", 24*time.Hour)
	if err != nil {
		return err
	}
	if err := kubelab.WriteKubeconfig(RotaKubeconfig(l.Dir), c.URL(), c.CAFile(), token); err != nil {
		return err
	}
	now := l.opts.Clock.Now()
	for _, n := range l.nodes {
		spec := kubelab.NodeSpec{Name: n.name, CPUs: n.pool.Profile.CPUCores, GPUs: n.pool.Profile.GPUs,
			Memory: strconv.FormatInt(int64(n.pool.Profile.Memory), 10), Labels: map[string]string{"rota.lab/pool": n.pool.Name}}
		if spec.GPUs > 0 {
			spec.Taints = []corev1.Taint{{Key: gpuTaint, Value: "present", Effect: corev1.TaintEffectNoSchedule}}
		}
		if err := kubelab.RegisterNode(ctx, admin, spec, false, now); err != nil {
			return err
		}
		if err := l.setKubelet(ctx, n.name, false); err != nil {
			return err
		}
	}
	return nil
}

// setKubelet is a server's kubelet coming up (Ready, the not-ready taint gone) or going away
// with its power (not Ready, tainted).
func (l *Lab) setKubelet(ctx context.Context, name string, up bool) error {
	// rota patches the same Nodes: a write that lost the race is made again on what is there.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return kubelab.SetReady(ctx, l.kube, name, up, l.opts.Clock.Now())
	})
	if err != nil {
		return fmt.Errorf("kubelet of %s: %w", name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := l.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != notReadyTaint {
				taints = append(taints, t)
			}
		}
		if !up {
			taints = append(taints, corev1.Taint{Key: notReadyTaint, Effect: corev1.TaintEffectNoSchedule})
		}
		n.Spec.Taints = taints
		_, err = l.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node controller's taint on %s: %w", name, err)
	}
	return nil
}

// kubelets plays the kubelets of the servers that are on: the pods bound to them start, the
// running ones whose runtime has passed succeed (each recorded in the job completion log, as
// Slurm records its jobs), and it returns what runs on each server.
func (l *Lab) kubelets(ctx context.Context) (map[string]work, error) {
	now := l.opts.Clock.Now()
	if _, err := kubelab.RunBound(ctx, l.kube, now); err != nil {
		return nil, err
	}
	pods, err := l.kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
	if err != nil {
		return nil, err
	}
	w := map[string]work{}
	for _, p := range pods.Items {
		runtime, _ := time.ParseDuration(p.Annotations[RuntimeAnnotation])
		if p.Status.StartTime != nil && now.Sub(p.Status.StartTime.Time) >= runtime {
			if err := kubelab.SetPodPhase(ctx, l.kube, p.Namespace, p.Name, corev1.PodSucceeded, now); err != nil {
				return nil, err
			}
			line := fmt.Sprintf("JobId=%s JobName=%s JobState=COMPLETED NodeList=%s", p.UID, p.Name, p.Spec.NodeName)
			if err := appendLine(JobCompLog(l.Dir), line); err != nil {
				return nil, err
			}
			continue
		}
		cur := w[p.Spec.NodeName]
		cur.jobs++
		req := p.Spec.Containers[0].Resources.Requests
		cur.cpus += int(req.Cpu().Value())
		gpus := req[gpuTaint]
		cur.gpus += int(gpus.Value())
		w[p.Spec.NodeName] = cur
	}
	return w, nil
}

// adminClient is a client of the lab cluster in dir, as its administrator.
func adminClient(dir string) (*k8s.Clientset, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", AdminKubeconfig(dir))
	if err != nil {
		return nil, fmt.Errorf("the lab's cluster: %w", err)
	}
	return k8s.NewForConfig(rc)
}

// submitPods creates one pod per job in the lab namespace: a bare pod (batch work, run to
// its end) asking the job's CPUs and GPUs, tolerating the GPU servers' taint when it wants
// GPUs, that runs for the job's runtime.
func submitPods(ctx context.Context, dir string, jobs ...Job) ([]string, error) {
	c, err := adminClient(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, j := range jobs {
		p, err := c.CoreV1().Pods(Namespace).Create(ctx, j.pod(), metav1.CreateOptions{})
		if err != nil {
			return names, fmt.Errorf("submitting a %s pod: %w", j.Kind, err)
		}
		names = append(names, p.Name)
	}
	return names, nil
}

// pod is job j as a pod.
func (j Job) pod() *corev1.Pod {
	zero := int64(0)
	req := corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity(j.CPUs), corev1.ResourceMemory: *resourceQuantity(256 << 20)}
	var lim corev1.ResourceList
	var tol []corev1.Toleration
	if j.GPUs > 0 {
		req[gpuTaint] = *resourceQuantity(j.GPUs)
		lim = corev1.ResourceList{gpuTaint: *resourceQuantity(j.GPUs)}
		tol = []corev1.Toleration{{Key: gpuTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: j.Kind + "-", Namespace: Namespace, Labels: map[string]string{"kind": j.Kind},
			Annotations: map[string]string{RuntimeAnnotation: j.Runtime.String()}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &zero, Tolerations: tol,
			Containers: []corev1.Container{{Name: "work", Image: "registry.example.internal/lab-work:1", Command: []string{"sleep", strconv.Itoa(int(j.Runtime.Seconds()))},
				Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
	}
}

// unfinishedPods counts the lab's pods that have not finished.
func unfinishedPods(ctx context.Context, dir string) (int, error) {
	c, err := adminClient(dir)
	if err != nil {
		return 0, err
	}
	l, err := c.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return 0, err
	}
	return len(l.Items), nil
}

// resourceQuantity is n as a Kubernetes quantity.
func resourceQuantity(n int) *resource.Quantity {
	return resource.NewQuantity(int64(n), resource.DecimalSI)
}
