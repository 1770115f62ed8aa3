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
	"slices"
	"strconv"
	"strings"

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
	// NoLegend leaves the series out of the legend (a dashed reference
	// whose colour's solid line is there, with Chart.DashedNote saying
	// what dashes mean).
	NoLegend bool
	// KneeX, when > 0, is the x of the point to mark as the curve's knee
	// (a ring around it and "knee" with its x); it must be one of X.
	KneeX float64
}

// Chart is a line chart. LogX and LogY put the axis on a log scale (every
// value must then be > 0), with a labelled tick at every decade (1, 10,
// 100, 1k, ...) and unlabelled ones between; Pow2X, with LogX, marks x at
// every power of two (queue depths). Tick labels are plain numbers with
// k, M, G suffixes. The legend goes inside the frame, in the corner the
// lines leave emptiest. Title and axis labels should carry units, e.g.
// "bandwidth (MiB/s)".
type Chart struct {
	Title          string
	XLabel, YLabel string
	LogX, LogY     bool
	Pow2X          bool
	Series         []Series
	// DashedNote, when set, ends the legend with a dashed grey line and
	// this text, e.g. "dashed: fio, same settings".
	DashedNote string
}

// Bars is a bar chart: one bar per label, in order, with its value
// written on top in plain units ("567k rows/s": Plain, then Unit). When the
// positive values span more than two orders of magnitude (baselines an
// order apart from the loader) the value axis is logarithmic, with decade
// ticks, so the small bars stay visible; LogY forces it.
type Bars struct {
	Title  string
	YLabel string
	Unit   string // appended to each bar's value, e.g. "rows/s"; optional
	Labels []string
	Values []float64
	LogY   bool
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
		if s.KneeX > 0 && !slices.Contains(s.X, s.KneeX) {
			return fmt.Errorf("%w: chart %q series %q: knee at x=%g, which is not one of its points", ErrData, c.Title, s.Label, s.KneeX)
		}
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
		p.X.Tick.Marker = decadeTicks{}
	}
	if c.LogY {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = decadeTicks{}
	}
	p.Add(plotter.NewGrid())
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
		if !s.NoLegend {
			p.Legend.Add(s.Label, l, pts)
		}
		if s.KneeX > 0 {
			k := slices.Index(s.X, s.KneeX)
			ring, err := plotter.NewScatter(plotter.XYs{{X: s.X[k], Y: s.Y[k]}})
			if err != nil {
				return nil, fmt.Errorf("%w: chart %q series %q: %v", ErrData, c.Title, s.Label, err)
			}
			ring.Color = col
			ring.Shape = draw.RingGlyph{}
			ring.Radius = vg.Points(7)
			lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: s.X[k], Y: s.Y[k]}}, Labels: []string{"knee " + Plain(s.X[k])}})
			if err != nil {
				return nil, fmt.Errorf("%w: chart %q series %q: %v", ErrData, c.Title, s.Label, err)
			}
			lbl.TextStyle[0].Color = col
			lbl.Offset = vg.Point{X: vg.Points(8), Y: -vg.Points(12)}
			p.Add(ring, lbl)
		}
	}
	if c.DashedNote != "" {
		note, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 1}})
		if err == nil {
			note.Color = color.Gray{Y: 110}
			note.Width = vg.Points(1.5)
			note.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Legend.Add(c.DashedNote, note)
		}
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

// Plain formats v for a person: three significant digits with a k, M or G
// suffix from a thousand up ("567k", "1.23M", "12.5", "0.25"), never an
// exponent.
func Plain(v float64) string {
	a := math.Abs(v)
	for _, u := range []struct {
		div float64
		sfx string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.div*0.9995 {
			return trim(v/u.div) + u.sfx
		}
	}
	if a != 0 && a < 0.001 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return trim(v)
}

// trim prints v with three significant digits and no trailing zeros.
func trim(v float64) string {
	a := math.Abs(v)
	prec := 0
	switch {
	case a < 1:
		prec = 3
	case a < 10:
		prec = 2
	case a < 100:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// decadeTicks label every power of ten in range (1, 10, 100, 1k, ...) and
// put unlabelled ticks at 2..9 times each; over less than two decades the
// 2× and 5× ticks are labelled too, so at least a few labels show.
type decadeTicks struct{}

func (decadeTicks) Ticks(min, max float64) []gplot.Tick {
	if !(min > 0) || !(max > min) {
		return nil
	}
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	few := hi-lo <= 2
	var ts []gplot.Tick
	for e := lo; e <= hi; e++ {
		d := math.Pow(10, e)
		for m := 1.0; m <= 9; m++ {
			v := m * d
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := gplot.Tick{Value: v}
			if m == 1 || few && (m == 2 || m == 5) {
				t.Label = Plain(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// pow2Ticks mark every power of two in range, labelled in plain units.
type pow2Ticks struct{}

func (pow2Ticks) Ticks(min, max float64) []gplot.Tick {
	var ts []gplot.Tick
	for v := math.Exp2(math.Ceil(math.Log2(min))); v <= max; v *= 2 {
		ts = append(ts, gplot.Tick{Value: v, Label: Plain(v)})
	}
	if len(ts) < 2 { // a narrow range: decades
		return decadeTicks{}.Ticks(min, max)
	}
	return ts
}

// plainTicks are gonum's default ticks labelled in plain units ("250",
// "1.5M", not "250.00" or "1.5e+06").
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []gplot.Tick {
	ts := gplot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = Plain(ts[i].Value)
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
	pts := make([]plotter.XYs, len(c.Series))
	for i, s := range c.Series {
		pts[i] = make(plotter.XYs, len(s.X))
		for k := range s.X {
			pts[i][k].X, pts[i][k].Y = s.X[k], s.Y[k]
		}
	}
	return save(p, base, pts)
}

// Save writes the bar chart to base+".svg" and base+".png".
func (b *Bars) Save(base string) error {
	if len(b.Labels) == 0 || len(b.Labels) != len(b.Values) {
		return fmt.Errorf("%w: bar chart %q: %d labels, %d values", ErrData, b.Title, len(b.Labels), len(b.Values))
	}
	lo, hi := math.Inf(1), 0.0
	for i, v := range b.Values {
		if bad(v, false) {
			return fmt.Errorf("%w: bar chart %q: %s = %g", ErrData, b.Title, b.Labels[i], v)
		}
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	// A log axis chosen for the spread, only where every bar can stand on
	// it: a zero has no place on a log axis (a forced LogY refuses it).
	logY := b.LogY || (hi > 0 && hi/lo > 100 && !slices.ContainsFunc(b.Values, func(v float64) bool { return v <= 0 }))
	if logY {
		for i, v := range b.Values {
			if v <= 0 {
				return fmt.Errorf("%w: bar chart %q: %s = %g on a log axis", ErrData, b.Title, b.Labels[i], v)
			}
		}
	}
	p := gplot.New()
	p.Title.Text = b.Title
	p.Y.Label.Text = b.YLabel
	p.Add(plotter.NewGrid())
	bars := &barPlot{values: b.Values, width: 0.6, color: palette[0]}
	p.Add(bars)
	p.NominalX(b.Labels...)
	labels := make([]string, len(b.Values))
	for i, v := range b.Values {
		labels[i] = Plain(v)
		if b.Unit != "" {
			labels[i] += " " + b.Unit
		}
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: barTops(b.Values), Labels: labels})
	if err != nil {
		return fmt.Errorf("%w: bar chart %q: %v", ErrData, b.Title, err)
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].XAlign = draw.XCenter
	}
	lbl.Offset = vg.Point{Y: vg.Points(3)}
	p.Add(lbl)
	if logY {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = decadeTicks{}
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
		p.Y.Max = hi * 2.5 // room for the value labels
	} else {
		p.Y.Tick.Marker = plainTicks{}
		p.Y.Min = 0
		p.Y.Max = hi * 1.12
		if hi == 0 {
			p.Y.Max = 1
		}
	}
	return save(p, base, nil)
}

// barPlot draws one bar per value from the bottom of the value axis (so
// log axes work, where gonum's bars start at 0), centred on 0, 1, 2, ...
type barPlot struct {
	values []float64
	width  float64 // in x units (one per bar)
	color  color.Color
}

func (b *barPlot) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	for i, v := range b.values {
		x0, x1 := tx(float64(i)-b.width/2), tx(float64(i)+b.width/2)
		y0, y1 := c.Min.Y, ty(v)
		if y1 <= y0 {
			continue
		}
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
	}
}

func (b *barPlot) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, v := range b.values {
		ymin, ymax = min(ymin, v), max(ymax, v)
	}
	return -0.5, float64(len(b.values)) - 0.5, ymin, ymax
}

func barTops(vs []float64) plotter.XYs {
	xys := make(plotter.XYs, len(vs))
	for i, v := range vs {
		xys[i].X, xys[i].Y = float64(i), v
	}
	return xys
}

// save draws p into base.svg and base.png. A line chart passes its
// points (pts, in data coordinates): its legend is drawn inside the frame,
// on a white box, in the corner holding the fewest of them.
func save(p *gplot.Plot, base string, pts []plotter.XYs) (err error) {
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
		if err := render(p, path, ext, pts); err != nil {
			return fmt.Errorf("plot: writing %s: %w", path, err)
		}
	}
	return nil
}

func render(p *gplot.Plot, path, format string, pts []plotter.XYs) error {
	cw, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return err
	}
	dc := draw.New(cw)
	// gonum places a vertical axis label's glyph box at the linear middle
	// of the range, which on a log axis lies near the top, and then pads
	// the top of the chart for it; a blank label keeps the label's column
	// and the label is drawn here, centred on the data.
	ylab := p.Y.Label.Text
	if ylab != "" {
		p.Y.Label.Text = " "
		defer func() { p.Y.Label.Text = ylab }()
	}
	if pts != nil {
		roomForLegend(p, dc, pts)
	}
	leg := p.Legend
	p.Legend = gplot.NewLegend() // drawn below, on its own background
	p.Draw(dc)
	p.Legend = leg
	if ylab != "" {
		sty := p.Y.Label.TextStyle
		sty.Rotation += math.Pi / 2
		da := p.DataCanvas(dc)
		x := dc.Min.X + sty.Height(ylab) - sty.FontExtents().Descent
		dc.FillText(sty, vg.Point{X: x, Y: (da.Min.Y + da.Max.Y) / 2}, ylab)
	}
	if pts != nil {
		drawLegend(p, dc, pts)
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

// roomForLegend raises the top of the value axis, when the legend would
// cover the lines in every corner, so that a band as tall as the legend
// is left free above the data.
func roomForLegend(p *gplot.Plot, dc draw.Canvas, pts []plotter.XYs) {
	_, _, n := placeLegend(p, dc, pts)
	if n == 0 {
		return
	}
	da := p.DataCanvas(dc)
	r := p.Legend.Rectangle(da)
	frac := float64(r.Max.Y-r.Min.Y+3*legendPad) / float64(da.Max.Y-da.Min.Y)
	if frac <= 0 || frac >= 0.7 {
		return
	}
	lo, hi := p.Y.Min, p.Y.Max
	if _, log := p.Y.Scale.(gplot.LogScale); log {
		p.Y.Max = lo * math.Pow(hi/lo, 1/(1-frac))
	} else {
		p.Y.Max = lo + (hi-lo)/(1-frac)
	}
}

const legendPad = vg.Length(5)

// drawLegend draws p's legend inside its data area, on a white box with a
// grey border, in the corner where the box covers the fewest points of
// the lines (each segment sampled along its length; top left first on a
// tie).
func drawLegend(p *gplot.Plot, dc draw.Canvas, pts []plotter.XYs) {
	da := p.DataCanvas(dc)
	leg := p.Legend
	box, corner, _ := placeLegend(p, dc, pts)
	leg.Top, leg.Left = corner[0], corner[1]
	corners := []vg.Point{box.Min, {X: box.Max.X, Y: box.Min.Y}, box.Max, {X: box.Min.X, Y: box.Max.Y}}
	da.FillPolygon(color.NRGBA{255, 255, 255, 235}, corners)
	da.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 160}, Width: vg.Points(0.5)}, append(corners, box.Min))
	pad := legendPad
	inner := draw.Crop(da, box.Min.X-da.Min.X+pad, box.Max.X-da.Max.X-pad, box.Min.Y-da.Min.Y+pad, box.Max.Y-da.Max.Y-pad)
	leg.Draw(inner)
}

// placeLegend returns the legend's box in the corner of p's data area
// where it covers the fewest points of the lines (each segment sampled
// along its length; top left first on a tie), the corner (top, left) and
// how many it covers there.
func placeLegend(p *gplot.Plot, dc draw.Canvas, pts []plotter.XYs) (vg.Rectangle, [2]bool, int) {
	da := p.DataCanvas(dc)
	tx, ty := p.Transforms(&da)
	r := p.Legend.Rectangle(da)
	pad := legendPad
	w, h := r.Max.X-r.Min.X+2*pad, r.Max.Y-r.Min.Y+2*pad
	boxAt := func(top, left bool) vg.Rectangle {
		var b vg.Rectangle
		b.Min.X = da.Max.X - pad - w
		if left {
			b.Min.X = da.Min.X + pad
		}
		b.Min.Y = da.Min.Y + pad
		if top {
			b.Min.Y = da.Max.Y - pad - h
		}
		b.Max = vg.Point{X: b.Min.X + w, Y: b.Min.Y + h}
		return b
	}
	const steps = 16
	covered := func(b vg.Rectangle) int {
		n := 0
		for _, xys := range pts {
			for i := range xys {
				for k := 0; k < steps; k++ {
					if i+1 == len(xys) && k > 0 {
						break
					}
					x, y := tx(xys[i].X), ty(xys[i].Y)
					if k > 0 {
						f := vg.Length(k) / steps
						x += (tx(xys[i+1].X) - x) * f
						y += (ty(xys[i+1].Y) - y) * f
					}
					if x >= b.Min.X && x <= b.Max.X && y >= b.Min.Y && y <= b.Max.Y {
						n++
					}
				}
			}
		}
		return n
	}
	best, bestN := [2]bool{true, true}, -1
	for _, c := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
		if n := covered(boxAt(c[0], c[1])); bestN < 0 || n < bestN {
			best, bestN = c, n
		}
	}
	return boxAt(best[0], best[1]), best, bestN
}
