package slurm

import (
	"context"
	"errors"
	"maps"
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
	// excludes answers squeue's exclusions (slurmcli.ExcludeArgs), "id<Sep>hostlist<Sep>reservations"
	// lines; reservations answers scontrol show reservation -o (a read recorded in calls);
	// comments its admin comments (adminCommentArgs), "id<Sep>comment" lines.
	excludes, reservations, comments string
	fail                             map[string]error
	// refuse fails one call, named as in calls ("scontrol release 7"), once recorded.
	refuse map[string]error
	calls  []string
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
	case name == "squeue" && slices.Equal(args, adminCommentArgs()):
		return []byte(f.comments), nil
	case name == "squeue":
		return slurmclitest.Squeue(f.squeue), nil
	case name == "scontrol" && slices.Equal(args, slurmcli.ReservationArgs()):
		f.calls = append(f.calls, name+" "+strings.Join(args, " "))
		return []byte(f.reservations), nil
	case name == "scontrol" && args[0] == "show":
		return []byte(f.config), nil
	}
	call := name + " " + strings.Join(args, " ")
	f.calls = append(f.calls, call)
	return nil, f.refuse[call]
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
	personFailed  = "n1|batch|idle+fail|0/2/0/2|gpu:0|bad dimm\n"
	personDown    = "n1|batch|down+not_responding|0/0/2/2|gpu:0|bad disk\n"
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
		// A dynamic node (slurmd -Z) deleted while off is unknown until its slurmd registers it
		// again as the server boots: the executor waits for it within the boot timeout.
		{name: "resume of a node slurm does not know yet", sinfo: "",
			act: func(m *Manager) error { return m.Resume(ctx, "n9") }, wantErr: jobs.ErrNotRegistered},
		{name: "powered on, node slurm does not know yet", sinfo: "",
			act: func(m *Manager) error { return m.PoweredOn(ctx, "n9") }, wantErr: jobs.ErrNotRegistered},
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
		// A person's DOWN, FAIL or maintenance is theirs as a drain is: never replaced, never
		// resumed.
		{name: "drain never replaces a person's fail", sinfo: personFailed,
			act: func(m *Manager) error { return m.Drain(ctx, "n1", "idle") }, wantErr: jobs.ErrNotOurs},
		{name: "drain never replaces a person's down", sinfo: personDown,
			act: func(m *Manager) error { return m.Drain(ctx, "n1", "idle") }, wantErr: jobs.ErrNotOurs},
		{name: "drain never replaces a failing node's state", sinfo: "n1|batch|mixed+fail|1/1/0/2|gpu:0|bad dimm\n",
			act: func(m *Manager) error { return m.Drain(ctx, "n1", "idle") }, wantErr: jobs.ErrNotOurs},
		{name: "drain leaves a maintenance reservation's node", sinfo: "n1|batch|idle+maintenance+reserved|0/2/0/2|gpu:0|none\n",
			act: func(m *Manager) error { return m.Drain(ctx, "n1", "idle") }, wantErr: jobs.ErrNotOurs},
		{name: "drain leaves a reserved node", sinfo: "n1|batch|idle+reserved|0/2/0/2|gpu:0|none\n",
			act: func(m *Manager) error { return m.Drain(ctx, "n1", "idle") }, wantErr: jobs.ErrNotOurs},
		{name: "resume never clears a fail set on rota's drain", sinfo: "n1|batch|idle+drain+fail|0/0/2/2|gpu:0|rota: idle\n",
			act: func(m *Manager) error { return m.Resume(ctx, "n1") }, wantErr: jobs.ErrNotOurs},
		{name: "resume never clears a person's down", sinfo: personDown,
			act: func(m *Manager) error { return m.Resume(ctx, "n1") }, wantErr: jobs.ErrNotOurs},
		{name: "powered off keeps a person's down", sinfo: personDown, config: slurmclitest.PowerSaveOn,
			act: func(m *Manager) error { return m.PoweredOff(ctx, "n1") }, wantErr: jobs.ErrNotOurs},
		{name: "powered off keeps a person's drain", sinfo: personDrained, config: slurmclitest.PowerSaveOn,
			act: func(m *Manager) error { return m.PoweredOff(ctx, "n1") }, wantErr: jobs.ErrNotOurs},
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

// TestMove: only requeueable jobs named and still on the node are marked, held, their
// exclusions extended, released and their admin comment given back; a job a crash left held
// with rota's mark is finished; a job held by anyone else is never released; the rest is left
// alone.
func TestMove(t *testing.T) {
	ctx := context.Background()
	const sep = slurmcli.Sep
	held := "10|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||job requeued in held state\n"
	heldAdmin := "10|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||JobHeldAdmin\n"
	released := "10|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||BeginTime\n"
	marked := "10" + sep + "rota: moving off n1\n"
	// An array's task whose own id is the array's (20_3), and a heterogeneous job's first
	// component (21+0): squeue's JobArrayID, its CPUs per GPU and its OverSubscribe end the line.
	full := func(id, element string) string {
		return strings.ReplaceAll(id+"|batch|RUNNING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51|n1|None|"+
			"UNLIMITED|2026-11-29T22:00:54|(null)|(null)|(null)|(null)|1|"+element+"|N/A|OK|root\n", "|", sep)
	}
	for _, tc := range []struct {
		name      string
		squeue    string
		excludes  string
		comments  string
		refuse    map[string]error
		ids       []string
		enabled   bool
		want      int
		wantErr   error
		wantCalls []string
	}{
		{name: "requeueable jobs on the node only", ids: []string{"7", "8", "9"}, enabled: true, want: 1,
			wantCalls: []string{"scontrol update jobid=7 admincomment=rota: moving off n1", "scontrol requeuehold Incomplete 7",
				"scontrol update jobid=7 excnodelist=old1,n1,n3", "scontrol release 7", "scontrol update jobid=7 admincomment="}},
		{name: "a job's own admin comment is kept and given back", ids: []string{"7"}, enabled: true, want: 1,
			comments: "7" + sep + "site: billing 42\n8" + sep + "(null)\n",
			wantCalls: []string{"scontrol update jobid=7 admincomment=rota: moving off n1; was: site: billing 42", "scontrol requeuehold Incomplete 7",
				"scontrol update jobid=7 excnodelist=old1,n1,n3", "scontrol release 7", "scontrol update jobid=7 admincomment=site: billing 42"}},
		{name: "a try cut short after the mark keeps the job's comment", ids: []string{"7"}, enabled: true, want: 1,
			comments: "7" + sep + "rota: moving off n1; was: site: billing 42\n",
			wantCalls: []string{"scontrol update jobid=7 admincomment=rota: moving off n1; was: site: billing 42", "scontrol requeuehold Incomplete 7",
				"scontrol update jobid=7 excnodelist=old1,n1,n3", "scontrol release 7", "scontrol update jobid=7 admincomment=site: billing 42"}},
		{name: "a job a crash left held is finished", squeue: held, comments: marked, ids: []string{"7", "10"}, enabled: true, want: 1,
			wantCalls: []string{"scontrol update jobid=7 admincomment=rota: moving off n1", "scontrol requeuehold Incomplete 7",
				"scontrol update jobid=7 excnodelist=old1,n1,n3", "scontrol update jobid=10 excnodelist=n1,n3", "scontrol release 7,10",
				"scontrol update jobid=7 admincomment=", "scontrol update jobid=10 admincomment="}},
		{name: "a job someone else requeue-held is never released", squeue: held, ids: []string{"10"}, enabled: true},
		{name: "a job someone else held is never released", squeue: heldAdmin, ids: []string{"10"}, enabled: true},
		{name: "a job rota marked and someone held since stays held", squeue: heldAdmin, comments: marked, ids: []string{"10"}, enabled: true,
			wantCalls: []string{"scontrol update jobid=10 admincomment="}},
		{name: "a job released before a crash gets its comment back", squeue: released, comments: marked, ids: []string{"10"}, enabled: true,
			wantCalls: []string{"scontrol update jobid=10 admincomment="}},
		{name: "a job not requeueable is never touched", ids: []string{"8"}, enabled: true},
		{name: "an array's task is named alone, never as its whole array", squeue: full("20", "20_3"), ids: []string{"20"},
			excludes: "20_3" + sep + "old2" + sep + "(null)\n", enabled: true, want: 1,
			wantCalls: []string{"scontrol update jobid=20_3 admincomment=rota: moving off n1", "scontrol requeuehold Incomplete 20_3",
				"scontrol update jobid=20_3 excnodelist=old2,n1,n3", "scontrol release 20_3", "scontrol update jobid=20_3 admincomment="}},
		// Once held, a job is released whatever failed (the move is recorded failed); a release
		// that fails leaves the move unfinished, for the executor to call again.
		{name: "an exclusion Slurm refuses still releases the job", ids: []string{"7", "8"}, enabled: true, want: 1,
			refuse:  map[string]error{"scontrol update jobid=7 excnodelist=old1,n1,n3": errors.New("Invalid node name specified for job 7")},
			wantErr: errors.New("Invalid node name"),
			wantCalls: []string{"scontrol update jobid=7 admincomment=rota: moving off n1", "scontrol requeuehold Incomplete 7",
				"scontrol update jobid=7 excnodelist=old1,n1,n3", "scontrol release 7", "scontrol update jobid=7 admincomment="}},
		{name: "a release that fails keeps rota's mark", ids: []string{"7"}, enabled: true, want: 1,
			refuse:  map[string]error{"scontrol release 7": errors.New("Socket timed out on send/recv operation")},
			wantErr: jobs.ErrMoveUnfinished,
			wantCalls: []string{"scontrol update jobid=7 admincomment=rota: moving off n1", "scontrol requeuehold Incomplete 7",
				"scontrol update jobid=7 excnodelist=old1,n1,n3", "scontrol release 7"}},
		{name: "a heterogeneous job's component is never touched", squeue: full("21", "21+0"), ids: []string{"21"}, enabled: true},
		{name: "jobs gone: nothing to do", ids: []string{"99"}, enabled: true},
		{name: "disabled", ids: []string{"7"}, wantErr: ErrRequeueDisabled},
		{name: "a job id that is not one", ids: []string{"7 --all"}, enabled: true, wantErr: errors.New("bad job id")},
		{name: "admin comments unreadable", ids: []string{"7"}, enabled: true, comments: "garbage\n", wantErr: slurmcli.ErrUnexpected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSlurm{sinfo: rotaDraining, squeue: running + tc.squeue, comments: tc.comments, refuse: tc.refuse,
				excludes: "7" + sep + "old1" + sep + "(null)\n8" + sep + "(null)" + sep + "(null)\n" + tc.excludes}
			n, err := newFake(t, f, tc.enabled).Move(ctx, "n1", tc.ids, []string{"n1", "n3"})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != nil && (err == nil || !errors.Is(err, tc.wantErr) && !strings.Contains(err.Error(), tc.wantErr.Error())):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			case errors.Is(err, jobs.ErrMoveUnfinished) != errors.Is(tc.wantErr, jobs.ErrMoveUnfinished):
				t.Fatalf("error %v: unfinished %v, want %v", err, errors.Is(err, jobs.ErrMoveUnfinished), errors.Is(tc.wantErr, jobs.ErrMoveUnfinished))
			}
			if n != tc.want || !slices.Equal(f.calls, tc.wantCalls) {
				t.Fatalf("moved %d with %q, want %d with %q", n, f.calls, tc.want, tc.wantCalls)
			}
		})
	}
}

// TestParseAdminComments: squeue's admin comments by job id; "(null)" is none, a line without
// the separator continues the comment above, anything else fails.
func TestParseAdminComments(t *testing.T) {
	const sep = slurmcli.Sep
	for _, tc := range []struct {
		name, out string
		want      map[string]string
		wantErr   bool
	}{
		{"no jobs", "", map[string]string{}, false},
		{"none, empty, set", "1" + sep + "(null)\n2" + sep + "\n3_4" + sep + "rota: moving off n1; was: a; b\n",
			map[string]string{"1": "", "2": "", "3_4": "rota: moving off n1; was: a; b"}, false},
		{"a comment over two lines", "1" + sep + "first\nsecond\n2" + sep + "x\n", map[string]string{"1": "first\nsecond", "2": "x"}, false},
		{"a line with no job", "stray\n", nil, true},
		{"an id with a space", "1 2" + sep + "x\n", nil, true},
		{"an id with a tab", "1\t2" + sep + "x\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAdminComments([]byte(tc.out))
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, slurmcli.ErrUnexpected)) {
				t.Fatalf("error %v, want error %v (slurmcli.ErrUnexpected)", err, tc.wantErr)
			}
			if !tc.wantErr && !maps.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzParseAdminComments: any input parses or fails with slurmcli.ErrUnexpected, never panics;
// every id read passes slurmcli.CheckJobID.
func FuzzParseAdminComments(f *testing.F) {
	const sep = slurmcli.Sep
	for _, s := range []string{"", "1" + sep + "(null)\n2" + sep + "\n", "1" + sep + "first\nsecond\n", "stray\n", "1 2" + sep + "x\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		comments, err := parseAdminComments(b)
		if err != nil {
			if !errors.Is(err, slurmcli.ErrUnexpected) {
				t.Fatalf("error %v is not slurmcli.ErrUnexpected", err)
			}
			return
		}
		for id := range comments {
			if slurmcli.CheckJobID(id) != nil {
				t.Fatalf("id %q", id)
			}
		}
	})
}

// longComment is squeue's admin comments of two jobs, the first with a comment of n lines.
func longComment(n int) []byte {
	return []byte("1" + slurmcli.Sep + strings.Repeat("a line of an admin comment, forty bytes\n", n) + "2" + slurmcli.Sep + "x\n")
}

// TestParseAdminCommentsLinear: a comment over many lines is read in allocations that do not
// grow with its lines (it was built by concatenation, one copy of all it held so far per line:
// a 1 MB comment copied about 13 GB).
func TestParseAdminCommentsLinear(t *testing.T) {
	for _, n := range []int{10, 10000} {
		b := longComment(n)
		got, err := parseAdminComments(b)
		if err != nil || len(got["1"]) != 40*n-1 || got["2"] != "x" {
			t.Fatalf("%d lines: %d bytes, %q, %v", n, len(got["1"]), got["2"], err)
		}
		if allocs := testing.AllocsPerRun(5, func() { _, _ = parseAdminComments(b) }); allocs > 16 {
			t.Errorf("a comment of %d lines: %.0f allocations", n, allocs)
		}
	}
}

// BenchmarkParseAdminComments reads a comment of 10,000 lines (400 KB).
func BenchmarkParseAdminComments(b *testing.B) {
	out := longComment(10000)
	b.ReportAllocs()
	for range b.N {
		if _, err := parseAdminComments(out); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMoveMark: the mark names the node and keeps the job's own admin comment, once however
// often it is made.
func TestMoveMark(t *testing.T) {
	for _, c := range []string{"", "site: billing 42", "a; was: b"} {
		m := markFor("gpu01", c)
		if !movedByRota(m) || originalComment(m) != c || markFor("gpu01", m) != m {
			t.Errorf("comment %q: mark %q reads back %q", c, m, originalComment(m))
		}
		if c != "" && movedByRota(c) {
			t.Errorf("%q read as rota's mark", c)
		}
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

// TestDemandWithinReservations: a job waiting for servers that names a reservation (sbatch
// --reservation) is demand only for the reservation's nodes, within its own --nodelist and
// --exclude, and for nothing when none is left or the reservation has ended; a FLEX
// reservation bounds nothing. scontrol is asked for the reservations only when such a job
// waits.
func TestDemandWithinReservations(t *testing.T) {
	ctx := context.Background()
	job := func(id, reason, reqNodes, prio string) string {
		return strings.ReplaceAll(id+"|batch|PENDING|1|2|1|2|cpu=2,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||"+
			reason+"|UNLIMITED|N/A|(null)|"+reqNodes+"|(null)|(null)|"+prio+"|"+id+"|N/A|OK|root\n", "|", slurmcli.Sep)
	}
	apart := func(id, exclude, resv string) string {
		return id + slurmcli.Sep + exclude + slurmcli.Sep + resv + "\n"
	}
	const resv = "ReservationName=r1 StartTime=2026-12-04T17:09:53 EndTime=2026-12-04T18:09:53 Duration=01:00:00 Nodes=n[02-03] NodeCnt=2 CoreCnt=4 Features=(null) PartitionName=(null) Flags=SPEC_NODES TRES=cpu=4 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n" +
		"ReservationName=flex StartTime=2026-12-04T17:09:53 EndTime=2026-12-04T18:09:53 Duration=01:00:00 Nodes=n04 NodeCnt=1 CoreCnt=2 Features=(null) PartitionName=(null) Flags=FLEX,SPEC_NODES TRES=cpu=2 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n"
	for _, tc := range []struct {
		name             string
		squeue, excludes string
		want             []string // each demand's Needs.Nodes
		readsResv        bool
	}{
		{name: "no reservation named: no scontrol read", squeue: job("8", "Resources", "(null)", "1"), excludes: apart("8", "", "(null)"),
			want: []string{""}},
		{name: "a held job's reservation: no scontrol read", squeue: job("8", "JobHeldUser", "(null)", "0"), excludes: apart("8", "", "r1")},
		{name: "the reservation's nodes", squeue: job("8", "Resources", "(null)", "1"), excludes: apart("8", "", "r1"),
			want: []string{"n02,n03"}, readsResv: true},
		{name: "within its nodelist", squeue: job("8", "Resources", "n[03-04]", "1"), excludes: apart("8", "", "r1"),
			want: []string{"n03"}, readsResv: true},
		{name: "within its exclusions", squeue: job("8", "Resources", "(null)", "1"), excludes: apart("8", "n02", "r1"),
			want: []string{"n03"}, readsResv: true},
		{name: "no node of it left", squeue: job("8", "Resources", "n04", "1"), excludes: apart("8", "", "r1"), readsResv: true},
		{name: "ended between the reads", squeue: job("8", "Resources", "(null)", "1"), excludes: apart("8", "", "gone"), readsResv: true},
		{name: "one of two ended", squeue: job("8", "Resources", "(null)", "1"), excludes: apart("8", "", "gone,r1"),
			want: []string{"n02,n03"}, readsResv: true},
		{name: "flex bounds nothing", squeue: job("8", "Resources", "(null)", "1"), excludes: apart("8", "", "r1,flex"),
			want: []string{""}, readsResv: true},
		{name: "beside a job of no reservation", squeue: job("8", "Resources", "(null)", "1") + job("9", "Priority", "(null)", "1"),
			excludes: apart("8", "", "r1"), want: []string{"", "n02,n03"}, readsResv: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSlurm{squeue: tc.squeue, excludes: tc.excludes, reservations: resv}
			demand, err := newFake(t, f, false).Demand(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range demand {
				got = append(got, d.Needs.Nodes)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("demand for nodes %q, want %q (%+v)", got, tc.want, demand)
			}
			if read := slices.Contains(f.calls, "scontrol show reservation -o"); read != tc.readsResv {
				t.Errorf("scontrol show reservation read: %v, want %v", read, tc.readsResv)
			}
		})
	}
	f := &fakeSlurm{squeue: job("8", "Resources", "(null)", "1"), excludes: apart("8", "", "r1"), fail: map[string]error{"scontrol": errors.New("exit status 1")}}
	if d, err := newFake(t, f, false).Demand(ctx); err == nil || d != nil {
		t.Fatalf("Demand with scontrol failing: %v, %v; want an error and no demand", d, err)
	}
}
