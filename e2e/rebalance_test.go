package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/lab"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

// TestLightWorkLeavesTheGPUServer is the lab's rebalancing scenario (rota-lab up --rebalance):
// with the whole fleet on, a light requeueable job lands on gpu01 (everything else held by a
// person) and a light job that may not be requeued lands on gpu02. Once the holds are lifted,
// rota moves the first to the CPU tier (requeued away from the GPU pool), drains gpu01 and
// powers it off; the second is never moved, its refusal named in explain and the audit
// history, and gpu02 stays on with it. Nothing is killed.
func TestLightWorkLeavesTheGPUServer(t *testing.T) {
	t.Parallel()
	l := startLab(t, "all", false, func(o *lab.Options) { o.Rebalance = true })
	ctx := context.Background()
	slurmDo := func(args ...string) string {
		t.Helper()
		out, err := lab.SlurmCommand(ctx, l.Dir, args[0], args[1:]...)
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	testutil.Eventually(t, time.Minute, "rota's first pass", func() error {
		st, err := status(t, l)
		if err == nil && !st.LastPassOK {
			err = fmt.Errorf("last pass not ok")
		}
		return err
	})
	hold := func(nodes string) {
		slurmDo("scontrol", "update", "nodename="+nodes, "state=drain", "reason=held by the test")
	}
	lift := func(nodes string) { slurmDo("scontrol", "update", "nodename="+nodes, "state=resume") }

	hold("cpu[01-04],gpu[01,03]")
	stayer := submit(t, l, lab.Job{Kind: "light", CPUs: 2, Runtime: 10 * time.Minute, Args: []string{"--no-requeue", "--time=15"}})[0]
	waitRunning(t, l, stayer, "gpu02")
	hold("gpu02")
	lift("gpu01")
	mover := submit(t, l, lab.Job{Kind: "light", CPUs: 2, Runtime: 10 * time.Minute, Args: []string{"--requeue", "--time=15"}})[0]
	waitRunning(t, l, mover, "gpu01")
	t.Cleanup(func() { _, _ = lab.SlurmCommand(ctx, l.Dir, "scancel", mover, stayer) })
	lift("cpu[01-04],gpu[02-03]")

	// The light job leaves gpu01 for a CPU server, and gpu01 goes off.
	testutil.Eventually(t, 4*time.Minute, "the moved job running on a CPU server and gpu01 off", func() error {
		on := jobNode(t, l, mover)
		if !strings.HasPrefix(on, "cpu") {
			return fmt.Errorf("job %s on %q", mover, on)
		}
		if slices.Contains(powered(t, l)["gpu"], "gpu01") {
			return fmt.Errorf("gpu01 still on")
		}
		return nil
	})
	if out := slurmDo("squeue", "--noheader", "--jobs="+mover, "--format=%x"); !strings.Contains(out, "gpu") {
		t.Errorf("the moved job excludes %q, want the GPU pool", out)
	}
	ex, err := client(t, l).Explain(ctx, "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	if !historyHas(ex.History, fleet.Move, "succeeded") || !historyHas(ex.History, fleet.PowerOff, "succeeded") {
		t.Errorf("gpu01's history lacks the move and the power-off: %+v", ex.History)
	}

	// The job that may not be requeued was never moved, and keeps gpu02 on.
	if on := jobNode(t, l, stayer); on != "gpu02" {
		t.Fatalf("the job that may not be requeued runs on %q, want gpu02", on)
	}
	if out := slurmDo("scontrol", "show", "job", stayer); !strings.Contains(out, "Restarts=0") {
		t.Errorf("the job that may not be requeued restarted:\n%s", out)
	}
	if !slices.Contains(powered(t, l)["gpu"], "gpu02") {
		t.Error("gpu02 went off with a job on it")
	}
	testutil.Eventually(t, time.Minute, "gpu02's refusal explained", func() error {
		ex, err := client(t, l).Explain(ctx, "gpu02")
		if err != nil {
			return err
		}
		if ex.Skip == nil || ex.Skip.Reason != fleet.SkipNotRequeueable || !historyHas(ex.History, fleet.Move, "refused") {
			return fmt.Errorf("gpu02: skip %+v, history %+v", ex.Skip, ex.History)
		}
		return nil
	})
	states, err := slurmNodes(t, l)
	if err != nil {
		t.Fatal(err)
	}
	if s := states[jobNode(t, l, mover)]; strings.Contains(s, "drain") {
		t.Errorf("the server the work moved to is %s", s)
	}
}

// waitRunning waits until job id runs on node.
func waitRunning(t *testing.T, l *lab.Lab, id, node string) {
	t.Helper()
	testutil.Eventually(t, time.Minute, "job "+id+" running on "+node, func() error {
		if on := jobNode(t, l, id); on != node {
			return fmt.Errorf("on %q", on)
		}
		return nil
	})
}

// jobNode is the node a running job runs on ("" when it is not running).
func jobNode(t *testing.T, l *lab.Lab, id string) string {
	t.Helper()
	out, err := lab.SlurmCommand(context.Background(), l.Dir, "squeue", "--noheader", "--jobs="+id, "--states=RUNNING", "--format=%N")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func historyHas(h []api.AuditRecord, kind fleet.Kind, result string) bool {
	for _, r := range h {
		if r.Action == kind && r.Result == result {
			return true
		}
	}
	return false
}
