// Package jobclass names the class of work a job is, from its shape and the classes: of rota's
// config, the one way for the scaler and the exporter alike, so the alert rules and the
// scaler count the same demand.
package jobclass

import (
	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/size"
)

// EmptyList is what rota and its exporter say of a `classes:` key holding no class.
const EmptyList = "an empty list: every job needs a class; leave the key out for the defaults (light, medium, heavy)"

// Class is a kind of work. Zero limits mean no limit, except MaxGPUs, where nil means no limit
// and 0 means no GPUs. A class may be deferrable (Defer) or a service (Service), not both.
type Class struct {
	Name       string     `yaml:"name"`
	Partitions []string   `yaml:"partitions"`
	MaxCPUs    int        `yaml:"max_cpus"`
	MaxGPUs    *int       `yaml:"max_gpus"`
	MaxMemory  size.Bytes `yaml:"max_memory"`
	// Defer makes the class's work wait for a schedule's window to wake servers.
	Defer *Defer `yaml:"defer"`
	// Service work is placed before other work, and a schedule that protects services keeps
	// its floor free for it.
	Service bool `yaml:"service"`
}

// Defer: outside the window of schedule Until, waiting work of the class wakes no server (it
// still runs on servers that are on); at the window's start it wakes what it needs. Work that
// has waited Max is served as usual.
type Defer struct {
	Until string         `yaml:"until"`
	Max   model.Duration `yaml:"max" max:"1w"`
}

// Shape is what a job asks for on each of its servers.
type Shape struct {
	Partition string
	CPUs      int
	GPUs      int
	Memory    size.Bytes
}

// Defaults are light (no GPU, up to 8 CPUs), medium (up to 1 GPU) and heavy (the rest).
func Defaults() []Class {
	zero, one := 0, 1
	return []Class{
		{Name: "light", MaxCPUs: 8, MaxGPUs: &zero},
		{Name: "medium", MaxGPUs: &one},
		{Name: "heavy"},
	}
}

// Classify returns the name of the first class that names the job's partition, else the first
// whose limits the shape fits, else the last. classes must not be empty; the config's
// validation guarantees that, and that the last class has no limits.
func Classify(classes []Class, s Shape) string {
	for _, cl := range classes {
		for _, p := range cl.Partitions {
			if p == s.Partition {
				return cl.Name
			}
		}
	}
	for _, cl := range classes {
		if len(cl.Partitions) > 0 {
			continue
		}
		if cl.MaxCPUs > 0 && s.CPUs > cl.MaxCPUs {
			continue
		}
		if cl.MaxGPUs != nil && s.GPUs > *cl.MaxGPUs {
			continue
		}
		if cl.MaxMemory > 0 && s.Memory > cl.MaxMemory {
			continue
		}
		return cl.Name
	}
	return classes[len(classes)-1].Name
}
