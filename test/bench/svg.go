package main

import (
	"fmt"
	"math"
	"strings"
)

type series struct {
	Name string
	X, Y []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// lineChart draws series as an SVG line chart with a log x axis when logX.
func lineChart(title, xLabel, yLabel string, logX bool, ss []series) string {
	const w, h, left, right, top, bottom = 640.0, 360.0, 70.0, 20.0, 40.0, 50.0
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for i := range s.X {
			minX, maxX, maxY = math.Min(minX, s.X[i]), math.Max(maxX, s.X[i]), math.Max(maxY, s.Y[i])
		}
	}
	if maxY == 0 || math.IsInf(minX, 1) {
		return ""
	}
	maxY *= 1.1
	fx := func(x float64) float64 {
		if logX {
			x, minX, maxX := math.Log10(x), math.Log10(minX), math.Log10(maxX)
			if maxX == minX {
				return left
			}
			return left + (x-minX)/(maxX-minX)*(w-left-right)
		}
		if maxX == minX {
			return left
		}
		return left + (x-minX)/(maxX-minX)*(w-left-right)
	}
	fy := func(y float64) float64 { return h - bottom - y/maxY*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="15" text-anchor="middle">%s</text>`+"\n", w/2, title)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n",
		left, h-bottom, w-right, h-bottom, left, top, left, h-bottom)
	for i := 0; i <= 5; i++ {
		y := maxY * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, fy(y), w-right, fy(y), left-6, fy(y)+4, short(y))
	}
	ticks := map[float64]bool{}
	for _, s := range ss {
		for _, x := range s.X {
			ticks[x] = true
		}
	}
	for x := range ticks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", fx(x), h-bottom+16, short(x))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (left+w-right)/2, h-12, xLabel)
	fmt.Fprintf(&b, `<text x="16" y="%.0f" text-anchor="middle" transform="rotate(-90 16 %.0f)">%s</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2, yLabel)
	for i, s := range ss {
		color := palette[i%len(palette)]
		var pts []string
		for j := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", fx(s.X[j]), fy(s.Y[j])))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", fx(s.X[j]), fy(s.Y[j]), color)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			left+12, top+8+float64(i)*16, color, left+30, top+12+float64(i)*16, s.Name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
