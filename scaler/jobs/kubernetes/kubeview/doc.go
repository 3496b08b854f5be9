// Package kubeview is the Kubernetes adapter's pure half: the parser of the API server's
// NodeList and PodList answers (only what rota reads, each object on its own so that a bad one
// is named, quantities checked before they are parsed), and the view rota derives from one
// whole read: each server's allocation and drain state, the demand of unschedulable pods, and
// which Nodes a pod could run on (Placement.Fits). It links no Kubernetes client (only the
// quantity parser), so the package kubernetes is all that talks to a cluster, and its fuzz
// targets stay quick.
package kubeview
