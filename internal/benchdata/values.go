// Package benchdata owns the values of make bench's data set: four kinds of
// series as exporters write them, each drawn from a seeded generator, so
// that the benchmark tool gives every system the same samples and the
// codecs' tests measure sizes on those very samples. It knows nothing of
// labels, stores or encodings.
package benchdata

import (
	"math"
	"math/rand/v2"
)

// Kind is a kind of series' values.
type Kind int

const (
	IntCounter   Kind = iota // requests_total, histogram buckets: integer increments, none in half the scrapes
	FloatCounter             // cpu_seconds_total: increments with two decimals
	IntGauge                 // memory bytes: pages, unchanged in 70 % of scrapes
	FloatGauge               // load averages: two decimals, a random walk, unchanged in half the scrapes
)

// Kinds is how many kinds there are; Kind(i % Kinds) spreads series over them.
const Kinds = 4

// Suffix is the metric-name suffix of a kind, as the benchmark names its
// metrics.
func (k Kind) Suffix() string {
	return [...]string{"requests_total", "cpu_seconds_total", "memory_bytes", "load_ratio"}[k]
}

// IsCounter reports whether k's values only grow.
func (k Kind) IsCounter() bool { return k == IntCounter || k == FloatCounter }

// Values yields the samples' values of one series: counters that only grow,
// gauges that wander, each of a realistic precision.
type Values struct {
	kind Kind
	rng  *rand.Rand
	v    float64
}

// NewValues returns the values of series seed of kind: the same seed and
// kind give the same values.
func NewValues(kind Kind, seed int) *Values {
	g := &Values{kind: kind, rng: rand.New(rand.NewPCG(uint64(seed), 42))}
	switch kind {
	case IntCounter:
		g.v = float64(g.rng.IntN(1_000_000))
	case FloatCounter:
		g.v = float64(g.rng.IntN(10_000_000)) / 100
	case IntGauge:
		g.v = float64(4096 * (10_000 + g.rng.IntN(1_000_000)))
	case FloatGauge:
		g.v = float64(g.rng.IntN(400)) / 100
	}
	return g
}

// Next is the series' next value.
func (g *Values) Next() float64 {
	switch g.kind {
	case IntCounter:
		if g.rng.IntN(2) == 0 {
			g.v += float64(1 + g.rng.IntN(20))
		}
	case FloatCounter:
		g.v = math.Round((g.v+float64(g.rng.IntN(1500))/100)*100) / 100
	case IntGauge:
		if g.rng.IntN(10) >= 7 {
			g.v += float64(4096 * (g.rng.IntN(201) - 100))
		}
	case FloatGauge:
		if g.rng.IntN(2) == 0 {
			g.v = math.Round(math.Abs(g.v+g.rng.NormFloat64()*0.1)*100) / 100
		}
	}
	return g.v
}
