// Package plot draws pagefeed's experiment charts (line charts of a metric
// against a parameter, one line per series; bar charts of one value per
// label) with gonum.org/v1/plot and writes each as SVG and PNG.
//
// Charts are small value types; Save is safe to call from several
// goroutines on different charts. Nothing here panics on bad data: empty
// charts, mismatched series and non-finite or (on log axes) non-positive
// values are errors naming the chart and the series.
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ErrData reports data a chart cannot show.
var ErrData = errors.New("plot: bad chart data")

// Size of saved charts: 7×4.5 in, 96 dpi for PNG (672×432 px).
const (
	width  = 7 * vg.Inch
	height = 4.5 * vg.Inch
)

// Series is one line of a Chart: points (X[i], Y[i]) joined in order.
// Series with the same non-empty ColorKey share a colour and a marker (a
// measurement and its reference, say); Dashed draws the line dashed.
type Series struct {
	Label    string
	X, Y     []float64
	ColorKey string
	Dashed   bool
}

// Chart is a line chart. LogX and LogY put the axis on a log scale (every
// value must then be > 0); Pow2X, with LogX, marks x at every power of two
// (queue depths). Title and axis labels should carry units, e.g.
// "bandwidth (MiB/s)".
type Chart struct {
	Title          string
	XLabel, YLabel string
	LogX, LogY     bool
	Pow2X          bool
	Series         []Series
}

// Bars is a bar chart: one bar per label, in order, with its value.
type Bars struct {
	Title  string
	YLabel string
	Labels []string
	Values []float64
}

// palette is colour-blind friendly (Okabe–Ito) so lines stay apart.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},
	color.RGBA{213, 94, 0, 255},
	color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255},
	color.RGBA{230, 159, 0, 255},
	color.RGBA{86, 180, 233, 255},
	color.RGBA{0, 0, 0, 255},
	color.RGBA{240, 228, 66, 255},
}

var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{},
	draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

func (c *Chart) validate() error {
	if len(c.Series) == 0 {
		return fmt.Errorf("%w: chart %q has no series", ErrData, c.Title)
	}
	for _, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("%w: chart %q series %q: %d x values, %d y values", ErrData, c.Title, s.Label, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			return fmt.Errorf("%w: chart %q series %q has no points", ErrData, c.Title, s.Label)
		}
		for i := range s.X {
			if bad(s.X[i], c.LogX) || bad(s.Y[i], c.LogY) {
				return fmt.Errorf("%w: chart %q series %q point %d (%g, %g) is not finite or not positive on a log axis",
					ErrData, c.Title, s.Label, i, s.X[i], s.Y[i])
			}
		}
	}
	return nil
}

func bad(v float64, log bool) bool {
	return math.IsNaN(v) || math.IsInf(v, 0) || (log && v <= 0)
}

func (c *Chart) build() (*gplot.Plot, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	p := gplot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	if c.LogX {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	if c.LogY {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	colors := map[string]int{}
	for i, s := range c.Series {
		ci := i
		if s.ColorKey != "" {
			if k, ok := colors[s.ColorKey]; ok {
				ci = k
			} else {
				ci = len(colors)
				colors[s.ColorKey] = ci
			}
		}
		xys := make(plotter.XYs, len(s.X))
		for k := range s.X {
			xys[k].X, xys[k].Y = s.X[k], s.Y[k]
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("%w: chart %q series %q: %v", ErrData, c.Title, s.Label, err)
		}
		col := palette[ci%len(palette)]
		l.Color = col
		l.Width = vg.Points(1.5)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		pts.Color = col
		pts.Shape = glyphs[ci%len(glyphs)]
		p.Add(l, pts)
		p.Legend.Add(s.Label, l, pts)
	}
	if !c.LogX {
		p.X.Tick.Marker = plainTicks{}
	} else if c.Pow2X {
		p.X.Tick.Marker = pow2Ticks{}
	}
	if !c.LogY {
		p.Y.Tick.Marker = plainTicks{}
	}
	widen(&p.X, c.LogX, 0)
	widen(&p.Y, c.LogY, 0.03)
	return p, nil
}

// widen gives a degenerate range some width (gonum's own fix, min-1 and
// max+1, breaks log axes) and adds share of the range above the data.
func widen(a *gplot.Axis, log bool, share float64) {
	if log {
		if a.Min == a.Max {
			a.Min, a.Max = a.Min/2, a.Max*2
		}
		a.Max = a.Max * math.Pow(a.Max/a.Min, share)
		return
	}
	if a.Min == a.Max {
		a.Min, a.Max = a.Min-1, a.Max+1
	}
	a.Max += (a.Max - a.Min) * share
}

// pow2Ticks mark every power of two in range, labelled in full.
type pow2Ticks struct{}

func (pow2Ticks) Ticks(min, max float64) []gplot.Tick {
	var ts []gplot.Tick
	for v := math.Exp2(math.Ceil(math.Log2(min))); v <= max; v *= 2 {
		ts = append(ts, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
	}
	if len(ts) < 2 { // a narrow range: let gonum choose
		return gplot.LogTicks{Prec: -1}.Ticks(min, max)
	}
	return ts
}

// plainTicks are gonum's default ticks labelled with %g ("250", not
// "250.00").
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []gplot.Tick {
	ts := gplot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}

// Save writes the chart to base+".svg" and base+".png", creating base's
// folder if needed.
func (c *Chart) Save(base string) error {
	p, err := c.build()
	if err != nil {
		return err
	}
	return save(p, base, true)
}

// Save writes the bar chart to base+".svg" and base+".png".
func (b *Bars) Save(base string) error {
	if len(b.Labels) == 0 || len(b.Labels) != len(b.Values) {
		return fmt.Errorf("%w: bar chart %q: %d labels, %d values", ErrData, b.Title, len(b.Labels), len(b.Values))
	}
	for i, v := range b.Values {
		if bad(v, false) {
			return fmt.Errorf("%w: bar chart %q: %s = %g", ErrData, b.Title, b.Labels[i], v)
		}
	}
	p := gplot.New()
	p.Title.Text = b.Title
	p.Y.Label.Text = b.YLabel
	p.Add(plotter.NewGrid())
	bars, err := plotter.NewBarChart(plotter.Values(b.Values), vg.Points(28))
	if err != nil {
		return fmt.Errorf("%w: bar chart %q: %v", ErrData, b.Title, err)
	}
	bars.Color = palette[0]
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(b.Labels...)
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: barTops(b.Values), Labels: fmtValues(b.Values)})
	if err == nil {
		lbl.Offset = vg.Point{X: -vg.Points(10), Y: vg.Points(3)}
		p.Add(lbl)
	}
	p.Y.Min = math.Min(0, p.Y.Min)
	p.Y.Max *= 1.1 // room for the value labels
	return save(p, base, false)
}

func barTops(vs []float64) plotter.XYs {
	xys := make(plotter.XYs, len(vs))
	for i, v := range vs {
		xys[i].X, xys[i].Y = float64(i), v
	}
	return xys
}

func fmtValues(vs []float64) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%.3g", v)
	}
	return out
}

// save draws p into base.svg and base.png; with legendOutside the legend
// gets its own column right of the data, so it never hides a line.
func save(p *gplot.Plot, base string, legendOutside bool) (err error) {
	// gonum panics on some ranges it cannot draw; report them instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: drawing %s: %v", ErrData, base, r)
		}
	}()
	if dir := filepath.Dir(base); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	for _, ext := range []string{"svg", "png"} {
		path := base + "." + ext
		if err := render(p, path, ext, legendOutside); err != nil {
			return fmt.Errorf("plot: writing %s: %w", path, err)
		}
	}
	return nil
}

func render(p *gplot.Plot, path, format string, legendOutside bool) error {
	w := width
	if legendOutside {
		w += 1.5 * vg.Inch
	}
	cw, err := draw.NewFormattedCanvas(w, height, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	if legendOutside {
		leg := p.Legend
		r := leg.Rectangle(dc)
		lw := r.Max.X - r.Min.X + vg.Points(12)
		p.Legend = gplot.NewLegend() // empty: Plot.Draw would draw it over the data
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		p.Legend = leg
		leg.Draw(draw.Crop(dc, w-lw+vg.Points(6), 0, 0, 0))
	} else {
		p.Draw(dc)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = cw.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
