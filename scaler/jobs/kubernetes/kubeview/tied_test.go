package kubeview

import (
	"errors"
	"reflect"
	"testing"

	"github.com/rotahq/rota/scaler/fleet"
)

// replicaPod is a running ReplicaSet pod on gpu01 with the given spec fields besides
// nodeName (JSON, ending in a comma or empty) and container resources.
func replicaPod(t *testing.T, spec, resources string) Pod {
	t.Helper()
	p, err := ParsePod([]byte(`{"metadata":{"name":"p","namespace":"ml","uid":"u1",
		"ownerReferences":[{"kind":"ReplicaSet","name":"p-1","controller":true}]},
		"spec":{` + spec + `"nodeName":"gpu01","containers":[{"name":"c","resources":` + resources + `}]},
		"status":{"phase":"Running"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTiedPods: a pod that mounts a PersistentVolumeClaim (its volume may be local to its
// Node), claims devices through dynamic resource allocation, or requests a resource rota does
// not model is never moved nor requeueable, and a claim of either kind keeps a drain from
// evicting it. A pod with an emptyDir volume (its data goes with it) is neither moved nor
// drained either, as kubectl drain refuses it without --delete-emptydir-data, unless
// jobs.kubernetes.delete_emptydir_data allows it; the planner is told why each is not
// requeueable (fleet.Job.Held). AMD's and Intel's whole GPUs count as GPUs, MIG slices
// do not; huge pages, ephemeral storage and a zero request tie nothing.
func TestTiedPods(t *testing.T) {
	claim := `"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}},{"name":"tmp","emptyDir":{}}],`
	dra := `"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"one-gpu"}],`
	scratch := `"volumes":[{"name":"config","configMap":{"name":"c"}},{"name":"scratch","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}],`
	for _, tc := range []struct {
		name, spec, resources string
		gpus                  int64
		extended, claims      []string
		movable, drainable    bool
		// emptyDirData: jobs.kubernetes.delete_emptydir_data; held: why it is not requeueable.
		emptyDirData bool
		held         string
	}{
		{"cpu", ``, `{"requests":{"cpu":"1","memory":"1Gi","ephemeral-storage":"1Gi","hugepages-2Mi":"64Mi"}}`, 0, nil, nil, true, true, false, ""},
		{"nvidia", ``, `{"limits":{"nvidia.com/gpu":"2"}}`, 2, nil, nil, true, true, false, ""},
		{"amd", ``, `{"requests":{"cpu":"1","amd.com/gpu":"1"},"limits":{"amd.com/gpu":"1"}}`, 1, []string{"amd.com/gpu"}, nil, false, true,
			false, "it requests amd.com/gpu, which few Nodes may offer"},
		{"intel", ``, `{"limits":{"gpu.intel.com/i915":"1"}}`, 1, []string{"gpu.intel.com/i915"}, nil, false, true,
			false, "it requests gpu.intel.com/i915, which few Nodes may offer"},
		{"mig slice", ``, `{"limits":{"nvidia.com/mig-1g.5gb":"1"}}`, 0, []string{"nvidia.com/mig-1g.5gb"}, nil, false, true,
			false, "it requests nvidia.com/mig-1g.5gb, which few Nodes may offer"},
		{"a zero request", ``, `{"limits":{"example.com/fpga":"0"}}`, 0, nil, nil, true, true, false, ""},
		{"a claim", claim, `{"requests":{"cpu":"1"}}`, 0, nil, []string{"data"}, false, false,
			false, "it mounts PersistentVolumeClaim data, whose volume may be its Node's"},
		{"a claim, emptyDir data allowed", claim, `{"requests":{"cpu":"1"}}`, 0, nil, []string{"data"}, false, false,
			true, "it mounts PersistentVolumeClaim data, whose volume may be its Node's"},
		// Dynamic resource allocation: the devices are allocated on this Node.
		{"a device claim", dra, `{"requests":{"cpu":"1"},"claims":[{"name":"gpu"}]}`, 0, nil, nil, false, false,
			false, "it claims devices, which may be allocated on its Node"},
		{"an emptyDir", scratch, `{"requests":{"cpu":"1"}}`, 0, nil, nil, false, false,
			false, "its emptyDir volume scratch would lose its data (jobs.kubernetes.delete_emptydir_data)"},
		{"an emptyDir, its data allowed to go", scratch, `{"requests":{"cpu":"1"}}`, 0, nil, nil, true, true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := replicaPod(t, tc.spec, tc.resources)
			if p.Requests.GPUs != tc.gpus || !reflect.DeepEqual(p.Extended, tc.extended) || !reflect.DeepEqual(p.Claims, tc.claims) {
				t.Errorf("GPUs %d, extended %v, claims %v; want %d %v %v", p.Requests.GPUs, p.Extended, p.Claims, tc.gpus, tc.extended, tc.claims)
			}
			j := p.Job(fleet.Needs{}, Scope{Now: t0, EmptyDirData: tc.emptyDirData})
			if p.Movable(tc.emptyDirData) != tc.movable || j.Requeueable != tc.movable || p.Drainable(tc.emptyDirData) != tc.drainable {
				t.Errorf("movable %v, requeueable %v, drainable %v; want %v %v %v",
					p.Movable(tc.emptyDirData), j.Requeueable, p.Drainable(tc.emptyDirData), tc.movable, tc.movable, tc.drainable)
			}
			if j.Held != tc.held {
				t.Errorf("held %q, want %q", j.Held, tc.held)
			}
		})
	}
	// An init container's request ties the pod too.
	p, err := ParsePod([]byte(`{"metadata":{"name":"p","namespace":"ml"},"spec":{
		"initContainers":[{"name":"i","resources":{"limits":{"xilinx.com/fpga":"1"}}}],
		"containers":[{"name":"c","resources":{"limits":{"amd.com/gpu":"1"}}}]}}`))
	if err != nil || !reflect.DeepEqual(p.Extended, []string{"amd.com/gpu", "xilinx.com/fpga"}) {
		t.Errorf("extended %v (%v)", p.Extended, err)
	}
}

// TestExtendedDemand: a pod waiting for a resource rota does not model asks only for the
// servers whose Node offers it (an AMD GPU pod: the AMD server, as GPU work, never a CPU
// server nor an NVIDIA one); one that no Node offers is no demand (unplaced). The same pod
// running holds its GPUs, and is not requeueable.
func TestExtendedDemand(t *testing.T) {
	nodes := []Node{
		{Name: "cpu01", Allocatable: []string{"cpu", "memory"}},
		{Name: "gpu01", Allocatable: []string{"amd.com/gpu", "cpu", "memory"}, Ready: true},
		{Name: "gpu02", Allocatable: []string{"cpu", "memory", "nvidia.com/gpu"}},
	}
	wait := func(name, resources string) Pod {
		p, err := ParsePod([]byte(`{"metadata":{"name":"` + name + `","namespace":"ml"},
			"spec":{"containers":[{"name":"c","resources":` + resources + `}]},
			"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		p.Created = t0
		return p
	}
	amd := `{"requests":{"cpu":"2","amd.com/gpu":"1"},"limits":{"amd.com/gpu":"1"}}`
	v := View{Nodes: nodes, Pods: []Pod{
		wait("amd", amd),
		wait("mig", `{"limits":{"nvidia.com/mig-1g.5gb":"1"}}`),
		replicaPod(t, ``, amd),
	}}
	demand, unplaced, err := v.Demand(Scope{}, classify)
	if err != nil {
		t.Fatal(err)
	}
	if len(demand) != 1 || demand[0].Class != "gpu" || demand[0].Shape.GPUs != 1 || demand[0].Needs.Nodes != "gpu01" {
		t.Errorf("demand %+v, want the AMD pod as GPU work on gpu01 alone", demand)
	}
	if !reflect.DeepEqual(unplaced, []string{"ml/mig"}) {
		t.Errorf("unplaced %v, want the MIG pod (no Node offers its slice)", unplaced)
	}
	views, err := v.JobsViews(Scope{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	g := views["gpu01"]
	if g.GPUs != 1 || len(g.Running) != 1 || g.Running[0].Requeueable || g.Running[0].Needs.Nodes != "gpu01" {
		t.Errorf("gpu01 %+v, want its AMD pod holding 1 GPU, not requeueable", g)
	}
}

// TestVolumeAffinity: a waiting pod whose claim is bound to a local volume fits only the Node
// the volume names; a claim not bound, or a volume naming no Node, rules nothing out. An
// answer of another kind, or not JSON, is a bad answer.
func TestVolumeAffinity(t *testing.T) {
	vol, err := ParseClaimVolume([]byte(`{"kind":"PersistentVolumeClaim","spec":{"volumeName":"pv-1"}}`))
	if err != nil || vol != "pv-1" {
		t.Fatalf("claim bound to %q, %v", vol, err)
	}
	if vol, err := ParseClaimVolume([]byte(`{"kind":"PersistentVolumeClaim","spec":{}}`)); err != nil || vol != "" {
		t.Errorf("unbound claim: %q, %v", vol, err)
	}
	sel, err := ParseVolumeAffinity([]byte(`{"kind":"PersistentVolume","spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
		{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["cpu02"]}]}]}}}}`))
	if err != nil || sel == nil {
		t.Fatalf("volume affinity %v, %v", sel, err)
	}
	if sel, err := ParseVolumeAffinity([]byte(`{"kind":"PersistentVolume","spec":{"nfs":{"server":"x"}}}`)); err != nil || sel != nil {
		t.Errorf("a volume naming no node: %v, %v", sel, err)
	}
	node := func(name string) Node {
		return Node{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}
	}
	pl := Placement{Volumes: []NodeSelector{*sel}}
	if !pl.Fits(node("cpu02")) || pl.Fits(node("cpu01")) {
		t.Error("the pod of a local volume of cpu02 fits elsewhere, or not there")
	}
	for _, bad := range []string{`{"kind":"PersistentVolume"}`, `[]`, `{"kind":"PersistentVolumeClaim","spec":{"volumeName":7}}`} {
		if _, err := ParseClaimVolume([]byte(bad)); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("claim %s: %v", bad, err)
		}
	}
	for _, bad := range []string{`{"kind":"PersistentVolumeClaim"}`, `"x"`, `{"kind":"PersistentVolume","spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":{}}}}}`} {
		if _, err := ParseVolumeAffinity([]byte(bad)); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("volume %s: %v", bad, err)
		}
	}
}

// FuzzParseVolumes: any answer for a claim or a volume either fails with ErrBadAnswer or is
// read; it never panics, and a placement with what was read can be matched.
func FuzzParseVolumes(f *testing.F) {
	f.Add([]byte(`{"kind":"PersistentVolumeClaim","spec":{"volumeName":"pv-1"}}`))
	f.Add([]byte(`{"kind":"PersistentVolume","spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","values":["v"]}]}]}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseClaimVolume(b); err != nil && !errors.Is(err, ErrBadAnswer) {
			t.Fatalf("claim: error without ErrBadAnswer: %v", err)
		}
		sel, err := ParseVolumeAffinity(b)
		if err != nil && !errors.Is(err, ErrBadAnswer) {
			t.Fatalf("volume: error without ErrBadAnswer: %v", err)
		}
		if sel != nil {
			_ = Placement{Volumes: []NodeSelector{*sel}}.Fits(Node{Name: "n", Labels: map[string]string{"k": "v"}})
		}
	})
}
