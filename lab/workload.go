package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rotahq/rota/scaler/config"
)

// Job is one batch job of a lab workload.
type Job struct {
	// Kind is light (CPU only) or heavy (a GPU); it is also the job's name.
	Kind string
	CPUs int
	GPUs int
	// Runtime is how long the job sleeps.
	Runtime time.Duration
	// Args are more sbatch options (--requeue, --time=20, --nodelist=gpu02).
	Args []string
}

// Light and Heavy are the workload's two kinds of job; heavy jobs are the physics account's,
// on research's GPU servers: capacity the books charge to physics, as borrowed.
func Light(runtime time.Duration) Job { return Job{Kind: "light", CPUs: 2, Runtime: runtime} }
func Heavy(runtime time.Duration) Job {
	return Job{Kind: "heavy", CPUs: 2, GPUs: 1, Runtime: runtime, Args: []string{"--account=physics"}}
}

// sbatchArgs are the arguments that submit j: one node, its CPUs and GPUs, a sleep, output
// thrown away.
func (j Job) sbatchArgs() []string {
	args := []string{"--parsable", "--output=/dev/null", "--job-name=" + j.Kind, "--nodes=1", "--ntasks=1",
		fmt.Sprintf("--cpus-per-task=%d", j.CPUs)}
	if j.GPUs > 0 {
		args = append(args, fmt.Sprintf("--gres=gpu:%d", j.GPUs))
	}
	args = append(args, j.Args...)
	return append(args, fmt.Sprintf("--wrap=sleep %d", int(j.Runtime.Seconds())))
}

// Submit submits each job to the lab in dir (sbatch, or a pod in the Kubernetes profile) and
// returns their ids (pod names).
func Submit(ctx context.Context, dir string, jobs ...Job) ([]string, error) {
	if kube, err := isKubernetes(dir); err != nil || kube {
		if err != nil {
			return nil, err
		}
		return submitPods(ctx, dir, jobs...)
	}
	var ids []string
	for _, j := range jobs {
		out, err := SlurmCommand(ctx, dir, "sbatch", j.sbatchArgs()...)
		if err != nil {
			return ids, fmt.Errorf("submitting a %s job: %w", j.Kind, err)
		}
		id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
		ids = append(ids, id)
	}
	return ids, nil
}

// Burst is the demo's workload: light and heavy jobs interleaved.
func Burst(light, heavy int, lightRuntime, heavyRuntime time.Duration) []Job {
	var jobs []Job
	for i := 0; i < max(light, heavy); i++ {
		if i < light {
			jobs = append(jobs, Light(lightRuntime))
		}
		if i < heavy {
			jobs = append(jobs, Heavy(heavyRuntime))
		}
	}
	return jobs
}

// Unfinished counts the lab's jobs that have not finished (queued or running).
func Unfinished(ctx context.Context, dir string) (int, error) {
	if kube, err := isKubernetes(dir); err != nil || kube {
		if err != nil {
			return 0, err
		}
		return unfinishedPods(ctx, dir)
	}
	out, err := SlurmCommand(ctx, dir, "squeue", "--noheader", "--format=%i")
	if err != nil {
		return 0, err
	}
	return len(strings.Fields(out)), nil
}

// isKubernetes reports whether the lab in dir runs the Kubernetes profile (its config's
// adapter says).
func isKubernetes(dir string) (bool, error) {
	cfg, err := config.Load(filepath.Join(dir, "rota.yml"))
	if err != nil {
		return false, err
	}
	return cfg.Jobs.Adapter == ProfileKubernetes, nil
}
