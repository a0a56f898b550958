package e2e

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prom-hbase/prom-hbase/internal/scrape"
	"github.com/prometheus/prometheus/prompb"
)

// compactorArgs make the compactor of the suite's adapters take closed
// hours within about a minute and a half of their last write (the
// production defaults wait ten minutes past the hour and pass every
// minute).
var compactorArgs = []string{"--compactor.interval=10s", "--compactor.max-clock-skew=1s"}

// compactionRounds is issue 11's end-to-end check: once the adapters'
// compactors have folded the history into chunks, every question is asked
// again; then late samples are written into compacted hours (they land as
// raw cells beside the chunks) and asked about; then, once the next passes
// have folded those in too, once more.
func (s *suite) compactionRounds() {
	t := s.t
	before := s.waitCompacted(0)
	t.Logf("compactors: %.0f series-hours compacted, %.0f raw cells deleted", before.hours, before.deleted)
	// The rounds below must read both kinds of float cells the default
	// (--storage.float-chunks=auto) writes: dense cells of the decimal
	// values (Prometheus's own metrics, most of the history), XOR chunks of
	// the others.
	cells := map[string]float64{}
	for _, m := range s.adapterMetrics() {
		for _, l := range []string{"xor", "packed", "dense", "histogram"} {
			cells[l] += m.Sum("promhbase_compactor_cells_written_total", "layout", l)
		}
	}
	t.Logf("compactors: cells written by layout: %v", cells)
	if cells["dense"] == 0 || cells["xor"]+cells["packed"] == 0 || cells["histogram"] == 0 {
		t.Fatalf("cells written by layout %v: want dense cells, XOR chunks and histogram chunks", cells)
	}
	// The compactor that folded raw cells has the raw family swept (flush,
	// major compaction of r) at the end of that pass, so that the late
	// samples below are read without stepping over the folded cells.
	s.waitRawSweep()
	// 73 hour rows a series, less the hour not yet past its grace, less
	// the stale gaps: at least 70.
	if n := len(s.hist.series) + len(s.native.series); before.hours < float64(n)*70 {
		t.Fatalf("only %.0f series-hours compacted; the float and histogram history alone has %d series x 70-73 hours", before.hours, n)
	}
	all := query{expr: `count_over_time(e2e_history_gauge[4d])`, end: s.hist.end.Add(time.Minute)}
	sum := query{expr: `sum_over_time(e2e_history_gauge[4d])`, end: s.hist.end.Add(time.Minute), approx: true}
	nativeAll := query{expr: `count_over_time({job="e2e-nhistory"}[4d])`, end: s.hist.end.Add(time.Minute)}
	s.round("compacted", []query{all, sum, nativeAll})

	nativeLate := s.native.late()
	late := append(s.lateSamples(), nativeLate...)
	s.writeHistory(late)
	s.native.merge(nativeLate)
	s.faults = append(s.faults, fmt.Sprintf("compaction: %d late samples (%d of them histograms) written into compacted hours", countSamples(late), countSamples(nativeLate)))
	s.round("late samples", []query{all, sum, nativeAll})

	after := s.waitCompacted(before.deleted + float64(countSamples(late)))
	t.Logf("compactors: late samples folded in (%.0f raw cells deleted in all)", after.deleted)
	s.round("refolded", []query{all, sum, nativeAll})
}

// writeHistory writes history series to adapter 1 (retrying as Prometheus
// would) and, once acknowledged, to A, as the history itself was written.
func (s *suite) writeHistory(series []prompb.TimeSeries) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 3*time.Minute)
	defer cancel()
	for _, url := range []string{s.adapterURLs[0], s.a.base} {
		if err := mustRemoteWrite(ctx, url+"/api/v1/write", series); err != nil {
			s.t.Fatal(err)
		}
	}
}

type compactorState struct{ hours, deleted, lag float64 }

// waitCompacted waits until the adapters' compactors report no closed hour
// left and at least minDeleted raw cells deleted between them.
func (s *suite) waitCompacted(minDeleted float64) compactorState {
	deadline := time.Now().Add(6 * time.Minute)
	for {
		var st compactorState
		for _, m := range s.adapterMetrics() {
			st.hours += m.Sum("promhbase_compactor_series_hours_total")
			st.deleted += m.Sum("promhbase_compactor_raw_cells_deleted_total")
			st.lag = max(st.lag, m.Sum("promhbase_compactor_lag_seconds"))
		}
		if st.hours > 0 && st.lag == 0 && st.deleted >= minDeleted {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("compactors did not catch up: %+v, want lag 0 and %.0f raw cells deleted", st, minDeleted)
		}
		time.Sleep(2 * time.Second)
	}
}

// adapterMetrics scrapes the metrics of every adapter of the suite.
func (s *suite) adapterMetrics() []scrape.Page {
	out := make([]scrape.Page, 0, len(s.adapterURLs))
	for _, url := range s.adapterURLs {
		m, err := scrape.Get(s.ctx, url+"/metrics")
		if err != nil {
			s.t.Fatalf("metrics of %s: %v", url, err)
		}
		out = append(out, m)
	}
	return out
}

// waitRawSweep waits until some adapter's compactor has had the raw family
// swept (promhbase_compactor_raw_sweeps_total).
func (s *suite) waitRawSweep() {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sweeps := 0.0
		for _, m := range s.adapterMetrics() {
			sweeps += m.Sum("promhbase_compactor_raw_sweeps_total")
		}
		if sweeps > 0 {
			s.t.Logf("compactors: raw family swept %.0f times", sweeps)
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatal("no compactor had the raw family swept two minutes after the history was folded")
		}
		time.Sleep(time.Second)
	}
}

// lateSamples are new samples, between the minute samples of the history,
// for hours long compacted: early, in the middle and near the end.
func (s *suite) lateSamples() []prompb.TimeSeries {
	var out []prompb.TimeSeries
	for _, h := range s.hist.series {
		name, series := "", ""
		for _, l := range h.Labels {
			switch l.Name {
			case "__name__":
				name = l.Value
			case "series":
				series = l.Value
			}
		}
		if name != "e2e_history_gauge" || (series != "3" && series != "4") {
			continue
		}
		k, _ := strconv.Atoi(series)
		var smp []prompb.Sample
		for i, at := range []time.Time{s.hist.start.Add(2*time.Hour + 30*time.Second), s.hist.start.Add(40*time.Hour + 30*time.Second), s.hist.end.Add(-90*time.Minute - 30*time.Second)} {
			smp = append(smp, prompb.Sample{Timestamp: at.UnixMilli(), Value: 1000*float64(k) + float64(i) + 0.25})
		}
		out = append(out, prompb.TimeSeries{Labels: h.Labels, Samples: smp})
	}
	return out
}

func countSamples(series []prompb.TimeSeries) int {
	n := 0
	for _, s := range series {
		n += len(s.Samples) + len(s.Histograms)
	}
	return n
}
