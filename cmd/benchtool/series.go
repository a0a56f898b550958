package main

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// A label set as a Prometheus scrape produces it: __name__, job and
// instance, then one to three more labels. Instance values carry no ':'
// (OpenTSDB refuses it in tag values), so both systems get host-N_9100.
type series struct {
	metric string
	labels [][2]string // name, value; sorted by name, __name__ not included
	kind   valueKind
}

type valueKind int

const (
	intCounter   valueKind = iota // requests_total, histogram buckets: integer increments, none in half the scrapes
	floatCounter                  // cpu_seconds_total: increments with two decimals
	intGauge                      // memory bytes: pages, unchanged in 70 % of scrapes
	floatGauge                    // load averages: two decimals, a random walk, unchanged in half the scrapes
)

var kindSuffix = [...]string{"requests_total", "cpu_seconds_total", "memory_bytes", "load_ratio"}

// seriesSet builds n series for run (a token that makes pod values new),
// spread over metrics metric names. The strings a fresh store must assign
// are the metric names, the label names and the label values; with n =
// 10,000 and 40 metrics that is 10,115 strings, as in issue 10.
func seriesSet(run string, n, metrics int) []series {
	out := make([]series, n)
	for i := range out {
		out[i] = newSeries(run, i, i, metrics)
	}
	return out
}

// newSeries is series i of a set; pod is the index that makes its pod
// label value unique (the sustained cold-start load keeps the other labels
// of a known series and brings a new pod).
func newSeries(run string, i, pod, metrics int) series {
	m := i % metrics
	job := "node"
	if i%2 == 1 {
		job = "app"
	}
	s := series{
		metric: "bench_" + strconv.Itoa(m) + "_" + kindSuffix[m%4],
		kind:   valueKind(m % 4),
	}
	// Sorted by label name, as Prometheus sends them.
	if i%3 == 0 {
		s.labels = append(s.labels, [2]string{"container", "container-" + strconv.Itoa(i%5)})
	}
	s.labels = append(s.labels,
		[2]string{"instance", "host-" + strconv.Itoa(i%60) + "_9100"},
		[2]string{"job", job},
		[2]string{"pod", "pod-" + run + "-" + strconv.Itoa(pod)},
	)
	if i%2 == 0 {
		s.labels = append(s.labels, [2]string{"zone", "zone-" + strconv.Itoa(i%3)})
	}
	return s
}

// distinctStrings counts the strings a store that has none of them must
// assign: metric names, label names and label values.
func distinctStrings(set []series) int {
	metrics, names, values := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range set {
		metrics[s.metric] = true
		for _, l := range s.labels {
			names[l[0]], values[l[1]] = true, true
		}
	}
	return len(metrics) + len(names) + len(values)
}

// valueGen yields the samples of one series: counters that only grow,
// gauges that wander, each of a realistic precision. Seeded per series so
// every target gets the same values.
type valueGen struct {
	kind valueKind
	rng  *rand.Rand
	v    float64
}

func newValueGen(s series, idx int) *valueGen {
	g := &valueGen{kind: s.kind, rng: rand.New(rand.NewPCG(uint64(idx), 42))}
	switch s.kind {
	case intCounter:
		g.v = float64(g.rng.IntN(1_000_000))
	case floatCounter:
		g.v = float64(g.rng.IntN(10_000_000)) / 100
	case intGauge:
		g.v = float64(4096 * (10_000 + g.rng.IntN(1_000_000)))
	case floatGauge:
		g.v = float64(g.rng.IntN(400)) / 100
	}
	return g
}

func (g *valueGen) next() float64 {
	switch g.kind {
	case intCounter:
		if g.rng.IntN(2) == 0 {
			g.v += float64(1 + g.rng.IntN(20))
		}
	case floatCounter:
		g.v = math.Round((g.v+float64(g.rng.IntN(1500))/100)*100) / 100
	case intGauge:
		if g.rng.IntN(10) >= 7 {
			g.v += float64(4096 * (g.rng.IntN(201) - 100))
		}
	case floatGauge:
		if g.rng.IntN(2) == 0 {
			g.v = math.Round(math.Abs(g.v+g.rng.NormFloat64()*0.1)*100) / 100
		}
	}
	return g.v
}
