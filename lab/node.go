package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
)

// node is one lab server: its files and what the lab last did with it.
type node struct {
	name    string
	pool    *config.Pool
	ep      bmc.Endpoint
	addr    string // its exporter's host:port
	dir     string
	power   bool // the power last written to the power log
	on      bool // its slurmd and exporter run
	reading *readings
}

func (n *node) powerFile() string { return filepath.Join(n.dir, "power") }
func (n *node) procDir() string   { return filepath.Join(n.dir, "proc") }
func (n *node) gpuFile() string   { return filepath.Join(n.dir, "gpus.json") }

// PowerLog is the file the lab appends "RFC3339-time node On|Off" to on each power change it
// sees (and once per server at start), under the lab folder.
func PowerLog(dir string) string { return filepath.Join(dir, "power.log") }

// prepareNodes makes each server's folder, its initial power file and readings, and logs its
// initial power.
func (l *Lab) prepareNodes() error {
	now := l.opts.Clock.Now()
	floor := map[string]int{}
	for i := range l.Config.Pools {
		p := &l.Config.Pools[i]
		for _, n := range p.Nodes {
			on := false
			switch l.opts.On {
			case "all":
				on = true
			case "floor":
				on = floor[p.Name] < p.Min
				floor[p.Name]++
			case "", "none":
			default:
				return fmt.Errorf("unknown initial power %q (want all, none or floor)", l.opts.On)
			}
			nd := &node{name: n.Name, pool: p, ep: n.BMC, addr: n.Exporter, dir: filepath.Join(l.Dir, "nodes", n.Name),
				reading: newReadings(p.Profile)}
			if err := os.MkdirAll(nd.procDir(), 0o755); err != nil {
				return fmt.Errorf("preparing %s: %w", n.Name, err)
			}
			if err := writePower(nd.powerFile(), on); err != nil {
				return err
			}
			if err := nd.reading.write(nd.procDir(), nd.gpuFile()); err != nil {
				return err
			}
			if err := l.logPower(nd, now, on); err != nil {
				return err
			}
			l.nodes = append(l.nodes, nd)
		}
	}
	return nil
}

// writePower writes On or Off, replacing the file atomically.
func writePower(path string, on bool) error {
	s := "Off"
	if on {
		s = "On"
	}
	return writeAtomic(path, []byte(s+"\n"))
}

// readPower reads a power file: On (any case) is on, anything else off.
func readPower(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("reading power: %w", err)
	}
	return strings.EqualFold(strings.TrimSpace(string(b)), "on"), nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tickLoop reconciles and rewrites readings every tick until ctx ends.
func (l *Lab) tickLoop(ctx context.Context) {
	defer close(l.tickDone)
	t := time.NewTicker(l.opts.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := l.reconcile(ctx); err != nil && ctx.Err() == nil {
			l.log.WithError(err).Warn("lab tick")
		}
	}
}

// reconcile starts or stops each server's slurmd and exporter to match its power file, and
// rewrites the readings of the servers that are on from what Slurm runs on them.
func (l *Lab) reconcile(ctx context.Context) error {
	read := l.runningWork
	if l.opts.Profile == ProfileKubernetes {
		read = l.kubelets
	}
	running, err := read(ctx)
	if err != nil {
		// The job manager busy or restarting: each server keeps its last known work, so a
		// slow read never makes a busy server look idle.
		l.log.WithError(err).Warn("reading the running jobs; keeping each server's last known work")
		running = nil
	}
	now := l.opts.Clock.Now()
	for _, n := range l.nodes {
		on, perr := readPower(n.powerFile())
		if perr != nil {
			return perr
		}
		if on != n.power {
			if err := l.logPower(n, now, on); err != nil {
				return err
			}
		}
		if on != n.on {
			if err := l.setServer(ctx, n, on); err != nil {
				return err
			}
		}
		if !n.on {
			continue
		}
		if running != nil {
			n.reading.advance(now, running[n.name])
		} else {
			n.reading.advance(now, n.reading.last)
		}
		if err := n.reading.write(n.procDir(), n.gpuFile()); err != nil {
			return fmt.Errorf("writing readings of %s: %w", n.name, err)
		}
	}
	return nil
}

// logPower appends the server's power to the power log.
func (l *Lab) logPower(n *node, now time.Time, on bool) error {
	n.power = on
	line := fmt.Sprintf("%s %s %s", now.UTC().Format(time.RFC3339Nano), n.name, map[bool]string{true: "On", false: "Off"}[on])
	if err := appendLine(PowerLog(l.Dir), line); err != nil {
		return fmt.Errorf("writing the power log: %w", err)
	}
	return nil
}

// setServer starts (power on) or stops (power off) the server's agent (its slurmd, or its
// kubelet's part in the Kubernetes profile) and exporter.
func (l *Lab) setServer(ctx context.Context, n *node, on bool) error {
	slurmd, exporter := "slurmd-"+n.name, "exporter-"+n.name
	kube := l.opts.Profile == ProfileKubernetes
	if !on {
		l.log.WithField("server", n.name).Info("power off: stopping its agent and exporter")
		_ = l.Stop(exporter)
		if kube {
			// Kept on until its Node says so: a failed write is tried again next tick.
			if err := l.setKubelet(ctx, n.name, false); err != nil {
				return err
			}
		} else {
			_ = l.Stop(slurmd)
		}
		n.on = false
		return nil
	}
	l.log.WithField("server", n.name).Info("power on: starting its agent and exporter")
	if kube {
		if err := l.setKubelet(ctx, n.name, true); err != nil {
			return err
		}
	} else if err := l.run(slurmd, nil, l.tools.slurmd, "-D", "-f", l.slurmConf(), "-N", n.name); err != nil {
		return err
	}
	args := []string{"--web.listen-address=" + n.addr, "--path.procfs=" + n.procDir()}
	env := []string{GPUsEnv + "=0"}
	if g := n.pool.Profile.GPUs; g > 0 {
		env = []string{fmt.Sprintf("%s=%d", GPUsEnv, g), GPUFileEnv + "=" + n.gpuFile()}
	} else {
		args = append(args, "--no-collector.gpu")
	}
	if err := l.run(exporter, env, l.tools.exporter, args...); err != nil {
		return err
	}
	n.on = true
	return nil
}
