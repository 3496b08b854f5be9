package report

import (
	"fmt"
	"slices"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// TestPlaceKeepsLabelsApart: points bunched as a sweep's are (rota's rows and the short
// timeouts within a few points of one another on one row, markers overlapping, labels far
// wider than the gaps between them) get labels that overlap no other label, no marker and no
// box kept clear, all inside the area, and the same ones every time. At one fixed offset
// they ran into one another.
func TestPlaceKeepsLabelsApart(t *testing.T) {
	sty := text.Style{Font: font.From(plot.DefaultFont, plotter.DefaultFontSize), Handler: plot.DefaultTextHandler}
	area := vg.Rectangle{Max: vg.Point{X: 560, Y: 280}}
	names := []string{"1m0s", "2m0s", "5m0s", "10m0s", "rota", "q=0.5", "q=0.95", "wear=10m0s", "wear=40m0s",
		"break_even.idle_periods=true", "20m0s", "30m0s"}
	var marks []mark
	var clear []vg.Rectangle
	for i, n := range names {
		at := vg.Point{X: 40 + vg.Length(i*6), Y: 250 - vg.Length(i%3)}
		r := vg.Length(4 + i%6)
		marks = append(marks, mark{at: at, r: r, size: sty.Rectangle(n).Size()})
		clear = append(clear, vg.Rectangle{Min: at.Sub(vg.Point{X: r, Y: r}), Max: at.Add(vg.Point{X: r, Y: r})})
	}
	legend := vg.Rectangle{Min: vg.Point{X: 460, Y: 240}, Max: area.Max}
	clear = append(clear, legend)
	got := place(marks, clear, area)
	if again := place(marks, clear, area); !slices.Equal(got, again) {
		t.Errorf("two placements differ:\n%v\n%v", got, again)
	}
	for i, p := range got {
		if !inside(p.box, area) {
			t.Errorf("%s at %v: outside the area", names[i], p.box)
		}
		for j, b := range clear {
			if overlap(p.box, b) > 0 {
				t.Errorf("%s at %v overlaps %s", names[i], p.box, what(j, names))
			}
		}
		for j, q := range got[:i] {
			if overlap(p.box, q.box) > 0 {
				t.Errorf("%s at %v overlaps the label of %s at %v", names[i], p.box, names[j], q.box)
			}
		}
	}
}

func what(j int, names []string) string {
	if j < len(names) {
		return fmt.Sprintf("the marker of %s", names[j])
	}
	return "the legend"
}

// crosses: a segment through a box, one ending inside it, one passing by, one along an edge.
func TestCrosses(t *testing.T) {
	box := vg.Rectangle{Min: vg.Point{X: 10, Y: 10}, Max: vg.Point{X: 20, Y: 20}}
	for _, c := range []struct {
		name string
		a, b vg.Point
		want bool
	}{
		{"through", vg.Point{X: 0, Y: 15}, vg.Point{X: 30, Y: 15}, true},
		{"ends inside", vg.Point{X: 0, Y: 0}, vg.Point{X: 15, Y: 15}, true},
		{"passes by", vg.Point{X: 0, Y: 25}, vg.Point{X: 30, Y: 22}, false},
		{"short of it", vg.Point{X: 0, Y: 15}, vg.Point{X: 9, Y: 15}, false},
		{"along an edge", vg.Point{X: 0, Y: 10}, vg.Point{X: 30, Y: 10}, false},
	} {
		if got := crosses(c.a, c.b, box); got != c.want {
			t.Errorf("%s: crosses %v, want %v", c.name, got, c.want)
		}
	}
}
