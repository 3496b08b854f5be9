package report

import (
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rotahq/rota/scaler/sim"
)

// plotPareto draws each policy as a point: server-hours over the lower bound against p95
// wait, the marker's area growing with cycles per server per day. The idle-timeout points are
// joined in order of their timeout (the baseline's frontier). Every point is labelled (callouts).
func (r *Report) plotPareto(path string) error {
	p := newPlot(r.Trace+": server-hours vs p95 wait (marker: cycles per server per day)",
		"server-hours / lower bound", "p95 wait (minutes)")
	p.Legend.Top = true
	maxCycles := 0.0
	for _, x := range r.Results {
		maxCycles = max(maxCycles, x.CyclesPerServerDay)
	}
	radius := func(c float64) vg.Length {
		if maxCycles == 0 {
			return 3
		}
		return vg.Length(2 + 7*math.Sqrt(c/maxCycles))
	}
	var frontier plotter.XYs
	baseline, others := split(r.Results)
	for _, x := range baseline {
		frontier = append(frontier, plotter.XY{X: x.XLowerBound, Y: x.WaitP95 / 60})
	}
	if len(frontier) > 1 {
		l, err := plotter.NewLine(frontier)
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 140}
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
	}
	labels := &callouts{style: text.Style{Font: font.From(plot.DefaultFont, plotter.DefaultFontSize), Handler: plot.DefaultTextHandler}}
	add := func(set []sim.Result, c color.Color, shape draw.GlyphDrawer, legend string) error {
		if len(set) == 0 {
			return nil
		}
		xys := make(plotter.XYs, len(set))
		for i, x := range set {
			xys[i] = plotter.XY{X: x.XLowerBound, Y: x.WaitP95 / 60}
			labels.points = append(labels.points, callout{at: xys[i], r: radius(x.CyclesPerServerDay), color: c,
				text: strings.NewReplacer("idle-", "", "rota ", "", "spares.quantile", "q", "break_even.wear_time", "wear").Replace(x.Policy)})
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: 4, Shape: shape} // the legend's
		s.GlyphStyleFunc = func(i int) draw.GlyphStyle {
			return draw.GlyphStyle{Color: c, Radius: radius(set[i].CyclesPerServerDay), Shape: shape}
		}
		p.Add(s)
		p.Legend.Add(legend, s)
		return nil
	}
	if err := add(baseline, color.RGBA{R: 120, G: 120, B: 120, A: 255}, draw.CircleGlyph{}, "idle timeout (T)"); err != nil {
		return err
	}
	if err := add(others, color.RGBA{R: 200, G: 40, B: 40, A: 255}, draw.BoxGlyph{}, "rota"); err != nil {
		return err
	}
	p.Add(labels) // after every marker: it places its labels clear of them
	// From no wait up, so a second's difference does not look like a chasm.
	top := 0.0
	for _, x := range r.Results {
		top = max(top, x.WaitP95/60)
	}
	p.Y.Min, p.Y.Max = 0, max(top*1.15, 1)
	p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', 3, 64)
			}
		}
		return ts
	})
	return save(p, path)
}
