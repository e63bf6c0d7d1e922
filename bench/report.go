package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"
)

// report collects figures in the order they are measured, prints them as a
// table and writes them as JSON.
type report struct {
	only          string   // run only the steps whose name holds it
	profile       string   // where the MCP endpoint step saves its profiles (empty: none)
	suiteEnv      []string // added to the environment of the MCP endpoint step's suite
	warm, samples int
	window        time.Duration
	// scaleHosts and scaleQueued size the scale step.
	scaleHosts, scaleHostsR3, scaleQueued int

	keys   []string
	values map[string]any
	rows   [][4]string // what, figure, target, verdict
}

func newReport(warm, samples int, window time.Duration) *report {
	return &report{warm: warm, samples: samples, window: window, values: map[string]any{}}
}

func (r *report) set(key string, v any) {
	if _, ok := r.values[key]; !ok {
		r.keys = append(r.keys, key)
	}
	r.values[key] = v
}

// latency records a p50 and a p99 in microseconds.
func (r *report) latency(name string, l *latency) {
	r.set(name+"_p50_us", us(l.p50()))
	r.set(name+"_p99_us", us(l.p99()))
	r.rows = append(r.rows, [4]string{name, fmt.Sprintf("p50 %s  p99 %s", l.p50().Round(time.Microsecond), l.p99().Round(time.Microsecond)), "", ""})
}

func (r *report) rate(key string, perSec float64) {
	r.set(key, round(perSec))
	r.rows = append(r.rows, [4]string{key, fmt.Sprintf("%.0f /s", perSec), "", ""})
}

func (r *report) bytes(key string, n int64) {
	r.set(key, n)
	r.rows = append(r.rows, [4]string{key, fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)), "", ""})
}

// plain records a figure with no target.
func (r *report) plain(key string, v float64) { r.set(key, round(v)) }

// ratio records a/b under key and checks it against target.
func (r *report) ratio(key string, a, b time.Duration, target float64, atMost bool) {
	r.check(key, float64(a)/float64(b), target, atMost)
}

// check records a figure with a target and adds its row.
func (r *report) check(key string, v, target float64, atMost bool) {
	r.set(key, round(v))
	op, ok := "≥", v >= target
	if atMost {
		op, ok = "≤", v <= target
	}
	verdict := "holds"
	if !ok {
		verdict = "MISSED"
	}
	r.set(key+"_target_holds", ok)
	r.rows = append(r.rows, [4]string{key, fmt.Sprintf("%.3g", v), fmt.Sprintf("%s %g", op, target), verdict})
}

func (r *report) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tFIGURE\tTARGET\tVERDICT")
	for _, row := range r.rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", row[0], row[1], row[2], row[3])
	}
	tw.Flush()
}

func (r *report) write(path string) error {
	out := map[string]any{}
	for _, k := range r.keys {
		out[k] = r.values[k]
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func us(d time.Duration) float64 { return round(float64(d) / float64(time.Microsecond)) }

func round(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// figure records v under key and prints it, with no target: a cost
// reported, not held to a bound.
func (r *report) figure(key string, v float64) {
	r.set(key, round(v))
	r.rows = append(r.rows, [4]string{key, fmt.Sprintf("%.3g", v), "", ""})
}
