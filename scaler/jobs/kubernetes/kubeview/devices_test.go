package kubeview

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// claimJSON is a ResourceClaim whose spec.devices.requests are requests (JSON).
func claimJSON(requests string) string {
	return `{"kind":"ResourceClaim","spec":{"devices":{"requests":[` + requests + `]}}}`
}

// TestParseDeviceRequests: a claim's requests are read with their device class and count
// (ExactCount, count 1 when absent; All counts one; a request with alternatives counts as its
// first), a template's the same; garbage fails, wrapping ErrBadAnswer.
func TestParseDeviceRequests(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []DeviceRequest
	}{
		{"exact count", claimJSON(`{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","allocationMode":"ExactCount","count":4}}`),
			[]DeviceRequest{{"gpu.nvidia.com", 4}}},
		{"count left out", claimJSON(`{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}}`), []DeviceRequest{{"gpu.nvidia.com", 1}}},
		{"all", claimJSON(`{"name":"all","exactly":{"deviceClassName":"fpga.example.com","allocationMode":"All"}}`), []DeviceRequest{{"fpga.example.com", 1}}},
		{"first available", claimJSON(`{"name":"any","firstAvailable":[{"name":"big","deviceClassName":"gpu.nvidia.com","count":2},{"name":"small","deviceClassName":"mig.nvidia.com"}]}`),
			[]DeviceRequest{{"gpu.nvidia.com", 2}}},
		{"two requests", claimJSON(`{"name":"a","exactly":{"deviceClassName":"gpu.nvidia.com"}},{"name":"b","exactly":{"deviceClassName":"nic.example.com","count":2}}`),
			[]DeviceRequest{{"gpu.nvidia.com", 1}, {"nic.example.com", 2}}},
		{"none", claimJSON(``), []DeviceRequest{}},
		{"template", `{"kind":"ResourceClaimTemplate","spec":{"metadata":{},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}}}}`,
			[]DeviceRequest{{"gpu.nvidia.com", 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := ParseResourceClaim
			if tc.name == "template" {
				parse = ParseResourceClaimTemplate
			}
			got, err := parse([]byte(tc.data))
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v (%v), want %v", got, err, tc.want)
			}
		})
	}
	many := strings.TrimSuffix(strings.Repeat(`{"name":"a","exactly":{"deviceClassName":"c"}},`, maxDeviceRequests+1), ",")
	for name, data := range map[string]string{
		"not json":          `{`,
		"another kind":      `{"kind":"Pod"}`,
		"template as claim": `{"kind":"ResourceClaimTemplate"}`,
		"no class":          claimJSON(`{"name":"gpu","exactly":{"count":1}}`),
		"no subject":        claimJSON(`{"name":"gpu"}`),
		"zero count":        claimJSON(`{"name":"gpu","exactly":{"deviceClassName":"c","count":0}}`),
		"negative count":    claimJSON(`{"name":"gpu","exactly":{"deviceClassName":"c","count":-2}}`),
		"huge count":        claimJSON(`{"name":"gpu","exactly":{"deviceClassName":"c","count":99999999999}}`),
		"too many":          claimJSON(many),
	} {
		if _, err := ParseResourceClaim([]byte(data)); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("%s: %v, want ErrBadAnswer", name, err)
		}
	}
}

// draPod is a waiting pod of namespace ml asking one CPU, with the given resource claims.
func draPod(t *testing.T, name, claims, statuses string) Pod {
	t.Helper()
	p, err := ParsePod([]byte(`{"metadata":{"name":"` + name + `","namespace":"ml"},
		"spec":{"resourceClaims":[` + claims + `],"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},
		"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}],
		"resourceClaimStatuses":[` + statuses + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDevicePodsDemand: a waiting pod whose claims ask for devices of a GPU class is GPU
// work (its shape counts them), asking any server; one asking for another class asks only
// for the servers whose Node offers that class's driver (a ResourceSlice on it), and is no
// demand when none does. Without its devices counted, the GPU pod read as a 1-CPU pod: its
// home pool the CPU servers', which it can never run on.
func TestDevicePodsDemand(t *testing.T) {
	train := draPod(t, "train", `{"name":"gpus","resourceClaimTemplateName":"two-gpus"}`, `{"name":"gpus","resourceClaimName":"train-gpus-x7k"}`)
	if want := []DeviceClaim{{Name: "gpus", Claim: "train-gpus-x7k", Template: "two-gpus"}}; !reflect.DeepEqual(train.ResourceClaims, want) {
		t.Fatalf("claims %+v, want %+v", train.ResourceClaims, want)
	}
	gpuClasses := []string{"gpu.nvidia.com"}
	if err := train.AddDevices([]DeviceRequest{{"gpu.nvidia.com", 2}}, gpuClasses); err != nil {
		t.Fatal(err)
	}
	fpga := draPod(t, "fpga", `{"name":"f","resourceClaimName":"shared-fpga"}`, ``)
	if err := fpga.AddDevices([]DeviceRequest{{"fpga.example.com", 1}, {"fpga.example.com", 1}}, gpuClasses); err != nil {
		t.Fatal(err)
	}
	nic := draPod(t, "nic", `{"name":"n","resourceClaimName":"vf"}`, ``)
	if err := nic.AddDevices([]DeviceRequest{{"nic.example.com", 1}}, gpuClasses); err != nil {
		t.Fatal(err)
	}
	nodes := []Node{{Name: "cpu01"}, {Name: "gpu01"}, {Name: "gpu02"}}
	OfferDevices(nodes, []ResourceSlice{
		{Driver: "gpu.nvidia.com", NodeName: "gpu01", Devices: 8},
		{Driver: "fpga.example.com", NodeName: "gpu02", Devices: 2},
		{Driver: "nic.example.com", NodeName: "gpu01", Devices: 0}, // offers nothing
	}, map[string]string{"fpga.example.com": "fpga.example.com", "nic.example.com": "nic.example.com"})
	v := View{Nodes: nodes, Pods: []Pod{train, fpga, nic}}
	demand, unplaced, err := v.Demand(Scope{}, classify)
	if err != nil {
		t.Fatal(err)
	}
	if len(demand) != 2 || demand[1].Class != "gpu" || demand[1].Shape.GPUs != 2 || demand[1].Needs.Nodes != "" ||
		demand[0].Shape.GPUs != 0 || demand[0].Needs.Nodes != "gpu02" {
		t.Errorf("demand %+v, want the training pod as 2 GPUs anywhere, the FPGA pod on gpu02 alone", demand)
	}
	if !reflect.DeepEqual(unplaced, []string{"ml/nic"}) {
		t.Errorf("unplaced %v, want the NIC pod no Node offers", unplaced)
	}
	if err := train.AddDevices([]DeviceRequest{{"gpu.nvidia.com", maxGPUs}}, gpuClasses); err == nil {
		t.Error("GPUs past the bound were added")
	}
}

// TestOfferDevices: a slice offers on the Node it names, on every Node (allNodes, or per
// device), or on those its selector matches; a class whose driver rota cannot read is offered
// wherever any slice offers devices.
func TestOfferDevices(t *testing.T) {
	nodes := []Node{{Name: "a", Labels: map[string]string{"rack": "1"}}, {Name: "b"}, {Name: "c"}}
	rack1 := &NodeSelector{Terms: []SelectorTerm{{MatchExpressions: []Requirement{{Key: "rack", Operator: "In", Values: []string{"1"}}}}}}
	OfferDevices(nodes, []ResourceSlice{
		{Driver: "net.example.com", AllNodes: true, Devices: 1},
		{Driver: "fpga.example.com", Selector: rack1, Devices: 1},
		{Driver: "gpu.example.com", NodeName: "b", Devices: 1},
	}, map[string]string{"net": "net.example.com", "fpga": "fpga.example.com", "gpu": "gpu.example.com", "odd": ""})
	want := map[string][]string{"a": {"fpga", "net", "odd"}, "b": {"gpu", "net", "odd"}, "c": {"net", "odd"}}
	for _, n := range nodes {
		if !reflect.DeepEqual(n.Devices, want[n.Name]) {
			t.Errorf("%s offers %v, want %v", n.Name, n.Devices, want[n.Name])
		}
	}
}

// TestParseDeviceClassDriver: the driver a class's CEL selector names, "" when none does.
func TestParseDeviceClassDriver(t *testing.T) {
	for data, want := range map[string]string{
		`{"kind":"DeviceClass","spec":{"selectors":[{"cel":{"expression":"device.driver == \"gpu.nvidia.com\" && device.attributes[\"gpu.nvidia.com\"].type == \"gpu\""}}]}}`: "gpu.nvidia.com",
		`{"kind":"DeviceClass","spec":{"selectors":[{"cel":{"expression":"device.attributes[\"x\"].y == 1"}}]}}`:                                                              "",
		`{"kind":"DeviceClass","spec":{}}`: "",
	} {
		if got, err := ParseDeviceClassDriver([]byte(data)); err != nil || got != want {
			t.Errorf("%s: %q (%v), want %q", data, got, err, want)
		}
	}
	if _, err := ParseDeviceClassDriver([]byte(`{"kind":"ResourceClaim"}`)); !errors.Is(err, ErrBadAnswer) {
		t.Errorf("another kind: %v", err)
	}
}

// FuzzParseDevices: the parsers of dynamic resource allocation's objects (a waiting pod's
// claims and templates, slices, classes, and the allocated claims of running pods) fail only
// with ErrBadAnswer, and what they read stays within bounds.
func FuzzParseDevices(f *testing.F) {
	f.Add([]byte(claimJSON(`{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":4}}`)))
	f.Add([]byte(`{"kind":"ResourceClaimTemplate","spec":{"spec":{"devices":{"requests":[{"name":"a","firstAvailable":[{"deviceClassName":"c","allocationMode":"All"}]}]}}}}`))
	f.Add([]byte(`{"kind":"ResourceSliceList","items":[{"spec":{"driver":"d","nodeName":"n","devices":[{"name":"g0"}]}}]}`))
	f.Add([]byte(`{"kind":"DeviceClass","spec":{"selectors":[{"cel":{"expression":"device.driver == 'd'"}}]}}`))
	f.Add(claimList(allocatedJSON("c", `{"name":"any","firstAvailable":[{"name":"big","deviceClassName":"c"}]}`, gpuResult("any/big", "g0"))))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte) ([]DeviceRequest, error){ParseResourceClaim, ParseResourceClaimTemplate} {
			reqs, err := parse(b)
			if err != nil && !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error without ErrBadAnswer: %v", err)
			}
			p := Pod{Namespace: "n", Name: "p"}
			for _, r := range reqs {
				if r.Class == "" || r.Count <= 0 || r.Count > maxGPUs {
					t.Fatalf("request read as %+v", r)
				}
			}
			if p.AddDevices(reqs, []string{"c"}) == nil && p.Requests.GPUs > maxGPUs {
				t.Fatalf("GPUs %d", p.Requests.GPUs)
			}
		}
		offered, _, err := ParseResourceSliceList(b)
		if err != nil && !errors.Is(err, ErrBadAnswer) {
			t.Fatalf("slices: error without ErrBadAnswer: %v", err)
		}
		driver, err := ParseDeviceClassDriver(b)
		if err != nil && !errors.Is(err, ErrBadAnswer) {
			t.Fatalf("class: error without ErrBadAnswer: %v", err)
		}
		OfferDevices([]Node{{Name: "n"}}, offered, map[string]string{"c": driver})
		claims, _, err := ParseResourceClaimList(b)
		if err != nil && !errors.Is(err, ErrBadAnswer) {
			t.Fatalf("claims: error without ErrBadAnswer: %v", err)
		}
		for _, c := range claims {
			if c.Name == "" || c.Namespace == "" || len(c.Devices) > maxDeviceRequests {
				t.Fatalf("claim read as %s/%s with %d devices", c.Namespace, c.Name, len(c.Devices))
			}
			for _, d := range c.Devices {
				if d.Class == "" || strings.Count(d.Device, "/") < 2 {
					t.Fatalf("device read as %+v", d)
				}
			}
		}
		ClaimedGPUs(claims, []string{"c"})
	})
}
