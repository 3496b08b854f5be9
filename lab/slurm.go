package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/slurmlab"
)

func (l *Lab) slurmConf() string { return filepath.Join(l.Dir, "slurm", "slurm.conf") }

// JobCompLog is where Slurm records every finished job (jobcomp/filetxt), under the lab folder.
func JobCompLog(dir string) string { return filepath.Join(dir, "slurm", "jobcomp.log") }

// writeSlurmConf writes a cluster of one slurmctld and one node per server of the inventory,
// shaped as its pool's profile (CPUs, memory, gpu GRES over empty files), all in one partition:
// Slurm may run any job on any server, and rota chooses which servers are on. Timings are short
// so a powered-off server is seen not responding within seconds.
func (l *Lab) writeSlurmConf() error {
	ctldPort, err := l.Ports.TCP("slurmctld")
	if err != nil {
		return err
	}
	var nodes []slurmlab.Node
	for _, p := range l.Config.Pools {
		for _, n := range p.Nodes {
			port, err := l.Ports.TCP("slurmd-" + n.Name)
			if err != nil {
				return err
			}
			nodes = append(nodes, slurmlab.Node{Name: n.Name, Partition: "batch", Port: port,
				CPUs: p.Profile.CPUCores, MemoryMB: int(int64(p.Profile.Memory) >> 20), GPUs: p.Profile.GPUs})
		}
	}
	return slurmlab.Conf{Dir: filepath.Dir(l.slurmConf()), Port: ctldPort, Nodes: nodes, JobCompLog: JobCompLog(l.Dir)}.Write()
}

// startJobManager starts the profile's job manager.
func (l *Lab) startJobManager(ctx context.Context) error {
	if l.opts.Profile == ProfileKubernetes {
		return l.startKubernetes(ctx)
	}
	return l.startSlurm(ctx)
}

// startSlurm writes slurm.conf and starts slurmctld; each server's slurmd starts with its power.
func (l *Lab) startSlurm(ctx context.Context) error {
	if err := l.writeSlurmConf(); err != nil {
		return fmt.Errorf("writing slurm.conf: %w", err)
	}
	if err := l.run("slurmctld", nil, l.tools.slurmctld, "-D", "-f", l.slurmConf()); err != nil {
		return err
	}
	return waitFor(ctx, 60*time.Second, "slurmctld answers", func() error {
		_, err := l.slurm(ctx, "scontrol", "ping")
		return err
	})
}

// slurm runs one of Slurm's client commands against the lab's cluster.
func (l *Lab) slurm(ctx context.Context, name string, args ...string) (string, error) {
	return SlurmCommand(ctx, l.Dir, filepath.Join(l.tools.slurmBin, name), args...)
}

// SlurmCommand runs a Slurm client command (a name in PATH, or a path) against the lab in dir,
// with the lab's marker in its environment (jobs it submits carry it too), and returns its
// standard output.
func SlurmCommand(ctx context.Context, dir, name string, args ...string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+filepath.Join(abs, "slurm", "slurm.conf"), MarkerEnv+"="+abs)
	cmd.Dir = filepath.Join(abs, "slurm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

// work is what runs on one server now, as Slurm says.
type work struct {
	jobs, cpus, gpus int
}

// runningWork asks squeue what runs where: one line per running job, "NODES|CPUS|GRES".
func (l *Lab) runningWork(ctx context.Context) (map[string]work, error) {
	out, err := l.slurm(ctx, "squeue", "--noheader", "--states=RUNNING", "--format=%N|%C|%b")
	if err != nil {
		return nil, err
	}
	return parseWork(out), nil
}

// parseWork reads squeue's "NODE|CPUS|GRES" lines. The lab's jobs are single-node; a line whose
// node list names several servers is counted on none rather than guessed at.
func parseWork(out string) map[string]work {
	w := map[string]work{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 || f[0] == "" || strings.ContainsAny(f[0], "[,") {
			continue
		}
		cpus, _ := strconv.Atoi(f[1])
		cur := w[f[0]]
		cur.jobs++
		cur.cpus += cpus
		cur.gpus += gresGPUs(f[2])
		w[f[0]] = cur
	}
	return w
}

// gresGPUs reads the GPU count of a job's GRES request: "gres:gpu:2", "gres/gpu:1", "gpu:h100:1".
func gresGPUs(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		if !strings.Contains(part, "gpu") {
			continue
		}
		i := strings.LastIndex(part, ":")
		if v, err := strconv.Atoi(part[i+1:]); i >= 0 && err == nil {
			n += v
		} else {
			n++
		}
	}
	return n
}
