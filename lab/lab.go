package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/rotahq/rota/scaler/config"
)

// Clock is the lab's time source (the wall clock in cmd/, so this package reads no time).
type Clock interface {
	Now() time.Time
}

// Options say where the lab lives and what it starts.
type Options struct {
	// Dir is the lab folder. Whatever a previous lab left there is ended and removed.
	Dir string
	// Root is the repository root: deploy/ is read from there.
	Root string
	// BinDir holds rota, rota-lab-exporter and rota-redfish-emulator.
	BinDir string
	// Template is the lab config template (default Root/deploy/lab/rota.yml.tmpl).
	Template string
	// On names the servers powered on at start: "all", "none" or "floor" (each pool's min).
	On string
	// NoRota starts everything but rota (the fleet alone, for rotactl power or a test).
	NoRota bool
	// Profile is the job manager the lab runs: ProfileSlurm (default) or ProfileKubernetes.
	Profile string
	// Rebalance turns rota's moves on (and the Slurm weights that steer new work to the cheap
	// tier): light work leaves the GPU servers, which then power off.
	Rebalance bool
	// Tick is how often power is reconciled and readings rewritten (default 1s).
	Tick  time.Duration
	Clock Clock
	Log   *logrus.Entry
}

// Lab is a running lab. Its methods are safe for concurrent use.
type Lab struct {
	// Dir is the lab folder (absolute); ConfigFile is rota's config in it, and Config that file
	// loaded.
	Dir        string
	ConfigFile string
	Config     *config.Config
	// Ports are the ports chosen for the lab's placeholders.
	Ports *Ports

	opts  Options
	log   *logrus.Entry
	tools tools
	// kube is the administrator's client of the Kubernetes profile's cluster.
	kube *k8s.Clientset

	mu    sync.Mutex
	procs map[string]*proc
	specs map[string]procSpec
	nodes []*node

	stopTick context.CancelFunc
	tickDone chan struct{}
}

// procSpec is how to (re)start one named process.
type procSpec struct {
	env  []string
	bin  string
	args []string
}

// Start prepares the lab folder and starts every component, each ready before the next
// starts (Slurm, the BMCs, the powered-on servers, Prometheus, Alertmanager, rota), then
// reconciles servers with their power every tick until Close. On error, whatever started is
// stopped again.
func Start(ctx context.Context, opts Options) (l *Lab, err error) {
	if opts.Tick == 0 {
		opts.Tick = time.Second
	}
	if opts.Profile == "" {
		opts.Profile = ProfileSlurm
	}
	if opts.Profile != ProfileSlurm && opts.Profile != ProfileKubernetes {
		return nil, fmt.Errorf("lab profile %q is not %s or %s", opts.Profile, ProfileSlurm, ProfileKubernetes)
	}
	if opts.Template == "" {
		opts.Template = filepath.Join(opts.Root, "deploy", "lab", "rota.yml.tmpl")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("lab folder: %w", err)
	}
	l = &Lab{Dir: dir, Ports: NewPorts(), opts: opts, log: opts.Log, procs: map[string]*proc{}, specs: map[string]procSpec{}}
	if l.tools, err = findTools(opts); err != nil {
		return nil, err
	}
	if err := l.prepare(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{opts.Profile, l.startJobManager},
		{"ipmi BMCs", l.startIPMI},
		{"redfish BMCs", l.startRedfish},
		{"servers", func(context.Context) error { return l.reconcile(ctx) }},
		{"prometheus", l.startPrometheus},
		{"alertmanager", l.startAlertmanager},
		{"rota", l.startRota},
	}
	for _, s := range steps {
		if s.name == "rota" && opts.NoRota {
			continue
		}
		if err := s.fn(ctx); err != nil {
			return l, fmt.Errorf("starting %s: %w", s.name, err)
		}
		l.log.WithField("component", s.name).Info("lab component ready")
	}
	tickCtx, cancel := context.WithCancel(context.Background())
	l.stopTick, l.tickDone = cancel, make(chan struct{})
	go l.tickLoop(tickCtx)
	return l, nil
}

// prepare ends and removes a previous lab in the folder, then writes the config, secrets and
// each server's files.
func (l *Lab) prepare() error {
	if _, err := os.Stat(l.Dir); err == nil {
		if _, err := KillMarked(l.Dir); err != nil {
			return err
		}
		if err := os.RemoveAll(l.Dir); err != nil {
			return fmt.Errorf("removing the previous lab: %w", err)
		}
	}
	for _, d := range []string{"log", "secrets", "rota", "slurm/dev", "kubernetes", "redfish", "prometheus/rules", "prometheus/targets", "prometheus/data", "alertmanager/data"} {
		if err := os.MkdirAll(filepath.Join(l.Dir, d), 0o755); err != nil {
			return fmt.Errorf("preparing the lab folder: %w", err)
		}
	}
	tmpl, err := os.ReadFile(l.opts.Template)
	if err != nil {
		return fmt.Errorf("reading the lab config: %w", err)
	}
	text, err := Expand(string(tmpl), l.Dir, l.Ports, Vars{Rebalance: l.opts.Rebalance, Adapter: l.opts.Profile})
	if err != nil {
		return fmt.Errorf("expanding %s: %w", l.opts.Template, err)
	}
	l.ConfigFile = filepath.Join(l.Dir, "rota.yml")
	if err := os.WriteFile(l.ConfigFile, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing the lab config: %w", err)
	}
	if l.Config, err = config.Load(l.ConfigFile); err != nil {
		return err
	}
	// IPMI passwords are at most 20 bytes: the BMC's gets 8 random bytes (16 hex digits).
	for s, n := range map[string]int{"api.token": 16, "webhook.token": 16, "bmc.password": 8} {
		if err := writeSecret(filepath.Join(l.Dir, "secrets", s), n); err != nil {
			return err
		}
	}
	return l.prepareNodes()
}

// writeSecret writes n random bytes, hex-encoded, readable by the owner only.
func writeSecret(path string, n int) error {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// secret reads one of the lab's secrets.
func (l *Lab) secret(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(l.Dir, "secrets", name))
	if err != nil {
		return "", fmt.Errorf("reading secret: %w", err)
	}
	return string(trimNL(b)), nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// run starts a named process and keeps it, so that Stop, Kill and Restart find it by name.
func (l *Lab) run(name string, env []string, bin string, args ...string) error {
	p, err := l.start(name, env, bin, args...)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.procs[name] = p
	l.specs[name] = procSpec{env: env, bin: bin, args: args}
	if err := appendLine(filepath.Join(l.Dir, "pids"), fmt.Sprintf("%d %s", p.cmd.Process.Pid, name)); err != nil {
		l.log.WithError(err).Warn("recording pid")
	}
	return nil
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

// Stop stops the named process (SIGTERM, then SIGKILL) and waits for it to exit.
func (l *Lab) Stop(name string) error {
	p := l.take(name)
	if p == nil {
		return fmt.Errorf("stopping %s: not running", name)
	}
	p.stop()
	return nil
}

// take removes the named process from the lab's table and returns it (nil when not running).
func (l *Lab) take(name string) *proc {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.procs[name]
	delete(l.procs, name)
	return p
}

// Kill sends SIGKILL to the named process (as a crash would) and waits for it to exit.
func (l *Lab) Kill(name string) error {
	p := l.take(name)
	if p == nil {
		return fmt.Errorf("killing %s: not running", name)
	}
	p.signal(syscall.SIGKILL)
	<-p.done
	return nil
}

// Restart starts the named process again with the arguments it was first started with.
func (l *Lab) Restart(name string) error {
	l.mu.Lock()
	spec, ok := l.specs[name]
	_, running := l.procs[name]
	l.mu.Unlock()
	if !ok || running {
		return fmt.Errorf("restarting %s: unknown or still running", name)
	}
	return l.run(name, spec.env, spec.bin, spec.args...)
}

// Running reports whether the named process runs.
func (l *Lab) Running(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.procs[name]
	return p != nil && p.running()
}

// Close stops the tick, cancels every job, stops every process in the reverse order of their
// start, then ends whatever still carries the lab's marker (jobs, slurmstepd). Idempotent.
func (l *Lab) Close() {
	if l.stopTick != nil {
		l.stopTick()
		<-l.tickDone
		l.stopTick = nil
	}
	if l.opts.Profile == ProfileSlurm && l.Running("slurmctld") {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = l.slurm(ctx, "scancel", "--quiet", "--user=root")
		cancel()
	}
	for _, name := range []string{"rota", "alertmanager", "prometheus"} {
		_ = l.Stop(name)
	}
	l.mu.Lock()
	var rest []*proc
	for name, p := range l.procs {
		rest = append(rest, p)
		delete(l.procs, name)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range rest {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
	if n, err := KillMarked(l.Dir); err != nil || n > 0 {
		l.log.WithError(err).WithField("processes", n).Debug("ended leftover lab processes")
	}
}

// waitFor polls cond every 100ms until it returns nil, ctx ends or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not reached within %s: %w", what, timeout, err)
		case <-t.C:
		}
	}
}
