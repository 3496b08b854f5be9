package sim

import "context"

// Progress is told how many jobs have arrived so far, out of total.
type Progress func(done, total int)

// Run replays the trace under one policy. Every server starts on and idle at the first
// submission; the replay ends when the last job has finished (or been given up on).
func Run(e *Env, p Policy, progress Progress) Result {
	r, _ := run(context.Background(), e, p, progress)
	return r
}

// run is Run that stops early, with ctx's error, when ctx is done.
func run(ctx context.Context, e *Env, p Policy, progress Progress) (Result, error) {
	w := newWorld(e)
	wake := e.T0
	reported := 0
	for steps := 0; !w.done(); steps++ {
		if steps%4096 == 0 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		t := min(w.nextTime(), wake)
		if t == Never {
			w.stuck()
			break
		}
		w.advance(t)
		changed := w.handle()
		w.place()
		if changed || w.now >= wake {
			acts := p.decide(w)
			if len(acts) > 0 {
				w.acct.actingCalls++
			}
			w.apply(acts)
			w.place()
			// a policy that names the present would spin; the next second is the soonest
			wake = max(p.next(w), w.now+1)
		}
		if progress != nil && w.next-reported >= 1000 {
			reported = w.next
			progress(w.next, len(e.Jobs))
		}
	}
	if progress != nil {
		progress(len(e.Jobs), len(e.Jobs))
	}
	w.acct.sample(w)
	return w.result(p.Name()), nil
}

// stuck reports the jobs still queued when nothing more can happen: no event is due and the
// policy asks for no further look, so the jobs could never start.
func (w *world) stuck() {
	for _, ji := range w.queue {
		j := &w.env.Jobs[ji]
		w.acct.notRun = append(w.acct.notRun, NotRun{Line: j.Line, ID: j.ID, Reason: "never started: the policy left no server able to start it"})
		w.acct.dropped = append(w.acct.dropped, int(ji))
	}
	w.queue = nil
}

// Compare runs every policy on the environment and returns the lower bound's row first, then
// each policy's, with wait increases relative to the always-on row when there is one. It stops
// with ctx's error when ctx is done.
func Compare(ctx context.Context, e *Env, policies []Policy, progress func(policy string) Progress) ([]Result, error) {
	out := []Result{e.LowerBoundResult()}
	base := -1
	for _, p := range policies {
		var pr Progress
		if progress != nil {
			pr = progress(p.Name())
		}
		r, err := run(ctx, e, p, pr)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		if p.Name() == AlwaysOn().Name() {
			base = len(out) - 1
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the last row's bound may have been cut short
	}
	if base >= 0 {
		b := out[base]
		for i := range out[1:] {
			r := &out[i+1]
			r.ExtraWaitP95, r.ExtraWaitMean = r.WaitP95-b.WaitP95, r.WaitMean-b.WaitMean
		}
	}
	return out, nil
}
