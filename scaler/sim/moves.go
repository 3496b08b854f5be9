package sim

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/rotahq/rota/scaler/fleet"
)

// Moves in the replay, as the executor and Slurm make them: the server is drained, each job
// named leaves it at once and goes back to the queue in its submission order (Slurm keeps a
// requeued job's priority), never to start again on the servers the move excludes. It runs
// again from its start (the trace knows no checkpoints) plus the policy's restart cost: its
// whole run so far is lost work, counted in GPU-hours (core-hours on CPU pools).

// moveState is what moves change of each job.
type moveState struct {
	// gen is each job's run: a move starts a new one, and the old run's end event is ignored.
	gen []int32
	// extra is the restart cost added to each job's duration; exclude the servers it may not
	// start on.
	extra   []int64
	exclude [][]int32
}

func (m *moveState) init(jobs int) {
	m.gen, m.extra, m.exclude = make([]int32, jobs), make([]int64, jobs), make([][]int32, jobs)
}

func (m *moveState) excluded(ji int32, s int32) bool { return slices.Contains(m.exclude[ji], s) }

// excludes names the servers job ji may not start on, sorted and comma-separated, as the job
// manager reports a waiting job's --exclude ("" for none): the planner wakes no server of
// them for it.
func (w *world) excludes(ji int32) string {
	away := w.moves.exclude[ji]
	if len(away) == 0 {
		return ""
	}
	names := make([]string, len(away))
	for k, s := range away {
		names[k] = w.env.Names[s]
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// restarted reports whether the job starts again after a move (its wait was counted already).
func (m *moveState) restarted(ji int32) bool { return m.gen[ji] > 0 }

// duration is how long a job holds its servers once started: its trace duration plus any
// restart cost its moves added.
func (w *world) duration(ji int32) int64 { return w.env.Jobs[ji].Duration + w.moves.extra[ji] }

// move carries out a move of server s: it reports false (ignored, as the executor would
// refuse) when the server is not on.
func (w *world) move(s int32, plan *fleet.MovePlan) bool {
	sv := &w.srv[s]
	if plan == nil || sv.state != fleet.StateOn {
		return false
	}
	var away []int32
	for _, name := range plan.Exclude {
		if x, ok := w.env.byName[name]; ok {
			away = append(away, x)
		}
	}
	if plan.Drain {
		w.setState(s, fleet.StateDraining)
	}
	for _, id := range plan.Jobs {
		n, err := strconv.Atoi(id)
		if err != nil || n < 0 || n >= len(w.env.Jobs) {
			continue
		}
		ji := int32(n)
		if w.start[ji] < 0 || !slices.Contains(w.held[ji], s) {
			continue // ended or moved already
		}
		w.requeue(ji, away)
	}
	w.acct.moves++
	w.placeDirty = true
	w.seq++
	return true
}

// requeue takes a running job off its servers and puts it back in the queue.
func (w *world) requeue(ji int32, away []int32) {
	j := &w.env.Jobs[ji]
	if !j.Requeueable {
		w.acct.badMoves++
	}
	ran := w.now - w.start[ji]
	for _, s := range w.held[ji] {
		pl := &w.env.Pools[w.srv[s].pool]
		units := float64(unitsOf(pl, j.GPUs, j.CPUs))
		w.acct.lostUnits += units * float64(ran+w.env.restart) / 3600
		// What it will not run now is not work done.
		w.acct.busyUnits -= units * float64(w.start[ji]+w.duration(ji)-w.now) / 3600
	}
	w.finish(ji)
	w.start[ji] = -1
	w.moves.gen[ji]++
	w.moves.extra[ji] += w.env.restart
	for _, a := range away {
		if !slices.Contains(w.moves.exclude[ji], a) {
			w.moves.exclude[ji] = append(w.moves.exclude[ji], a)
		}
	}
	at, _ := slices.BinarySearchFunc(w.queue, j.Submit, func(q int32, t int64) int {
		return cmp.Compare(w.env.Jobs[q].Submit, t)
	})
	w.queue = slices.Insert(w.queue, at, ji)
}

// RotaWithoutMoves is rota's planner with policy.moves off: the row rebalancing is measured
// against.
func RotaWithoutMoves(name string) Policy { return &rota{name: name, noMoves: true} }
