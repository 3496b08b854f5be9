package slurm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/internal/slurmcli/slurmclitest"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/jobs"
)

// fakeSlurm answers Slurm commands from canned outputs, by command name, and records the
// scontrol updates and requeues it was asked for.
type fakeSlurm struct {
	sinfo, squeue, config string
	// excludes answers squeue's exclusions (slurmcli.ExcludeArgs), "id<Sep>hostlist" lines.
	excludes string
	fail     map[string]error
	calls    []string
}

func (f *fakeSlurm) run(_ context.Context, name string, args ...string) ([]byte, error) {
	if err := f.fail[name]; err != nil {
		return nil, err
	}
	switch {
	case name == "sinfo":
		return slurmclitest.Sinfo(f.sinfo), nil
	case name == "squeue" && slices.Equal(args, slurmcli.ExcludeArgs()):
		return []byte(f.excludes), nil
	case name == "squeue":
		return slurmclitest.Squeue(f.squeue), nil
	case name == "scontrol" && args[0] == "show":
		return []byte(f.config), nil
	}
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	return nil, nil
}

func newFake(t *testing.T, f *fakeSlurm, requeue bool) *Manager {
	t.Helper()
	return New(Options{Run: f.run, Classify: (&config.Config{Classes: config.DefaultClasses()}).Classify,
		Requeue: requeue, Log: logrus.NewEntry(logrus.New())})
}

const (
	idleNode      = "n1|batch|idle|0/2/0/2|gpu:0|none\n"
	personDrained = "n1|batch|idle+drain|0/0/2/2|gpu:0|disk swap (bob)\n"
	rotaDrained   = "n1|batch|idle+drain|0/0/2/2|gpu:0|rota: idle\n"
	rotaDraining  = "n1|batch|mixed+drain|1/1/0/2|gpu:0|rota: light work\n"
	running       = "7|batch|RUNNING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51|n1|None\n" +
		"8|batch|RUNNING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|0|(null)|2026-11-29T22:00:51|n1|None\n" +
		"9|batch|RUNNING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51|n2|None\n"
)

func TestManagerActions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		sinfo, config string
		act           func(*Manager) error
		wantErr       error
		wantCalls     []string
	}{
		{name: "drain an idle node", sinfo: idleNode,
			act:       func(m *Manager) error { return m.Drain(ctx, "n1", "idle for 10m") },
			wantCalls: []string{"scontrol update nodename=n1 state=drain reason=rota: idle for 10m"}},
		{name: "drain again does nothing", sinfo: rotaDrained,
			act: func(m *Manager) error { return m.Drain(ctx, "n1", "idle") }},
		{name: "drain never takes over a person's drain", sinfo: personDrained,
			act: func(m *Manager) error { return m.Drain(ctx, "n1", "idle") }, wantErr: jobs.ErrNotOurs},
		{name: "resume rota's drain", sinfo: rotaDrained,
			act:       func(m *Manager) error { return m.Resume(ctx, "n1") },
			wantCalls: []string{"scontrol update nodename=n1 state=resume"}},
		{name: "resume rota's drain still under way", sinfo: rotaDraining,
			act:       func(m *Manager) error { return m.Resume(ctx, "n1") },
			wantCalls: []string{"scontrol update nodename=n1 state=resume"}},
		{name: "resume a node not drained does nothing", sinfo: idleNode,
			act: func(m *Manager) error { return m.Resume(ctx, "n1") }},
		{name: "resume never undoes a person's drain", sinfo: personDrained,
			act: func(m *Manager) error { return m.Resume(ctx, "n1") }, wantErr: jobs.ErrNotOurs},
		{name: "unknown node", sinfo: "",
			act: func(m *Manager) error { return m.Drain(ctx, "n9", "idle") }, wantErr: ErrUnknownNode},
		{name: "hostlist is not a node name", sinfo: idleNode,
			act: func(m *Manager) error { return m.Drain(ctx, "n[1-2]", "idle") }, wantErr: ErrUnknownNode},
		{name: "powered off with power saving on", sinfo: rotaDrained, config: slurmclitest.PowerSaveOn,
			act:       func(m *Manager) error { return m.PoweredOff(ctx, "n1") },
			wantCalls: []string{"scontrol update nodename=n1 state=power_down"}},
		{name: "powered off with power saving off", sinfo: rotaDrained, config: slurmclitest.PowerSaveOff,
			act:       func(m *Manager) error { return m.PoweredOff(ctx, "n1") },
			wantCalls: []string{"scontrol update nodename=n1 state=drain reason=rota: powered off"}},
		{name: "powered off, node excluded from power saving", sinfo: rotaDrained,
			config:    strings.Replace(slurmclitest.PowerSaveOn, "SuspendTime ", "SuspendExcNodes = n[1-2]:1\nSuspendTime ", 1),
			act:       func(m *Manager) error { return m.PoweredOff(ctx, "n1") },
			wantCalls: []string{"scontrol update nodename=n1 state=drain reason=rota: powered off"}},
		{name: "powered off, partition excluded from power saving", sinfo: rotaDrained,
			config:    strings.Replace(slurmclitest.PowerSaveOn, "SuspendTime ", "SuspendExcParts = debug,batch\nSuspendTime ", 1),
			act:       func(m *Manager) error { return m.PoweredOff(ctx, "n1") },
			wantCalls: []string{"scontrol update nodename=n1 state=drain reason=rota: powered off"}},
		{name: "powered off twice", sinfo: "n1|batch|idle+powered_down|0/2/0/2|gpu:0|rota: idle\n",
			act: func(m *Manager) error { return m.PoweredOff(ctx, "n1") }},
		{name: "powered on resumes rota's drain", sinfo: "n1|batch|down+drain+not_responding|0/0/2/2|gpu:0|rota: powered off\n",
			act:       func(m *Manager) error { return m.PoweredOn(ctx, "n1") },
			wantCalls: []string{"scontrol update nodename=n1 state=resume"}},
		{name: "powered on leaves a powered-down node to slurm", sinfo: "n1|batch|idle+powered_down|0/2/0/2|gpu:0|rota: idle\n",
			act: func(m *Manager) error { return m.PoweredOn(ctx, "n1") }},
		{name: "powered on keeps a person's drain", sinfo: personDrained,
			act: func(m *Manager) error { return m.PoweredOn(ctx, "n1") }, wantErr: jobs.ErrNotOurs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSlurm{sinfo: tc.sinfo, config: tc.config}
			err := tc.act(newFake(t, f, false))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(f.calls, tc.wantCalls) {
				t.Fatalf("calls %q, want %q", f.calls, tc.wantCalls)
			}
		})
	}
}

// TestMove: only requeueable jobs named and still on the node are held, their exclusions
// extended and released; a job a crash left held is finished; the rest is left alone.
func TestMove(t *testing.T) {
	ctx := context.Background()
	held := "10|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||job requeued in held state\n"
	for _, tc := range []struct {
		name      string
		ids       []string
		enabled   bool
		want      int
		wantErr   error
		wantCalls []string
	}{
		{name: "requeueable jobs on the node only", ids: []string{"7", "8", "9"}, enabled: true, want: 1,
			wantCalls: []string{"scontrol requeuehold 7", "scontrol update jobid=7 excnodelist=old1,n1,n3", "scontrol release 7"}},
		{name: "a job a crash left held is finished", ids: []string{"7", "10"}, enabled: true, want: 1,
			wantCalls: []string{"scontrol requeuehold 7", "scontrol update jobid=7 excnodelist=old1,n1,n3",
				"scontrol update jobid=10 excnodelist=n1,n3", "scontrol release 7,10"}},
		{name: "a job not requeueable is never touched", ids: []string{"8"}, enabled: true},
		{name: "jobs gone: nothing to do", ids: []string{"99"}, enabled: true},
		{name: "disabled", ids: []string{"7"}, wantErr: ErrRequeueDisabled},
		{name: "a job id that is not one", ids: []string{"7 --all"}, enabled: true, wantErr: errors.New("bad job id")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSlurm{sinfo: rotaDraining, squeue: running + held, excludes: "7" + slurmcli.Sep + "old1\n8" + slurmcli.Sep + "(null)\n"}
			n, err := newFake(t, f, tc.enabled).Move(ctx, "n1", tc.ids, []string{"n1", "n3"})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != nil && (err == nil || !errors.Is(err, tc.wantErr) && !strings.Contains(err.Error(), tc.wantErr.Error())):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if n != tc.want || !slices.Equal(f.calls, tc.wantCalls) {
				t.Fatalf("moved %d with %q, want %d with %q", n, f.calls, tc.want, tc.wantCalls)
			}
		})
	}
}

// TestReadIsWholeOrNothing: a failing command or one bad line gives an error and no view.
func TestReadIsWholeOrNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		f    fakeSlurm
	}{
		{"sinfo fails", fakeSlurm{fail: map[string]error{"sinfo": errors.New("exit status 1")}, squeue: running}},
		{"squeue fails", fakeSlurm{sinfo: idleNode, fail: map[string]error{"squeue": errors.New("exit status 1")}}},
		{"squeue prints something unexpected", fakeSlurm{sinfo: idleNode, squeue: running + "garbage\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFake(t, &tc.f, false)
			if v, err := m.Nodes(ctx); err == nil || v != nil {
				t.Fatalf("Nodes: %v, %v; want an error and no view", v, err)
			}
			if tc.f.fail["sinfo"] == nil {
				if d, err := m.Demand(ctx); err == nil || d != nil {
					t.Fatalf("Demand: %v, %v; want an error and no demand", d, err)
				}
			}
		})
	}
}
