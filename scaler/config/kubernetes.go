package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// Kubernetes' name rules, written out here so that the config (which the planner imports)
// links no Kubernetes library.
var (
	// kubeSubdomain is a DNS-1123 subdomain: a Node's name (at most 253 characters).
	kubeSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// kubeLabelName is a label value, or the name part of a label key (at most 63 characters).
	kubeLabelName = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

// KubeNodeName reports whether s can be the name of a Kubernetes Node.
func KubeNodeName(s string) bool { return len(s) <= 253 && kubeSubdomain.MatchString(s) }

// KubeLabelValue reports whether s can be a non-empty Kubernetes label value.
func KubeLabelValue(s string) bool { return len(s) <= 63 && kubeLabelName.MatchString(s) }

// KubeLabelKey reports whether s is a Kubernetes label key: a name, optionally behind a DNS
// subdomain prefix and a slash ("example.com/server").
func KubeLabelKey(s string) bool {
	prefix, name, found := strings.Cut(s, "/")
	if !found {
		prefix, name = "", s
	} else if prefix == "" || !KubeNodeName(prefix) {
		return false
	}
	return KubeLabelValue(name)
}

// DefaultGPUDeviceClass is jobs.kubernetes.gpu_device_classes' default: the DeviceClass of
// NVIDIA's DRA driver for whole GPUs.
const DefaultGPUDeviceClass = "gpu.nvidia.com"

// validateKubernetes checks jobs.kubernetes and that every server can be found in the cluster:
// by its name (a Node name), or by jobs.kubernetes.node_label (a label value).
func (c *Config) validateKubernetes(p *problems) {
	k := c.Jobs.Kubernetes
	if k.NodeLabel != "" && !KubeLabelKey(k.NodeLabel) {
		p.add("jobs.kubernetes.node_label", "%s is not a Kubernetes label key", errtext.Quote(k.NodeLabel))
	}
	for i, class := range k.GPUDeviceClasses {
		if !KubeNodeName(class) {
			p.add(fmt.Sprintf("jobs.kubernetes.gpu_device_classes[%d]", i), "%s cannot be a DeviceClass name (lower-case letters, digits, '-', '.')", errtext.Quote(class))
		}
	}
	for i, pl := range c.Pools {
		for j, n := range pl.Nodes {
			path := fmt.Sprintf("pools[%d].nodes[%d].name", i, j)
			switch {
			case k.NodeLabel == "" && !KubeNodeName(n.Name):
				p.add(path, "%s cannot be a Kubernetes Node name (lower-case letters, digits, '-', '.'); name the servers so or set jobs.kubernetes.node_label", errtext.Quote(n.Name))
			case k.NodeLabel != "" && !KubeLabelValue(n.Name):
				p.add(path, "%s cannot be the value of label %s (at most 63 letters, digits, '-', '_', '.')", errtext.Quote(n.Name), errtext.Quote(k.NodeLabel))
			}
		}
	}
}
