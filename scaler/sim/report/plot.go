package report

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/rotahq/rota/scaler/sim"
)

// bucket is the plots' time resolution: one point per hour.
const bucket = 3600

// steps is a step function: value v[i] from t[i] on.
type steps struct {
	t []int64
	v []float64
}

// hourly averages a step function over hours from t0 to t1, as (days since t0, mean).
func (s steps) hourly(t0, t1 int64) plotter.XYs {
	var out plotter.XYs
	i := 0
	cur := 0.0
	for start := t0; start < t1; start += bucket {
		end := min(start+bucket, t1)
		area := 0.0
		at := start
		for i < len(s.t) && s.t[i] <= at {
			cur = s.v[i]
			i++
		}
		for i < len(s.t) && s.t[i] < end {
			area += cur * float64(s.t[i]-at)
			at, cur = s.t[i], s.v[i]
			i++
		}
		area += cur * float64(end-at)
		out = append(out, plotter.XY{X: float64(start-t0) / 86400, Y: area / float64(end-start)})
	}
	return out
}

func onSteps(r *sim.Result) steps {
	var s steps
	for _, p := range r.Series {
		s.t, s.v = append(s.t, p.T), append(s.v, float64(p.On))
	}
	return s
}

// end is the last time any series covers.
func (r *Report) end() int64 {
	end := r.T0 + 1
	for _, x := range r.Results {
		if n := len(x.Series); n > 0 {
			end = max(end, x.Series[n-1].T)
		}
	}
	return end
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

func save(p *plot.Plot, path string) error {
	return p.Save(22*vg.Centimeter, 12*vg.Centimeter, path)
}

// plotServers draws servers on per policy against servers needed (hourly means).
func (r *Report) plotServers(path string) error {
	p := newPlot(r.Trace+": servers on vs needed", "days", "servers (hourly mean)")
	end := r.end()
	var need steps
	for _, pt := range r.Need {
		need.t, need.v = append(need.t, pt.T), append(need.v, pt.Value)
	}
	args := []any{"needed", need.hourly(r.T0, end)}
	for i := range r.Results {
		if x := &r.Results[i]; len(x.Series) > 0 {
			args = append(args, x.Policy, onSteps(x).hourly(r.T0, end))
		}
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return err
	}
	return save(p, path)
}

// plotSpend draws each policy's cumulative spend.
func (r *Report) plotSpend(path string) error {
	cur := ""
	if len(r.Results) > 0 {
		cur = r.Results[0].Currency
	}
	p := newPlot(r.Trace+": cumulative spend", "days", fmt.Sprintf("spend (%s)", cur))
	p.Legend.Left = true
	var args []any
	for _, x := range r.Results {
		if len(x.Series) == 0 {
			continue
		}
		xy := make(plotter.XYs, 0, len(x.Series)+1)
		for _, s := range thin(x.Series, 2000) {
			xy = append(xy, plotter.XY{X: float64(s.T-r.T0) / 86400, Y: s.Cost})
		}
		xy = append(xy, plotter.XY{X: float64(x.Series[len(x.Series)-1].T-r.T0) / 86400, Y: x.Cost})
		args = append(args, x.Policy, xy)
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return err
	}
	return save(p, path)
}

// thin keeps about n evenly spaced samples (the first and last always).
func thin(s []sim.Sample, n int) []sim.Sample {
	if len(s) <= n {
		return s
	}
	out := make([]sim.Sample, 0, n+1)
	step := float64(len(s)) / float64(n)
	for i := 0.0; int(i) < len(s); i += step {
		out = append(out, s[int(i)])
	}
	return append(out, s[len(s)-1])
}

// minWait is where the log-scaled wait axis starts (minutes); shorter waits are drawn there.
const minWait = 0.1

// plotWaits draws the distribution of waiting times per policy: the share of jobs started
// within a wait, on a log scale of minutes.
func (r *Report) plotWaits(path string) error {
	p := newPlot(r.Trace+": job wait distribution", "wait (minutes, log scale; under 6s drawn at 0.1)", "share of jobs started within")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Left = true
	var args []any
	for _, x := range r.Results {
		if len(x.Waits) == 0 || len(x.Series) == 0 {
			continue
		}
		xy := make(plotter.XYs, 0, 201)
		for i := 0; i <= 200; i++ {
			q := float64(i) / 200
			k := min(int(q*float64(len(x.Waits)-1)), len(x.Waits)-1)
			xy = append(xy, plotter.XY{X: max(float64(x.Waits[k])/60, minWait), Y: q})
		}
		args = append(args, x.Policy, xy)
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return err
	}
	// A log axis needs a range above zero: with no line (no policy has waits and a time
	// series, as with a one-job trace) it has none, and every wait under 6s makes it a single
	// point. Show at least a decade from minWait.
	if len(args) == 0 {
		p.Title.Text += " (no policy ran a job to draw)"
		p.Y.Min, p.Y.Max = 0, 1
	}
	p.X.Min = minWait // every point is drawn at minWait or more
	p.X.Max = max(p.X.Max, 10*minWait)
	return save(p, path)
}
