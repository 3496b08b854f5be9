package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMovesValidation: moves need a job manager that can requeue, and every problem of
// policy.moves and policy.storage is named by its path.
func TestMovesValidation(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        []string // paths named; none: valid
	}{
		{"defaults", "", nil},
		{"moves with slurm and requeue", "jobs: {adapter: slurm, slurm: {requeue: true}}\npolicy: {moves: {enabled: true}}", nil},
		{"moves with slurm, requeue off", "jobs: {adapter: slurm}\npolicy: {moves: {enabled: true}}", []string{"policy.moves.enabled"}},
		{"moves with no job manager", "policy: {moves: {enabled: true}}", []string{"policy.moves.enabled"}},
		{"moves with exec, no move_command", "jobs: {adapter: exec, exec: {state_command: s, demand_command: d, drain_command: x, resume_command: r}}\npolicy: {moves: {enabled: true}}",
			[]string{"jobs.exec.move_command"}},
		{"bad numbers", "policy: {moves: {min_saving_factor: -1, estimate: 0s, max_moves: -1, window: 48h}}",
			[]string{"policy.moves.min_saving_factor", "policy.moves.estimate", "policy.moves.max_moves", "policy.moves.window"}},
		{"zeros that mean what they say", "policy: {moves: {restart_cost: 0s, tail: 0s, max_moves: 0}}", nil},
		{"storage", "policy: {storage: [{name: lustre, regions: [eu]}, {name: lustre, regions: [a, b]}, {name: 'bad name', regions: [a, b]}]}",
			[]string{"policy.storage[0].regions", "policy.storage[1].name", "policy.storage[2].name"}},
		{"storage naming a region no server is in", "policy: {storage: [{name: lustre, regions: [eu-west, eu-nroth]}]}",
			[]string{"policy.storage[0].regions[0]", "policy.storage[0].regions[1]"}},
		{"storage naming one region twice", "policy: {storage: [{name: lustre, regions: [eu, eu]}]}",
			[]string{"policy.storage[0].regions[1]", "policy.storage[0].regions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal + tc.extra))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v, want a ValidationError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w+":") {
					t.Errorf("%q not named in:\n%v", w, err)
				}
			}
		})
	}
}

func TestMovesRemaining(t *testing.T) {
	m := Moves{Estimate: dur(time.Hour)}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := m.Remaining(start, 3*time.Hour, start.Add(time.Hour)); got != 2*time.Hour {
		t.Errorf("with a limit: %s, want 2h", got)
	}
	if got := m.Remaining(start, time.Hour, start.Add(2*time.Hour)); got != 0 {
		t.Errorf("past its limit: %s, want 0", got)
	}
	if got := m.Remaining(start, 0, start.Add(5*time.Hour)); got != time.Hour {
		t.Errorf("no limit: %s, want the estimate", got)
	}
	d := Drain{Timeout: dur(time.Minute)}
	if !d.TimedOut(start, start.Add(time.Minute)) || d.TimedOut(start, start.Add(59*time.Second)) {
		t.Error("a drain times out at its timeout, not before")
	}
}
