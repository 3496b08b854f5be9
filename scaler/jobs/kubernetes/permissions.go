package kubernetes

import rbacv1 "k8s.io/api/rbac/v1"

// Permissions are every API right the adapter uses, and so all the ClusterRole in
// deploy/kubernetes/rbac.yaml grants (a test holds the two equal, and runs the adapter under
// that role against a real API server): Nodes are read (get, list) and patched (cordon, the
// drain annotation, the powered-off taint); pods are listed; pods are evicted through the
// Eviction API (create pods/eviction), never deleted; the volume claims of waiting pods and
// the volumes they are bound to are read (get), for where those pods can start; their
// resource claims, the templates those are made from and the device classes they name are
// read (get), and the ResourceSlices listed, for the devices they ask and where they are; the
// resource claims of every namespace are listed for the GPUs that running pods hold; Jobs are
// listed, and read (get) before a move, for whether a Job outlives its pods' eviction; the
// PodDisruptionBudgets are listed, for the pods that one keeps from a move now.
func Permissions() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"get"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaimtemplates", "deviceclasses"}, Verbs: []string{"get"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"list"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"list"}},
	}
}
