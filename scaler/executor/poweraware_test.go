package executor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// powerAware is the world's job manager that also wants to hear of power-offs, as Slurm does.
type powerAware struct {
	*executortest.World
	mu   sync.Mutex
	told []string
	err  error
}

func (p *powerAware) PoweredOff(_ context.Context, node string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.told = append(p.told, node)
	return p.err
}

// TestPowerAwareJobManagerIsTold: a confirmed power-off, and one that repair finds done after
// a crash, are told to a job manager that keeps its own view of power; its failure changes
// nothing (the server is off and recorded so).
func TestPowerAwareJobManagerIsTold(t *testing.T) {
	cases := []struct {
		name  string
		crash bool
		err   error
	}{
		{"confirmed power-off", false, nil},
		{"power-off finished by repair", true, nil},
		{"job manager refuses the news", false, errors.New("slurmctld down")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			f.draining("cpu01")
			f.world.Set("cpu01", func(s *executortest.Server) { s.Drained = true })
			pa := &powerAware{World: f.world, err: tc.err}
			logger, _ := logtest.NewNullLogger()
			var fault func(string, fleet.Kind, Step) error
			if tc.crash {
				fault = func(_ string, _ fleet.Kind, s Step) error {
					if s == StepSent {
						return errCrash
					}
					return nil
				}
			}
			ex, err := New(Options{Store: f.st, Power: f.world, Jobs: pa, Config: f.cfg, Clock: f.clock,
				Log: logger.WithField("component", "executor"), Fault: fault})
			if err != nil {
				t.Fatal(err)
			}
			err = ex.run(context.Background(), act(fleet.PowerOff, "cpu01"))
			if tc.crash {
				if !errors.Is(err, errCrash) {
					t.Fatalf("err = %v, want the injected crash", err)
				}
				if len(pa.told) != 0 {
					t.Fatalf("told before the power-off was recorded: %v", pa.told)
				}
				ex, err = New(Options{Store: f.st, Power: f.world, Jobs: pa, Config: f.cfg, Clock: f.clock,
					Log: logger.WithField("component", "executor")})
				if err != nil {
					t.Fatal(err)
				}
				if err := ex.Repair(context.Background(), f.observe()); err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if f.world.Get("cpu01").Power != bmc.StateOff || f.node("cpu01").State != fleet.StateOff {
				t.Fatalf("cpu01 not off: world %+v, store %+v", f.world.Get("cpu01"), f.node("cpu01"))
			}
			if len(pa.told) != 1 || pa.told[0] != "cpu01" {
				t.Errorf("job manager told %v, want [cpu01] once", pa.told)
			}
		})
	}
}

// continuer is the world's job manager whose drain moves work itself, as Kubernetes evicts.
type continuer struct {
	*executortest.World
	mu    sync.Mutex
	asked []string
	err   error
}

func (c *continuer) ContinueDrain(_ context.Context, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, node)
	return c.err
}

// TestRepairContinuesDrains: each repair asks a job manager whose drain moves work itself to go
// on with every drain rota has under way (a disruption budget may have held work back), and
// only those: not a server On, not one past its drain timeout (resumed instead), not in dry
// run (given back), not blind (the job manager unread). Its failure is logged and changes
// nothing.
func TestRepairContinuesDrains(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dryRun bool
		blind  bool
		late   bool
		err    error
		want   []string
		wantSt fleet.State
	}{
		{name: "a drain under way", want: []string{"cpu01"}, wantSt: fleet.StateDraining},
		{name: "the job manager refuses", err: errors.New("apiserver 500"), want: []string{"cpu01"}, wantSt: fleet.StateDraining},
		{name: "job manager not read", blind: true, wantSt: fleet.StateDraining},
		{name: "past the drain timeout", late: true, wantSt: fleet.StateOn},
		{name: "dry run", dryRun: true, wantSt: fleet.StateOn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, true, func(c *config.Config) { c.Policy.DryRun = tc.dryRun })
			f.draining("cpu01")
			if tc.late {
				f.clock.Advance(time.Hour)
			}
			dc := &continuer{World: f.world, err: tc.err}
			logger, _ := logtest.NewNullLogger()
			ex, err := New(Options{Store: f.st, Power: f.world, Jobs: dc, Config: f.cfg, Clock: f.clock, Log: logger.WithField("component", "executor")})
			if err != nil {
				t.Fatal(err)
			}
			obs := f.observe()
			obs.JobsKnown = !tc.blind
			if err := ex.Repair(context.Background(), obs); err != nil {
				t.Fatal(err)
			}
			ex.Wait()
			if !slices.Equal(dc.asked, tc.want) {
				t.Errorf("ContinueDrain asked for %v, want %v", dc.asked, tc.want)
			}
			if st := f.node("cpu01").State; st != tc.wantSt {
				t.Errorf("cpu01 is %s, want %s", st, tc.wantSt)
			}
		})
	}
}
