package kubernetes

import rbacv1 "k8s.io/api/rbac/v1"

// Permissions are every API right the adapter uses, and so all the ClusterRole in
// deploy/kubernetes/rbac.yaml grants (a test holds the two equal, and runs the adapter under
// that role against a real API server): Nodes are read (get, list) and patched (cordon, the
// drain annotation, the powered-off taint); pods are listed; pods are evicted through the
// Eviction API (create pods/eviction), never deleted; the volume claims of waiting pods and
// the volumes they are bound to are read (get), for where those pods can start.
func Permissions() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"get"}},
	}
}
