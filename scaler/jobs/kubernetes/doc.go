// Package kubernetes is rota's Kubernetes adapter: a jobs.Manager that powers the bare-metal
// Nodes of a cluster on and off around its pods, through the API server (client-go; a
// kubeconfig, or the service account of rota's pod).
//
// What it reads (Manager.Read: every Node and every unfinished pod, page by page, each page
// parsed by package kubeview, so that a bad object fails the read and is named):
//
//   - Each Node is the rota server of its name, or of the value of jobs.kubernetes.node_label.
//   - Allocation: the pods bound to the Node that have not finished, DaemonSet pods and static
//     pods' mirrors excepted, with their CPU, memory and GPU requests (kubeview.GPUResources) as
//     the scheduler counts them (init containers, sidecars, overhead, pod-level resources), and
//     the GPUs their allocated ResourceClaims hold (one list of the claims, each device once a
//     Node; only when such a pod claims devices). A pod that mounts a PersistentVolumeClaim, claims devices through dynamic resource allocation
//     (spec.resourceClaims) or requests a resource rota does not model is never requeueable: it
//     may be tied to its Node. Nor is one with an emptyDir volume, unless
//     jobs.kubernetes.delete_emptydir_data (its data would be lost), nor, while that lasts, one
//     whose PodDisruptionBudget allows no disruption (the budgets listed when a move could
//     take a pod): the planner is told why (fleet.Job.Held).
//   - Demand: the pods the scheduler marked unschedulable, grouped by class, namespace (the
//     department) and shape; one that requests a resource rota does not model asks only for the
//     servers whose Node offers it (status.allocatable). The devices a waiting pod claims through
//     dynamic resource allocation (its ResourceClaims, or their templates) count as GPUs when of
//     a class of jobs.kubernetes.gpu_device_classes; any other class asks for the servers whose
//     Node a ResourceSlice of that class's driver offers devices on. A waiting pod's required
//     pod anti-affinity keeps it off the Nodes whose topology domain holds a pod it selects,
//     and its DoNotSchedule topology spread off those where it would break maxSkew. A pod
//     bound by its spec.nodeName to the Node of a server that is not Ready asks for that
//     server alone (not a DaemonSet's).
//   - Readiness after a boot: the Node's Ready condition (JobsView.Responding).
//
// What it does:
//
//   - Drain: cordon, with rota's annotation (DrainAnnotation: jobs.Marker and the reason), then
//     evict, through the Eviction API so that PodDisruptionBudgets decide, the pods whose
//     controller starts them elsewhere (ReplicaSet, ReplicationController, StatefulSet) and
//     that carry no do-not-disrupt annotation (rota's, or Karpenter's karpenter.sh/do-not-disrupt)
//     and mount no PersistentVolumeClaim, claim no devices and have no emptyDir volume (unless
//     jobs.kubernetes.delete_emptydir_data, as kubectl drain's --delete-emptydir-data). Bare pods and a Job's pods run to
//     their end; the drain waits for them. ContinueDrain (jobs.DrainContinuer) evicts again on
//     each pass what a budget held back; one pod's failed eviction does not stop the others.
//   - Resume: rota's cordon and annotation lifted, and its powered-off taint removed.
//   - Move (jobs.Mover, policy.moves): evict the pods named, if requeueable, off a Node rota
//     cordoned.
//   - PoweredOff (jobs.PowerAware): the NoSchedule taint PoweredOffTaint, so nothing is placed
//     on a Node that is off, whoever lifts its cordon.
//
// A Node cordoned by anyone but rota is never drained, moved from nor uncordoned
// (jobs.ErrNotOurs): a cordon is rota's only with rota's annotation and rota's field manager
// the sole owner of spec.unschedulable (kubeview.Node.CordonedByRota), since the annotation
// outlives a kubectl uncordon and would make a later kubectl cordon look like rota's.
// Every Node patch carries the resourceVersion read, so a change made in between fails it
// instead of being overwritten. Permissions lists every API right used: the ClusterRole of
// deploy/kubernetes/rbac.yaml grants those and no more.
package kubernetes
