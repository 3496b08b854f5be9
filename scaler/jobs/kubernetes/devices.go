package kubernetes

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// claimed are the GPUs (devices of a class of Options.GPUClasses) that each allocated
// ResourceClaim holds, by namespace/name, so that a running pod's GPUs claimed through dynamic
// resource allocation count in its Node's allocation; nil, with no request made, when no pod
// that holds its Node claims devices. The claims of every namespace are read with one list
// (not a get per pod): a pass's cost does not grow with the pods that run. A cluster that does
// not serve resource.k8s.io/v1 (404) has none rota can read.
func (m *Manager) claimed(ctx context.Context, pods []kubeview.Pod) (map[string][]string, error) {
	if !kubeview.ClaimsDevices(pods) {
		return nil, nil
	}
	claims, err := listAll(ctx, m, m.opts.Client.ResourceV1().RESTClient(), "resourceclaims", "", "", kubeview.ParseResourceClaimList)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return kubeview.ClaimedGPUs(claims, m.opts.GPUClasses), nil
}

// devices puts into each waiting pod what its resource claims (dynamic resource allocation)
// ask: devices of a GPU class (Options.GPUClasses) are whole GPUs of its shape, and any other
// device class joins its placement, matched against the Nodes whose ResourceSlices offer the
// devices of that class's driver. Each claim and template is read once a call, and the
// ResourceSlices and DeviceClasses only when some waiting pod asks for a class that is not a
// GPU. A claim neither made yet nor named by a template that is there asks nothing: the
// scheduler waits for it, as rota does.
func (m *Manager) devices(ctx context.Context, pods []kubeview.Pod, nodes []kubeview.Node) error {
	asked := map[string][]kubeview.DeviceRequest{} // by kind/namespace/name
	classes := map[string]string{}                 // driver by device class not a GPU
	for i := range pods {
		p := &pods[i]
		if !p.Waits() {
			continue
		}
		for _, c := range p.ResourceClaims {
			reqs, err := m.claimRequests(ctx, asked, p.Namespace, c)
			if err != nil {
				return err
			}
			if err := p.AddDevices(reqs, m.opts.GPUClasses); err != nil {
				return fmt.Errorf("reading kubernetes demand: %w", err)
			}
		}
		for _, class := range p.Placement.Devices {
			classes[class] = ""
		}
	}
	if len(classes) == 0 {
		return nil
	}
	rc := m.opts.Client.ResourceV1().RESTClient()
	for class := range classes {
		what := "reading kubernetes deviceclass " + class
		data, found, err := get(ctx, what, rc.Get().Resource("deviceclasses").Name(class))
		if err != nil {
			return err
		}
		if !found {
			delete(classes, class) // no Node offers a class that is not there
			continue
		}
		if classes[class], err = kubeview.ParseDeviceClassDriver(data); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	offered, err := listAll(ctx, m, rc, "resourceslices", "", "", kubeview.ParseResourceSliceList)
	if err != nil {
		return err
	}
	kubeview.OfferDevices(nodes, offered, classes)
	return nil
}

// claimRequests are the device requests of pod claim c in namespace ns: its ResourceClaim's,
// or, while none was made for the pod, its template's; none when neither is there. asked
// keeps what was read this call.
func (m *Manager) claimRequests(ctx context.Context, asked map[string][]kubeview.DeviceRequest, ns string, c kubeview.DeviceClaim) ([]kubeview.DeviceRequest, error) {
	rc := m.opts.Client.ResourceV1().RESTClient()
	read := func(resource, name string, parse func([]byte) ([]kubeview.DeviceRequest, error)) ([]kubeview.DeviceRequest, bool, error) {
		key := resource + "/" + ns + "/" + name
		if reqs, ok := asked[key]; ok {
			return reqs, reqs != nil, nil
		}
		what := "reading kubernetes " + resource[:len(resource)-1] + " " + ns + "/" + name
		data, found, err := get(ctx, what, rc.Get().Namespace(ns).Resource(resource).Name(name))
		if err != nil || !found {
			asked[key] = nil
			return nil, false, err
		}
		reqs, err := parse(data)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", what, err)
		}
		asked[key] = reqs
		return reqs, true, nil
	}
	if c.Claim != "" {
		reqs, found, err := read("resourceclaims", c.Claim, kubeview.ParseResourceClaim)
		if err != nil || found || c.Template == "" {
			return reqs, err
		}
	}
	if c.Template == "" {
		return nil, nil
	}
	reqs, _, err := read("resourceclaimtemplates", c.Template, kubeview.ParseResourceClaimTemplate)
	return reqs, err
}
