package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/lab"
	"github.com/rotahq/rota/scaler/api"
)

// startLab starts a lab with the servers named by on ("all", "floor", "none") powered, and
// rota unless noRota; mods change the lab's options further. Everything stops at cleanup; on
// failure the logs' tails are printed.
func startLab(t *testing.T, on string, noRota bool, mods ...func(*lab.Options)) *lab.Lab {
	t.Helper()
	// A short folder: slurmd's unix socket path must stay under 108 bytes.
	tmp, err := os.MkdirTemp("", "rotalab")
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(tmp, "lab.log"))
	if err != nil {
		t.Fatal(err)
	}
	logger := logrus.New()
	logger.SetOutput(logFile)
	dir := filepath.Join(tmp, "lab")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := lab.Options{Dir: dir, Root: testutil.RepoRoot(t), BinDir: bins, On: on, NoRota: noRota,
		Clock: clock.Real{}, Log: logger.WithField("component", "lab")}
	for _, m := range mods {
		m(&opts)
	}
	l, err := lab.Start(ctx, opts)
	t.Cleanup(func() {
		if l != nil {
			l.Close()
		}
		logFile.Close()
		if t.Failed() {
			for _, f := range []string{filepath.Join(tmp, "lab.log"), filepath.Join(dir, "log", "rota.log"), filepath.Join(dir, "power.log")} {
				if b, err := os.ReadFile(f); err == nil {
					t.Logf("--- %s ---\n%s", f, tail(string(b), 6000))
				}
			}
		}
		os.RemoveAll(tmp)
	})
	var missing *lab.MissingError
	if errors.As(err, &missing) {
		testutil.Missing(t, strings.Join(missing.Programs, ", "), "make tools && make build")
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// client is an API client for the lab's rota.
func client(t *testing.T, l *lab.Lab) *api.Client {
	t.Helper()
	token, err := api.ReadTokenFile(l.APITokenFile())
	if err != nil {
		t.Fatal(err)
	}
	c, err := api.NewClient(l.RotaURL(), token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// status asks the lab's rota for its status.
func status(t *testing.T, l *lab.Lab) (api.Status, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client(t, l).Status(ctx)
}

// powered returns the servers whose power file says On now, by pool.
func powered(t *testing.T, l *lab.Lab) map[string][]string {
	t.Helper()
	changes, err := lab.ReadPowerLog(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]bool{}
	for _, c := range changes {
		on[c.Node] = c.On
	}
	out := map[string][]string{}
	for _, p := range l.Config.Pools {
		for _, n := range p.Nodes {
			if on[n.Name] {
				out[p.Name] = append(out[p.Name], n.Name)
			}
		}
	}
	return out
}

// poweredOnSince returns the servers the lab saw power on after since.
func poweredOnSince(t *testing.T, l *lab.Lab, since time.Time) map[string]bool {
	t.Helper()
	changes, err := lab.ReadPowerLog(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range changes {
		if c.On && c.At.After(since) {
			out[c.Node] = true
		}
	}
	return out
}

// submit submits jobs to the lab and returns their ids.
func submit(t *testing.T, l *lab.Lab, jobs ...lab.Job) []string {
	t.Helper()
	ids, err := lab.Submit(context.Background(), l.Dir, jobs...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// repeat returns n copies of j.
func repeat(n int, j lab.Job) []lab.Job {
	out := make([]lab.Job, n)
	for i := range out {
		out[i] = j
	}
	return out
}

// waitJobsFinished waits until Slurm's completion log holds n records, and fails the test if
// any job ended other than COMPLETED.
func waitJobsFinished(t *testing.T, l *lab.Lab, n int, timeout time.Duration) {
	t.Helper()
	var s lab.Summary
	testutil.Eventually(t, timeout, fmt.Sprintf("%d jobs finished", n), func() error {
		var err error
		if s, err = lab.Summarize(l.Config, l.Dir, time.Now()); err != nil {
			return err
		}
		done := 0
		for _, c := range s.Jobs {
			done += c
		}
		if done < n {
			return fmt.Errorf("%d of %d finished: %v", done, n, s.Jobs)
		}
		return nil
	})
	if s.Killed() != 0 || s.Jobs["COMPLETED"] != n {
		t.Errorf("Slurm's record: %v; want all %d COMPLETED, none killed or failed", s.Jobs, n)
	}
}

// slurmNodes returns each node's state as sinfo prints it (idle, alloc, drain, down*, ...).
func slurmNodes(t *testing.T, l *lab.Lab) (map[string]string, error) {
	t.Helper()
	out, err := lab.SlurmCommand(context.Background(), l.Dir, "sinfo", "--noheader", "--Node", "--format=%N|%t")
	if err != nil {
		return nil, err
	}
	states := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if n, s, ok := strings.Cut(line, "|"); ok {
			states[n] = s
		}
	}
	return states, nil
}
