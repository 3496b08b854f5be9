package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/lab"
)

// upCommand starts `rota-lab up` (the fleet without rota, the floor on) on dir and waits until
// it has written its env file.
func upCommand(t *testing.T, dir string) (*exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bins, "rota-lab"), "--dir", dir, "up", "--root", testutil.RepoRoot(t),
		"--bin", bins, "--on", "floor", "--no-rota")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_, _ = lab.KillMarked(dir)
		if t.Failed() {
			t.Logf("--- rota-lab up ---\n%s", tail(out.String(), 4000))
		}
	})
	testutil.Eventually(t, 3*time.Minute, "rota-lab up ready", func() error {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("rota-lab up exited: %v", err)
		default:
		}
		_, err := os.Stat(filepath.Join(dir, "env"))
		return err
	})
	return cmd, done
}

// TestLabCommandStopsEverything: `rota-lab up` stopped with SIGINT (Ctrl-C) ends every process
// the lab started, a running job's included; started again on the same folder, it starts clean.
func TestLabCommandStopsEverything(t *testing.T) {
	t.Parallel()
	tmp, err := os.MkdirTemp("", "rotalab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	dir := filepath.Join(tmp, "lab")
	if _, err := exec.LookPath("slurmctld"); err != nil {
		testutil.Missing(t, "slurmctld", "make tools")
	}

	cmd, done := upCommand(t, dir)
	out, err := exec.Command(filepath.Join(bins, "rota-lab"), "--dir", dir, "workload", "--light", "1", "--heavy", "0", "--light.runtime", "5m").CombinedOutput()
	if err != nil {
		t.Fatalf("rota-lab workload: %v: %s", err, out)
	}
	testutil.Eventually(t, time.Minute, "the job running", func() error {
		o, err := lab.SlurmCommand(t.Context(), dir, "squeue", "--noheader", "--states=RUNNING", "--format=%i")
		if err != nil || strings.TrimSpace(o) == "" {
			return fmt.Errorf("not running yet: %v", err)
		}
		return nil
	})
	before, err := lab.Marked(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("rota-lab up after SIGINT: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("rota-lab up did not stop within a minute of SIGINT")
	}
	if left, err := lab.Marked(dir); err != nil || len(left) != 0 {
		t.Errorf("after SIGINT, %d lab processes left (of %d before): %v %v", len(left), len(before), left, err)
	}

	upCommand(t, dir)
	changes, err := lab.ReadPowerLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 7 {
		t.Errorf("second start: power log has %d lines, want the 7 servers' initial power only", len(changes))
	}
}
