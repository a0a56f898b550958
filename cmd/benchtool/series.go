package main

import (
	"strconv"

	"github.com/prom-hbase/prom-hbase/internal/benchdata"
)

// A label set as a Prometheus scrape produces it: __name__, job and
// instance, then one to three more labels. Instance values carry no ':'
// (OpenTSDB refuses it in tag values), so both systems get host-N_9100.
type series struct {
	metric string
	labels [][2]string // name, value; sorted by name, __name__ not included
	kind   benchdata.Kind
}

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
		metric: "bench_" + strconv.Itoa(m) + "_" + benchdata.Kind(m%benchdata.Kinds).Suffix(),
		kind:   benchdata.Kind(m % benchdata.Kinds),
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

// valueGen yields the samples of one series (benchdata.Values).
type valueGen = benchdata.Values

func newValueGen(s series, idx int) *valueGen { return benchdata.NewValues(s.kind, idx) }
