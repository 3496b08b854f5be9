package report

import (
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// callout is one point of the Pareto plot to label: where it is, its marker's radius, the
// label and its colour.
type callout struct {
	at    plotter.XY
	r     vg.Length
	text  string
	color color.Color
}

// callouts draws the Pareto plot's labels, each where it overlaps least the labels placed
// before it, the markers and the legend (see place), with a thin line to its marker when it
// is not beside it. Labels at one fixed offset ran into one another where rows bunch, as
// rota's rows and the short timeouts do. Points of one colour drawn on the same spot (rows
// that replayed alike) get one label, their names joined.
type callouts struct {
	points []callout
	style  text.Style
}

// Plot places and draws the labels in the data area c.
func (cs *callouts) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var clear []vg.Rectangle
	var marks []mark
	var names [][]string
	var colors []color.Color
	for _, pt := range cs.points {
		at := vg.Point{X: trX(pt.at.X), Y: trY(pt.at.Y)}
		clear = append(clear, vg.Rectangle{Min: at.Sub(vg.Point{X: pt.r, Y: pt.r}), Max: at.Add(vg.Point{X: pt.r, Y: pt.r})})
		k := len(marks)
		for i := range marks {
			if colors[i] == pt.color && near(marks[i].at, at) {
				k = i
				break
			}
		}
		if k == len(marks) {
			marks, names, colors = append(marks, mark{at: at, r: pt.r}), append(names, nil), append(colors, pt.color)
		}
		marks[k].r = max(marks[k].r, pt.r)
		names[k] = append(names[k], pt.text)
	}
	texts := make([]string, len(marks))
	for i := range marks {
		texts[i] = strings.Join(names[i], ", ")
		marks[i].size = cs.style.Rectangle(texts[i]).Size()
	}
	// The legend is drawn last, at the top right, over whatever lies there.
	legend := p.Legend.Rectangle(c).Size()
	clear = append(clear, vg.Rectangle{Min: c.Max.Sub(legend), Max: c.Max})
	for i, pl := range place(marks, clear, c.Rectangle) {
		sty := cs.style
		sty.Color = colors[i]
		if pl.far { // from the marker's edge to the label's nearest point
			m := marks[i]
			to := nearest(pl.box, m.at)
			d := to.Sub(m.at)
			from := m.at.Add(d.Scale(m.r / vg.Length(math.Hypot(float64(d.X), float64(d.Y)))))
			c.StrokeLine2(draw.LineStyle{Color: colors[i], Width: vg.Points(0.5)}, from.X, from.Y, to.X, to.Y)
		}
		c.FillText(sty, pl.box.Min.Sub(sty.Rectangle(texts[i]).Min), texts[i])
	}
}

// near reports whether two markers' centres are within a point of each other: one marker.
func near(a, b vg.Point) bool {
	return math.Abs(float64(a.X-b.X)) < 1 && math.Abs(float64(a.Y-b.Y)) < 1
}

// nearest is the point of box r nearest to p.
func nearest(r vg.Rectangle, p vg.Point) vg.Point {
	return vg.Point{X: min(max(p.X, r.Min.X), r.Max.X), Y: min(max(p.Y, r.Min.Y), r.Max.Y)}
}

// mark is a label to place: its marker's centre and radius, and the label's size.
type mark struct {
	at   vg.Point
	r    vg.Length
	size vg.Point
}

// placed is where a label went; far: not beside its marker, so a line joins them.
type placed struct {
	box vg.Rectangle
	far bool
}

// gap is the room between a marker and its label.
const gap = vg.Length(3)

// place puts each label, in order, at the first of its candidates that overlaps nothing: the
// labels placed before it, the boxes in clear (markers, the legend), and the lines to labels
// placed away from their markers, which its own line crosses none of either; failing that,
// where the overlap is least, then the lines crossed fewest. A label's candidates lie right,
// above, below and left of its marker, then on its diagonals, first beside it, then a line's
// height further out each ring, all within area. It is a pure function of its arguments, so
// the plot is the same from run to run.
func place(marks []mark, clear []vg.Rectangle, area vg.Rectangle) []placed {
	dirs := [...][2]vg.Length{{1, 0}, {0, 1}, {0, -1}, {-1, 0}, {1, 1}, {1, -1}, {-1, 1}, {-1, -1}}
	var out []placed
	var boxes []vg.Rectangle
	var lines [][2]vg.Point
	for _, m := range marks {
		step := m.size.Y + 2
		rings := int(max(area.Size().X, area.Size().Y)/step) + 1
		best, bestCost, found := placed{box: boxAt(m, dirs[0], m.r+gap)}, cost{}, false
		for k := 0; k < rings && (!found || bestCost != cost{}); k++ {
			d := m.r + gap + vg.Length(k)*step
			for _, dir := range dirs {
				b := boxAt(m, dir, d)
				if !inside(b, area) {
					continue
				}
				cand := placed{box: b, far: k > 0}
				if c := costOf(cand, m.at, boxes, clear, lines); !found || c.less(bestCost) {
					best, bestCost, found = cand, c, true
					if c == (cost{}) {
						break
					}
				}
			}
		}
		out, boxes = append(out, best), append(boxes, best.box)
		if best.far {
			lines = append(lines, [2]vg.Point{m.at, nearest(best.box, m.at)})
		}
	}
	return out
}

// boxAt is label m's box d from its marker's centre in direction dir: beyond the point there
// on each axis dir moves along, centred on the marker on an axis it does not.
func boxAt(m mark, dir [2]vg.Length, d vg.Length) vg.Rectangle {
	min := vg.Point{X: along(m.at.X, dir[0], d, m.size.X), Y: along(m.at.Y, dir[1], d, m.size.Y)}
	return vg.Rectangle{Min: min, Max: min.Add(m.size)}
}

// along is where a box of length size starts on one axis, for a marker at at: d beyond it
// in the direction dir (1 or -1), centred on it for 0.
func along(at, dir, d, size vg.Length) vg.Length {
	switch dir {
	case 1:
		return at + d
	case -1:
		return at - d - size
	}
	return at - size/2
}

// cost is what a candidate runs into: the area its box shares with others, and how many
// times its box and lines cross (its line through a label, its box over a line).
type cost struct {
	overlap float64
	crossed int
}

func (c cost) less(d cost) bool {
	return c.overlap < d.overlap || c.overlap == d.overlap && c.crossed < d.crossed
}

// costOf is what candidate c, a label of the marker at from, runs into.
func costOf(c placed, from vg.Point, boxes, clear []vg.Rectangle, lines [][2]vg.Point) cost {
	var out cost
	for _, b := range boxes {
		out.overlap += overlap(c.box, b)
		if c.far && crosses(from, nearest(c.box, from), b) {
			out.crossed++
		}
	}
	for _, b := range clear {
		out.overlap += overlap(c.box, b)
	}
	for _, l := range lines {
		if crosses(l[0], l[1], c.box) {
			out.crossed++
		}
	}
	return out
}

// overlap is the area two boxes share.
func overlap(a, b vg.Rectangle) float64 {
	w := min(a.Max.X, b.Max.X) - max(a.Min.X, b.Min.X)
	h := min(a.Max.Y, b.Max.Y) - max(a.Min.Y, b.Min.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return float64(w * h)
}

func inside(b, area vg.Rectangle) bool {
	return b.Min.X >= area.Min.X && b.Min.Y >= area.Min.Y && b.Max.X <= area.Max.X && b.Max.Y <= area.Max.Y
}

// crosses reports whether the segment from a to b passes through box r (Liang-Barsky
// clipping: the part of the segment within each of the box's slabs).
func crosses(a, b vg.Point, r vg.Rectangle) bool {
	lo, hi := 0.0, 1.0
	for _, s := range [2][4]float64{
		{float64(a.X), float64(b.X - a.X), float64(r.Min.X), float64(r.Max.X)},
		{float64(a.Y), float64(b.Y - a.Y), float64(r.Min.Y), float64(r.Max.Y)},
	} {
		p, d, min, max := s[0], s[1], s[2], s[3]
		if d == 0 {
			if p <= min || p >= max {
				return false
			}
			continue
		}
		t0, t1 := (min-p)/d, (max-p)/d
		if t0 > t1 {
			t0, t1 = t1, t0
		}
		lo, hi = math.Max(lo, t0), math.Min(hi, t1)
	}
	return lo < hi
}
