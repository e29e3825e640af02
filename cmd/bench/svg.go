package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
)

// Chart geometry, in SVG user units.
const (
	chartWidth = 880
	plotLeft   = 300 // bars start here; labels sit to the left
	plotRight  = 700 // the largest value ends here; value texts sit to the right
	rowHeight  = 26
	barHeight  = 16
)

// Bar colours: commands through snapexec, and the bench's own spawns.
const (
	serverColour = "#3b6fb6"
	directColour = "#a0a0a0"
)

// chart draws bench.svg: the latency medians with whiskers to p90 on a log
// scale, then the throughput ratios on a linear one.
func chart(r *results) []byte {
	var b bytes.Buffer
	lat := append(slices.Clone(r.Latency), r.FirstCapture...)
	latTop := 72
	latBottom := latTop + len(lat)*rowHeight
	tputTop := latBottom + 90
	tputBottom := tputTop + len(r.Throughput)*rowHeight
	height := tputBottom + 56

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	text(&b, 16, 24, "start", "bold", 15, "Latency of one command: median, whisker to p90 (ms, log scale)")
	legend(&b, 48)

	// Latency: decades from below the smallest median to above the largest p90.
	lo, hi := math.Inf(1), 0.0
	for _, s := range lat {
		lo, hi = min(lo, s.MedianMs), max(hi, s.P90Ms)
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	x := func(v float64) float64 {
		return plotLeft + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(plotRight-plotLeft)
	}
	for v := lo; v <= hi*1.001; v *= 10 {
		grid(&b, x(v), latTop-4, latBottom, fmt.Sprintf("%g ms", v))
	}
	for i, s := range lat {
		y := latTop + i*rowHeight
		colour := serverColour
		if s.Direct {
			colour = directColour
		}
		bar(&b, y, s.Label, x(s.MedianMs)-plotLeft, colour)
		cy := float64(y) + barHeight/2
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x(s.MedianMs), cy, x(s.P90Ms), cy)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x(s.P90Ms), cy-5, x(s.P90Ms), cy+5)
		text(&b, x(s.P90Ms)+6, y+12, "start", "normal", 12, fmt.Sprintf("%.2f (p90 %.2f)", s.MedianMs, s.P90Ms))
	}

	// Throughput ratios, linear from 0, with the target line.
	text(&b, 16, tputTop-36, "start", "bold", 15, "Throughput of /exec /bin/true ÷ direct spawns of /bin/true (1.0: as fast)")
	top := 1.2
	for _, l := range r.Throughput {
		top = max(top, math.Ceil(l.Ratio*5)/5)
	}
	xr := func(v float64) float64 { return plotLeft + v/top*(plotRight-plotLeft) }
	for v := 0.0; v <= top+1e-9; v += 0.2 {
		grid(&b, xr(v), tputTop-4, tputBottom, fmt.Sprintf("%.1f", v))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="5,3"/>`+"\n",
		xr(0.7), tputTop-8, xr(0.7), tputBottom+4)
	text(&b, xr(0.7)+4, tputTop-10, "start", "normal", 11, "target ≥ 0.7 at concurrency 16")
	for i, l := range r.Throughput {
		y := tputTop + i*rowHeight
		bar(&b, y, fmt.Sprintf("concurrency %d", l.Concurrency), xr(l.Ratio)-plotLeft, serverColour)
		text(&b, xr(l.Ratio)+6, y+12, "start", "normal", 12, fmt.Sprintf("%.2f× (%.0f vs %.0f req/s)", l.Ratio, l.ServerRPS, l.DirectRPS))
	}

	text(&b, 16, height-14, "start", "normal", 11, r.Machine.String())
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// bar draws one labelled bar of the given width from plotLeft.
func bar(b *bytes.Buffer, y int, label string, width float64, colour string) {
	text(b, plotLeft-8, y+12, "end", "normal", 12, label)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", plotLeft, y, max(width, 1), barHeight, colour)
}

// grid draws a vertical grid line with its tick label below.
func grid(b *bytes.Buffer, x float64, top, bottom int, label string) {
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`+"\n", x, top, x, bottom)
	text(b, x, bottom+14, "middle", "normal", 11, label)
}

// legend tells the two bar colours apart.
func legend(b *bytes.Buffer, y int) {
	for i, l := range []struct{ colour, label string }{{serverColour, "through snapexec"}, {directColour, "spawned directly by the bench"}} {
		x := plotLeft + i*170
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", x, y-10, l.colour)
		text(b, float64(x+18), y, "start", "normal", 12, l.label)
	}
}

// text writes one escaped text element, with a white halo that keeps it
// readable over grid and target lines.
func text(b *bytes.Buffer, x float64, y int, anchor, weight string, size int, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="%s" font-weight="%s" font-size="%d" paint-order="stroke" stroke="white" stroke-width="3">%s</text>`+"\n",
		x, y, anchor, weight, size, html.EscapeString(s))
}
