package lab

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// MarkerEnv is set, to the lab folder, in the environment of every process the lab starts; the
// processes those start (slurmstepd, jobs) inherit it.
const MarkerEnv = "ROTA_LAB"

// stopGrace is how long a process has to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// proc is one process the lab started, in its own process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs bin with args, its output appended to log/NAME.log, in its own process group,
// with the lab marker and env in its environment.
func (l *Lab) start(name string, env []string, bin string, args ...string) (*proc, error) {
	logFile, err := os.OpenFile(filepath.Join(l.Dir, "log", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(append(os.Environ(), l.env()...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	l.log.WithField("pid", cmd.Process.Pid).WithField("process", name).Debug("started")
	return p, nil
}

// env is what every process the lab starts gets: the marker and Slurm's config.
func (l *Lab) env() []string {
	return []string{MarkerEnv + "=" + l.Dir, "SLURM_CONF=" + l.slurmConf()}
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// stop sends SIGTERM to the process group, then SIGKILL after stopGrace, and waits for the
// process to exit.
func (p *proc) stop() {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// Marked returns the pids of the processes (other than this one) whose environment holds the
// marker for the lab in dir.
func Marked(dir string) ([]int, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("finding lab processes: %w", err)
	}
	want := []byte(MarkerEnv + "=" + abs + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("finding lab processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		// A process that ended meanwhile, or another user's, is simply not ours.
		if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil && bytes.Contains(env, want) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// KillMarked sends SIGKILL to every marked process of the lab in dir (Marked) and returns how
// many it signalled. It ends what a lab left behind: the jobs' slurmstepd, or everything when
// the lab's supervisor itself was killed.
func KillMarked(dir string) (int, error) {
	pids, err := Marked(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("killing pid %d: %w", pid, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
