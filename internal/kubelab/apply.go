package kubelab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Apply creates every object of a multi-document YAML manifest (deploy/kubernetes/*.yaml), in
// order, as `kubectl create -f` would: the API server validates each, and the first it refuses
// fails the call. It returns the objects created.
func Apply(ctx context.Context, rc *rest.Config, manifest []byte) ([]*unstructured.Unstructured, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("reading the manifest: %w", err)
		}
		if len(obj.Object) == 0 {
			continue // an empty document
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			return out, fmt.Errorf("creating %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		out = append(out, created)
	}
}
