package e2e

import (
	"context"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// blockRange is the span of the history's blocks, as Prometheus's head
// cuts them.
const blockRange = 2 * time.Hour

// writeHistoryBlocks writes the float and native-histogram history into
// TSDB blocks in dir, one per two hours as a Prometheus that scraped them
// would hold them, and one more that overlaps two of them as out-of-order
// ingestion leaves blocks: a series of its own, and a copy of some samples
// that the others hold. It returns how many blocks it wrote.
func writeHistoryBlocks(t *testing.T, dir string, h *history, nh *nativeHistory) int {
	t.Helper()
	all := append(append([]prompb.TimeSeries(nil), h.series...), nh.series...)
	step := blockRange.Milliseconds()
	n := 0
	for w := h.start.UnixMilli() / step * step; w <= h.end.UnixMilli(); w += step {
		writeBlock(t, dir, all, w, w+step)
		n++
	}
	// The out-of-order block: from 5 to 7 hours into the history.
	from, to := h.start.Add(5*time.Hour).UnixMilli(), h.start.Add(7*time.Hour).UnixMilli()
	ooo := prompb.TimeSeries{Labels: newSeries([]string{"__name__", "e2e_import_ooo", "job", "e2e-import"}, nil).Labels}
	for ts := from; ts < to; ts += 30_000 {
		ooo.Samples = append(ooo.Samples, prompb.Sample{Timestamp: ts, Value: float64(ts-from) / 1000})
	}
	writeBlock(t, dir, []prompb.TimeSeries{ooo, h.series[0]}, from, to)
	return n + 1
}

// writeBlock writes the samples of series in [mint, maxt) into one block
// with Prometheus's block writer.
func writeBlock(t *testing.T, dir string, series []prompb.TimeSeries, mint, maxt int64) {
	// The writer's head refuses samples more than half its chunk range
	// behind the newest: a range of twice the block's is enough.
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, 2*(maxt-mint))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	app := w.Appender(ctx)
	for _, s := range series {
		b := labels.NewScratchBuilder(len(s.Labels))
		for _, l := range s.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		fs := window(s.Samples, func(x prompb.Sample) int64 { return x.Timestamp }, mint, maxt)
		hs := window(s.Histograms, func(x prompb.Histogram) int64 { return x.Timestamp }, mint, maxt)
		if app, err = appendSeries(ctx, w, app, b.Labels(), fs, hs); err != nil {
			t.Fatalf("block [%d, %d): %v", mint, maxt, err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Flush(ctx); err != nil {
		t.Fatalf("write block [%d, %d): %v", mint, maxt, err)
	}
}

// window is the part of time-sorted xs in [mint, maxt).
func window[T any](xs []T, ts func(T) int64, mint, maxt int64) []T {
	lo := sort.Search(len(xs), func(i int) bool { return ts(xs[i]) >= mint })
	hi := sort.Search(len(xs), func(i int) bool { return ts(xs[i]) >= maxt })
	return xs[lo:hi]
}

// appendSeries appends a series' floats and histograms in time order (the
// switching series has both); it commits before the series changes kind,
// which one commit must not see, and returns the appender to go on with.
func appendSeries(ctx context.Context, w *tsdb.BlockWriter, app storage.Appender, ls labels.Labels, fs []prompb.Sample, hs []prompb.Histogram) (storage.Appender, error) {
	float := len(hs) == 0 || len(fs) > 0 && fs[0].Timestamp < hs[0].Timestamp
	for len(fs)+len(hs) > 0 {
		if next := len(hs) == 0 || len(fs) > 0 && fs[0].Timestamp < hs[0].Timestamp; next != float {
			if err := app.Commit(); err != nil {
				return app, err
			}
			app, float = w.Appender(ctx), next
		}
		var err error
		switch {
		case float:
			_, err = app.Append(0, ls, fs[0].Timestamp, fs[0].Value)
			fs = fs[1:]
		case hs[0].IsFloatHistogram():
			_, err = app.AppendHistogram(0, ls, hs[0].Timestamp, nil, hs[0].ToFloatHistogram())
			hs = hs[1:]
		default:
			_, err = app.AppendHistogram(0, ls, hs[0].Timestamp, hs[0].ToIntHistogram(), nil)
			hs = hs[1:]
		}
		if err != nil {
			return app, err
		}
	}
	return app, nil
}
