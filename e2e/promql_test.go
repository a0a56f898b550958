package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// promAPI is a client of the Prometheus HTTP query API.
type promAPI struct {
	name string
	base string // http://host:port
}

// point is one sample of an answer. The value stays the string Prometheus
// printed (shortest round-trip form), so equality is exact.
type point struct {
	t int64 // milliseconds
	v string
}

// series is one series of an answer; key is its canonical label set.
type series struct {
	key    string
	points []point
}

type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
	Warnings  []string        `json:"warnings"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

type apiSeries struct {
	Metric     map[string]string   `json:"metric"`
	Value      []any               `json:"value"`
	Values     [][]any             `json:"values"`
	Histogram  []json.RawMessage   `json:"histogram"`
	Histograms [][]json.RawMessage `json:"histograms"`
}

func (p promAPI) get(ctx context.Context, path string, params url.Values) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.name, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read: %w", p.name, path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s %s: %s: %.200s", p.name, path, resp.Status, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s %s %v: %s: %s", p.name, path, params, r.ErrorType, r.Error)
	}
	// A failed remote read is only a warning to Prometheus, next to an
	// empty answer: here it is an error.
	if len(r.Warnings) > 0 {
		return nil, fmt.Errorf("%s %s %v: warnings: %s", p.name, path, params, strings.Join(r.Warnings, "; "))
	}
	return r.Data, nil
}

// query runs an instant query (range is zero) or a range query and returns
// the answer sorted by label set.
func (p promAPI) query(ctx context.Context, q query) ([]series, error) {
	params := url.Values{"query": {q.expr}}
	path := "/api/v1/query"
	if q.step > 0 {
		path = "/api/v1/query_range"
		// Steps are counted from start: align start on end so that the last
		// step is end itself. Otherwise it may fall just before a sample the
		// pinned end was chosen to include.
		start := q.end.Add(-q.end.Sub(q.start).Truncate(q.step))
		params.Set("start", apiTime(start))
		params.Set("end", apiTime(q.end))
		params.Set("step", strconv.FormatFloat(q.step.Seconds(), 'f', -1, 64))
	} else {
		params.Set("time", apiTime(q.end))
	}
	raw, err := p.get(ctx, path, params)
	if err != nil {
		return nil, err
	}
	var d queryData
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: decode %s: %w", p.name, q.expr, err)
	}
	switch d.ResultType {
	case "scalar", "string":
		var v []any
		if err := json.Unmarshal(d.Result, &v); err != nil {
			return nil, err
		}
		pt, err := toPoint(v)
		if err != nil {
			return nil, err
		}
		return []series{{key: "{}", points: []point{pt}}}, nil
	}
	var ss []apiSeries
	if err := json.Unmarshal(d.Result, &ss); err != nil {
		return nil, fmt.Errorf("%s: decode %s: %w", p.name, q.expr, err)
	}
	out := make([]series, 0, len(ss))
	for _, s := range ss {
		var pts []point
		if s.Value != nil {
			pt, err := toPoint(s.Value)
			if err != nil {
				return nil, err
			}
			pts = append(pts, pt)
		}
		for _, v := range s.Values {
			pt, err := toPoint(v)
			if err != nil {
				return nil, err
			}
			pts = append(pts, pt)
		}
		if pts, err = appendHistogramPoints(pts, s.Histogram, s.Histograms); err != nil {
			return nil, fmt.Errorf("%s: decode %s: %w", p.name, q.expr, err)
		}
		out = append(out, series{key: labelKey(s.Metric), points: pts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, nil
}

// seriesOf asks /api/v1/series, which B answers from remote read's
// series-only hint. Duplicates are kept: two series with one label set
// would mean one string got two UIDs.
func (p promAPI) seriesOf(ctx context.Context, match string, start, end time.Time) ([]string, error) {
	raw, err := p.get(ctx, "/api/v1/series", url.Values{"match[]": {match}, "start": {apiTime(start)}, "end": {apiTime(end)}})
	if err != nil {
		return nil, err
	}
	var ms []map[string]string
	if err := json.Unmarshal(raw, &ms); err != nil {
		return nil, fmt.Errorf("%s: decode series: %w", p.name, err)
	}
	keys := make([]string, len(ms))
	for i, m := range ms {
		keys[i] = labelKey(m)
	}
	sort.Strings(keys)
	return keys, nil
}

func toPoint(v []any) (point, error) {
	if len(v) != 2 {
		return point{}, fmt.Errorf("bad sample %v", v)
	}
	ts, ok := v[0].(float64)
	if !ok {
		return point{}, fmt.Errorf("bad timestamp %v", v[0])
	}
	val, ok := v[1].(string)
	if !ok {
		return point{}, fmt.Errorf("bad value %v", v[1])
	}
	return point{t: int64(math.Round(ts * 1000)), v: val}, nil
}

func labelKey(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", n, m[n])
	}
	b.WriteByte('}')
	return b.String()
}

func apiTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// query is one PromQL question; step 0 makes it an instant query at end.
type query struct {
	expr       string
	start, end time.Time
	step       time.Duration
	// approx allows a relative difference of 1e-12: PromQL may add up the
	// same samples in another order.
	approx bool
	// mayBeEmpty marks the few questions whose right answer can be empty
	// (every other one must be non-empty in A, so that the suite cannot
	// pass by comparing nothing with nothing).
	mayBeEmpty bool
}

func (q query) String() string {
	if q.step == 0 {
		return fmt.Sprintf("%s @ %s", q.expr, q.end.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s [%s .. %s step %v]", q.expr, q.start.UTC().Format(time.RFC3339), q.end.UTC().Format(time.RFC3339Nano), q.step)
}

// diff compares the reference answer a with b. It returns a description of
// the first differences (empty when equal), the number of samples compared
// and how many of them were equal only within the tolerance.
func diff(a, b []series, approx bool) (msg string, samples, inexact int) {
	var out []string
	report := func(format string, args ...any) {
		if len(out) < 8 {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	for i := 1; i < len(b); i++ {
		if b[i].key == b[i-1].key {
			report("B answers series %s twice", b[i].key)
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i].key < b[j].key):
			report("missing in B: %s (%d samples)", a[i].key, len(a[i].points))
			i++
		case i >= len(a) || b[j].key < a[i].key:
			report("extra in B: %s (%d samples)", b[j].key, len(b[j].points))
			j++
		default:
			pa, pb := a[i].points, b[j].points
			if len(pa) != len(pb) {
				report("%s: A has %d samples, B %d%s", a[i].key, len(pa), len(pb), firstPointDiff(pa, pb))
			} else {
				for k := range pa {
					samples++
					eq, exact := sameValue(pa[k].v, pb[k].v, approx)
					if pa[k].t != pb[k].t || !eq {
						report("%s: sample %d: A %d=%s, B %d=%s", a[i].key, k, pa[k].t, pa[k].v, pb[k].t, pb[k].v)
						continue
					}
					if !exact {
						inexact++
					}
				}
			}
			i++
			j++
		}
	}
	return strings.Join(out, "\n"), samples, inexact
}

func firstPointDiff(a, b []point) string {
	for k := range min(len(a), len(b)) {
		if a[k] != b[k] {
			return fmt.Sprintf("; first difference at %d: A %d=%s, B %d=%s", k, a[k].t, a[k].v, b[k].t, b[k].v)
		}
	}
	if len(a) > len(b) {
		return fmt.Sprintf("; B ends before A's %d=%s", a[len(b)].t, a[len(b)].v)
	}
	return fmt.Sprintf("; B goes on with %d=%s", b[len(a)].t, b[len(a)].v)
}

func sameValue(a, b string, approx bool) (eq, exact bool) {
	if a == b {
		return true, true
	}
	if !approx {
		return false, false
	}
	if isHistogramValue(a) || isHistogramValue(b) {
		return sameHistogram(a, b), false
	}
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	if errA != nil || errB != nil || math.IsNaN(fa) || math.IsNaN(fb) || math.IsInf(fa, 0) || math.IsInf(fb, 0) {
		return false, false
	}
	scale := math.Max(math.Abs(fa), math.Abs(fb))
	return math.Abs(fa-fb) <= 1e-12*scale, false
}
