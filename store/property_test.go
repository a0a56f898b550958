package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// refSeries is the in-memory reference of one series: what a correct store
// returns is computed from it directly.
type refSeries struct {
	in      []labels.Label
	lset    labels.Labels // without empty values
	samples map[int64]uint64
}

var (
	propNames  = []string{"job", "instance", "pod", "zone", "ü-label", "le", "A"}
	propValues = []string{"a", "b", "ab", "x", "日本", "αβγ", "with space", "quo\"te", "", "0.5", "+Inf"}
	propMetric = []string{"up", "http_requests_total", "ö_metric", "m:rate5m", ""}
	propRegex  = []string{".*", ".+", "a.*", "a|b", "x", "日本|αβγ", "", "(?i)A", "[0-9.]+", "b|"}
	propFloats = []uint64{
		0x7ff0000000000002, // staleness marker
		0x7ff8000000000001, // quiet NaN with payload
		0x7ff0000000000001, // signalling NaN
		0xfff8000000000000, // negative NaN
		0x8000000000000000, // -0
		0x7ff0000000000000, // +Inf
	}
)

// randSeries draws a series; the write path refuses series without a
// metric name, so every series has one.
func randSeries(rng *rand.Rand) []labels.Label {
	var ls []labels.Label
	m := propMetric[rng.IntN(len(propMetric))]
	for m == "" {
		m = propMetric[rng.IntN(len(propMetric))]
	}
	ls = append(ls, labels.Label{Name: model.MetricNameLabel, Value: m})
	for _, n := range propNames {
		if rng.IntN(3) == 0 {
			ls = append(ls, labels.Label{Name: n, Value: propValues[rng.IntN(len(propValues))]})
		}
	}
	if rng.IntN(4) == 0 {
		ls = append(ls, labels.Label{Name: "id", Value: fmt.Sprintf("ünique-%d", rng.Uint32())})
	}
	slices.SortFunc(ls, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

func withoutEmpty(ls []labels.Label) labels.Labels {
	var b labels.ScratchBuilder
	for _, l := range ls {
		if l.Value != "" {
			b.Add(l.Name, l.Value)
		}
	}
	b.Sort()
	return b.Labels()
}

func randValue(rng *rand.Rand) uint64 {
	if rng.IntN(4) == 0 {
		return propFloats[rng.IntN(len(propFloats))]
	}
	return math.Float64bits(rng.NormFloat64() * 1e3)
}

func randMatcher(t testing.TB, rng *rand.Rand) *labels.Matcher {
	name := model.MetricNameLabel
	if rng.IntN(3) > 0 {
		name = propNames[rng.IntN(len(propNames))]
	}
	typ := labels.MatchType(rng.IntN(4))
	var value string
	switch {
	case typ == labels.MatchEqual || typ == labels.MatchNotEqual:
		if name == model.MetricNameLabel {
			value = propMetric[rng.IntN(len(propMetric))]
		} else {
			value = propValues[rng.IntN(len(propValues))]
		}
		if rng.IntN(10) == 0 {
			value = "never-written"
		}
	default:
		value = propRegex[rng.IntN(len(propRegex))]
	}
	return mustMatcher(t, typ, name, value)
}

// TestProperty writes random series and samples (unicode, shared and
// distinct names, NaN payloads, out-of-order and duplicate timestamps, hour
// boundaries) and compares random queries with the reference evaluation.
func TestProperty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		testProperty(t, db, prefix, 200)
	})
}

func testProperty(t *testing.T, db table.DB, prefix string, queries int) {
	ctx := context.Background()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	// Small batches so that a query's phase two crosses batch limits.
	s := openStore(t, db, Config{TablePrefix: prefix, ReadBatchSeries: 3, ReadBatchRows: 5, Layout: rowkey.Layout{SaltBuckets: 4}})

	base := int64(1_750_000_000_000) / hour * hour
	window := [2]int64{base - 2*hour, base + 2*hour}
	ref := map[string]*refSeries{}
	var series []*refSeries
	for range 80 {
		ls := randSeries(rng)
		key := withoutEmpty(ls).String()
		if _, dup := ref[key]; dup {
			continue
		}
		r := &refSeries{in: ls, lset: withoutEmpty(ls), samples: map[int64]uint64{}}
		ref[key] = r
		series = append(series, r)
	}
	// Several batches: later ones overwrite earlier samples at the same time.
	// Between them, random series-hours are compacted (as the compactor
	// does, directly), so that later batches land as late raw samples beside
	// chunks.
	for round := range 4 {
		var batch []SeriesIn
		for _, r := range series {
			if rng.IntN(3) == 0 {
				continue
			}
			var smps []Sample
			seen := map[int64]bool{}
			for range rng.IntN(40) {
				ts := window[0] + rng.Int64N(window[1]-window[0])
				if rng.IntN(5) == 0 { // near an hour boundary
					ts = base + int64(rng.IntN(3)-1)*hour + int64(rng.IntN(3)-1)
				}
				if seen[ts] {
					continue // one sample per timestamp within a batch
				}
				seen[ts] = true
				v := randValue(rng)
				smps = append(smps, Sample{T: ts, V: math.Float64frombits(v)})
				r.samples[ts] = v
			}
			if len(smps) > 0 { // the write path refuses series without samples
				batch = append(batch, SeriesIn{Labels: r.in, Samples: smps})
			}
		}
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if round < 3 {
			compactRandomHours(t, rng, s, series)
		}
	}

	for range queries {
		var ms []*labels.Matcher
		for range 1 + rng.IntN(3) {
			ms = append(ms, randMatcher(t, rng))
		}
		start := window[0] - hour/2 + rng.Int64N(window[1]-window[0]+hour)
		end := start + rng.Int64N(3*hour)
		seriesOnly := rng.IntN(5) == 0
		q := Query{Start: start, End: end, Matchers: ms, SeriesOnly: seriesOnly}
		want := reference(series, q)
		if got := collectChunksString(t, s.SelectChunks(ctx, q), seriesOnly); got != want {
			t.Fatalf("chunks of query %v [%d, %d] series-only %v:\ngot\n%s\nwant\n%s", ms, start, end, seriesOnly, got, want)
		}
		got := collect(t, s.Select(ctx, q))
		if got != want {
			t.Fatalf("query %v [%d, %d] series-only %v:\ngot\n%s\nwant\n%s", ms, start, end, seriesOnly, got, want)
		}
	}
}

// reference evaluates q on the reference series, in the format of collect.
func reference(series []*refSeries, q Query) string {
	type out struct {
		lset labels.Labels
		ts   []int64
		r    *refSeries
	}
	var res []out
	startHour := q.Start / hour * hour
	endHour := q.End / hour * hour
	for _, r := range series {
		ok := true
		for _, m := range q.Matchers {
			if !m.Matches(r.lset.Get(m.Name)) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		var ts []int64
		inHours := false
		for t := range r.samples {
			if t >= q.Start && t <= q.End {
				ts = append(ts, t)
			}
			if h := t / hour * hour; h >= startHour && h <= endHour {
				inHours = true
			}
		}
		if q.SeriesOnly {
			if inHours {
				res = append(res, out{lset: r.lset})
			}
			continue
		}
		if len(ts) == 0 {
			continue
		}
		slices.Sort(ts)
		res = append(res, out{lset: r.lset, ts: ts, r: r})
	}
	slices.SortFunc(res, func(a, b out) int { return labels.Compare(a.lset, b.lset) })
	var b strings.Builder
	for _, o := range res {
		b.WriteString(o.lset.String())
		for _, t := range o.ts {
			fmt.Fprintf(&b, " %d:%x", t, o.r.samples[t])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// compactRandomHours compacts about a third of the series-hours that hold
// samples, from the reference (what the store holds).
func compactRandomHours(t *testing.T, rng *rand.Rand, s *Store, series []*refSeries) {
	for _, r := range series {
		byHour := map[int64][]Sample{}
		for ts, v := range r.samples {
			byHour[ts/hour*hour] = append(byHour[ts/hour*hour], Sample{T: ts, V: math.Float64frombits(v)})
		}
		for _, smps := range byHour {
			if rng.IntN(3) != 0 {
				continue
			}
			slices.SortFunc(smps, compareSampleT)
			compactHour(t, s, r.in, smps)
		}
	}
}

// collectChunksString is collect for a ChunkSeriesSet: the chunks decoded.
func collectChunksString(t testing.TB, cs ChunkSeriesSet, seriesOnly bool) string {
	var b strings.Builder
	for _, o := range collectChunks(t, cs) {
		if seriesOnly && len(o.chunks) > 0 {
			t.Fatalf("series-only query returned chunks for %s", o.lset)
		}
		b.WriteString(o.lset + samplesString(o.samples) + "\n")
	}
	return b.String()
}
