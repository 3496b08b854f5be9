// Package kubelab runs a real Kubernetes control plane on loopback for tests and the lab: etcd,
// kube-apiserver (RBAC on, static bearer tokens, a service-account signing key) and
// kube-scheduler, built from their Go modules by `make tools`. Every port is chosen at run
// time, everything lives in one folder, and each process is stopped by pid.
//
// There is no kubelet. Whoever uses the cluster plays its part and only that part, through the
// status subresources the kubelet itself writes: a Node's capacity and Ready condition
// (SetNode), a bound pod's phase (SetPodPhase). Everything else, binding pods to Nodes above
// all, is the real scheduler's and API server's doing.
//
// Conf writes the cluster's files and gives each daemon's command line without a test, so the
// lab, which starts its processes itself, runs the same cluster; Start runs it under a test.
package kubelab
