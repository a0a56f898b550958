package remote

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/prom-hbase/prom-hbase/store"
)

// TestSeriesCacheBounded: the cache holds at most its budget, counted as
// entrySize counts, and keeps the entries that are looked up while others
// come and go: an entry stays while it is looked up at least once per
// half a shard's worth of new entries (here about 100 of about 190 bytes;
// it is looked up every 6 or so).
func TestSeriesCacheBounded(t *testing.T) {
	const budget = 640 << 10
	c := newSeriesCache(budget)
	lsSlice := []labels.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "node"}}
	key := func(i int) []byte { return fmt.Appendf(nil, "series-%06d", i) }
	hot := key(-1)
	c.put(hot, lsSlice, []byte("hot-id"))
	for i := range 20000 {
		c.put(key(i), lsSlice, []byte("id"))
		if i%100 == 0 {
			if e, ok := c.get(hot); !ok || string(e.id) != "hot-id" {
				t.Fatalf("after %d puts the entry looked up all along is gone", i)
			}
		}
	}
	total := 0
	for i := range c.shards {
		sh := &c.shards[i]
		for k, e := range sh.cur {
			total += entrySize(k, e)
		}
		for k, e := range sh.prev {
			total += entrySize(k, e)
		}
	}
	if total > budget {
		t.Errorf("cache holds %d bytes, more than its budget of %d", total, budget)
	}
	if total < budget/4 {
		t.Errorf("cache holds %d bytes of a budget of %d: it drops too much", total, budget)
	}
	if _, ok := c.get(key(0)); ok {
		t.Error("the first of 20,000 entries, never looked up, is still there")
	}
	if e, ok := c.get(key(19999)); !ok || string(e.id) != "id" || !slices.Equal(e.labels, lsSlice) {
		t.Errorf("the last entry put: %v %v", e, ok)
	}
	if newSeriesCache(0) != nil {
		t.Error("a budget of 0 makes a cache")
	}
}

// TestWriteSeriesCache: the same series sent again are served from the cache
// (hits counted), and what the store holds is what a handler without the
// cache stores from the same requests, on the real store. In 2.0 every
// other request numbers its symbols otherwise, as a sender's next request
// may.
func TestWriteSeriesCache(t *testing.T) {
	for _, v := range []struct {
		name string
		hdr  map[string]string
		body func(round int, series []prompb.TimeSeries) []byte
	}{
		{"v1", hdrV1, func(_ int, series []prompb.TimeSeries) []byte { return encodeV1(t, series, nil) }},
		{"v2", hdrV2, func(round int, series []prompb.TimeSeries) []byte {
			req := toV2(series)
			if round%2 == 1 {
				req = renumberSymbols(req)
			}
			return encodeV2(t, req)
		}},
	} {
		t.Run(v.name, func(t *testing.T) {
			cached, plain := openPebbleStore(t), openPebbleStore(t)
			srvC := newTestServer(t, cached, WriteConfig{SeriesCacheBytes: 1 << 20}, ReadConfig{})
			srvP := newTestServer(t, plain, WriteConfig{}, ReadConfig{})
			const t0 = int64(1_700_000_000_000)
			const n = 30
			for round := range 4 {
				body := v.body(round, testSeries(n, 5, t0+int64(round)*5*15000))
				for _, srv := range []*testServer{srvC, srvP} {
					if code, _, msg := post(t, srv.URL+"/api/v1/write", v.hdr, body); code != http.StatusNoContent {
						t.Fatalf("round %d: %d %s", round, code, msg)
					}
				}
				hits, misses := testutil.ToFloat64(srvC.m.seriesCacheHits), testutil.ToFloat64(srvC.m.seriesCacheMisses)
				if want := float64(round * n); hits != want || misses != n {
					t.Errorf("round %d: %v hits and %v misses, want %v and %d", round, hits, misses, want, n)
				}
			}
			if hits := testutil.ToFloat64(srvP.m.seriesCacheHits) + testutil.ToFloat64(srvP.m.seriesCacheMisses); hits != 0 {
				t.Errorf("the handler without a cache looked up %v series", hits)
			}
			got, want := readAllSeries(t, cached), readAllSeries(t, plain)
			if strings.Count(got, "\n") != n || got != want {
				t.Errorf("with the cache the store holds\n%s\nwithout it\n%s", got, want)
			}
		})
	}
}

// readAllSeries reads every series of st, formatted with its samples' bits.
func readAllSeries(t *testing.T, st store.Querier) string {
	t.Helper()
	ss := st.Select(context.Background(), store.Query{Start: 0, End: math.MaxInt64,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}})
	defer ss.Close()
	var b strings.Builder
	for ss.Next() {
		s := ss.At()
		fmt.Fprintf(&b, "%s:", s.Labels)
		for _, x := range s.Samples {
			fmt.Fprintf(&b, " %d=%x", x.T, math.Float64bits(x.V))
		}
		b.WriteByte('\n')
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWriteSeriesCacheChecks: a series served from the cache is still
// checked for what it carries, and the error names it by its labels.
func TestWriteSeriesCacheChecks(t *testing.T) {
	st := openPebbleStore(t)
	srv := newTestServer(t, st, WriteConfig{SeriesCacheBytes: 1 << 20}, ReadConfig{})
	const t0 = int64(1_700_000_000_000)
	series := testSeries(3, 2, t0)
	if code, _, msg := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, series, nil)); code != http.StatusNoContent {
		t.Fatalf("%d %s", code, msg)
	}
	empty := []prompb.TimeSeries{{Labels: series[1].Labels}}
	code, _, msg := post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, empty, nil))
	if code != http.StatusBadRequest || !strings.Contains(msg, "no samples") || !strings.Contains(msg, `"host-1:9100"`) {
		t.Errorf("a cached series without samples: %d %s", code, msg)
	}
	if hits := testutil.ToFloat64(srv.m.seriesCacheHits); hits != 1 {
		t.Errorf("%v hits, want the 1 of the empty series", hits)
	}
	// Out of what the row key holds: refused by the store, named.
	late := []prompb.TimeSeries{{Labels: series[2].Labels, Samples: []prompb.Sample{{Timestamp: 1 << 50, Value: 1}}}}
	code, _, msg = post(t, srv.URL+"/api/v1/write", hdrV1, encodeV1(t, late, nil))
	if code != http.StatusBadRequest || !strings.Contains(msg, `"host-2:9100"`) {
		t.Errorf("a cached series with a timestamp past 2106: %d %s", code, msg)
	}
}

// TestWriteSeriesCacheInterleaved: a sender that puts a label after a sample
// is decoded without the cache, and stored right.
func TestWriteSeriesCacheInterleaved(t *testing.T) {
	st := openPebbleStore(t)
	srv := newTestServer(t, st, WriteConfig{SeriesCacheBytes: 1 << 20}, ReadConfig{})
	label := func(b []byte, name, value string) []byte {
		var l []byte
		l = protowire.AppendTag(l, 1, protowire.BytesType)
		l = protowire.AppendString(l, name)
		l = protowire.AppendTag(l, 2, protowire.BytesType)
		l = protowire.AppendString(l, value)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendBytes(b, l)
	}
	sample := func(b []byte, t int64, v float64) []byte {
		var s []byte
		s = protowire.AppendTag(s, 1, protowire.Fixed64Type)
		s = protowire.AppendFixed64(s, math.Float64bits(v))
		s = protowire.AppendTag(s, 2, protowire.VarintType)
		s = protowire.AppendVarint(s, uint64(t))
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		return protowire.AppendBytes(b, s)
	}
	const t0 = int64(1_700_000_000_000)
	for round := range 2 {
		var ts []byte
		ts = label(ts, "__name__", "interleaved")
		ts = sample(ts, t0+int64(round)*15000, float64(round))
		ts = label(ts, "job", "odd")
		var req []byte
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, ts)
		if code, _, msg := post(t, srv.URL+"/api/v1/write", hdrV1, snappy.Encode(nil, req)); code != http.StatusNoContent {
			t.Fatalf("round %d: %d %s", round, code, msg)
		}
	}
	if n := testutil.ToFloat64(srv.m.seriesCacheHits) + testutil.ToFloat64(srv.m.seriesCacheMisses); n != 0 {
		t.Errorf("%v cache lookups for a series whose labels are not all first", n)
	}
	want := fmt.Sprintf("{__name__=\"interleaved\", job=\"odd\"}: %d=%x %d=%x\n", t0, math.Float64bits(0), t0+15000, math.Float64bits(1))
	if got := readAllSeries(t, st); got != want {
		t.Errorf("stored\n%s\nwant\n%s", got, want)
	}
}

// TestLabelPrefix: the label fields that begin a TimeSeries message, and
// whether any label follows another field.
func TestLabelPrefix(t *testing.T) {
	ts := prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "__name__", Value: "x"}, {Name: "a", Value: "b"}},
		Samples: []prompb.Sample{{Timestamp: 1, Value: 2}},
	}
	b, err := ts.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	labelsOnly, err := (&prompb.TimeSeries{Labels: ts.Labels}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := labelPrefix(b); !ok || n != len(labelsOnly) || string(b[:n]) != string(labelsOnly) {
		t.Errorf("labelPrefix = %d, %v; want %d, true", n, ok, len(labelsOnly))
	}
	if n, ok := labelPrefix(append(slices.Clone(b), labelsOnly...)); ok {
		t.Errorf("a label after the samples: labelPrefix = %d, true", n)
	}
	if _, ok := labelPrefix(b[:len(b)-1]); ok {
		t.Error("a truncated message: ok")
	}
	if n, ok := labelPrefix(nil); !ok || n != 0 {
		t.Errorf("empty: %d %v", n, ok)
	}
}

// FuzzDecodeV1Cached: a request decoded with the series cache, once a first
// decoding has taught the cache every series it may learn, gives the same
// series, samples and histograms as one decoded without it.
func FuzzDecodeV1Cached(f *testing.F) {
	seedWrites(f, false)
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeCached(t, b, (*writeRequest).decodeV1) })
}

// FuzzDecodeV2Cached is FuzzDecodeV1Cached for remote write 2.0, whose
// series are looked up by their decoded labels.
func FuzzDecodeV2Cached(f *testing.F) {
	seedWrites(f, true)
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeCached(t, b, (*writeRequest).decodeV2) })
}

func checkDecodeCached(t *testing.T, b []byte, decode func(*writeRequest, []byte) error) {
	var plain writeRequest
	errPlain := decode(&plain, b)
	c := newSeriesCache(1 << 20)
	first := writeRequest{cache: c}
	errFirst := decode(&first, b)
	if (errPlain == nil) != (errFirst == nil) {
		t.Fatalf("without the cache: %v; with it, empty: %v", errPlain, errFirst)
	}
	if errPlain != nil {
		return
	}
	if first.cacheHits != 0 || first.cacheMisses != len(first.learn) {
		t.Fatalf("an empty cache: %d hits, %d misses, %d to learn", first.cacheHits, first.cacheMisses, len(first.learn))
	}
	for _, l := range first.learn {
		s := first.series[l.i]
		key := l.key
		if key == nil {
			key = appendLabelFields(nil, s.Labels)
		}
		c.put(key, s.Labels, fmt.Appendf(nil, "id-%d", l.i))
	}
	second := writeRequest{cache: c}
	if err := decode(&second, b); err != nil {
		t.Fatalf("decoded once, refused with the cache: %v", err)
	}
	if second.cacheHits != len(first.learn) || len(second.learn) != 0 {
		t.Fatalf("%d hits and %d to learn after learning %d series", second.cacheHits, len(second.learn), len(first.learn))
	}
	for _, r := range []*writeRequest{&first, &second} {
		if len(r.series) != len(plain.series) || r.numHistograms != plain.numHistograms ||
			r.numExemplars != plain.numExemplars || (r.badHistogram == nil) != (plain.badHistogram == nil) ||
			len(r.metadata) != len(plain.metadata) {
			t.Fatalf("%d series, %d histograms, %d exemplars, %d metadata; without the cache %d, %d, %d, %d",
				len(r.series), r.numHistograms, r.numExemplars, len(r.metadata), len(plain.series), plain.numHistograms, plain.numExemplars, len(plain.metadata))
		}
		for i, s := range r.series {
			p := plain.series[i]
			if !slices.Equal(s.Labels, p.Labels) || len(s.Samples) != len(p.Samples) || len(s.Histograms) != len(p.Histograms) {
				t.Fatalf("series %d: %v with %d samples and %d histograms; without the cache %v, %d, %d",
					i, s.Labels, len(s.Samples), len(s.Histograms), p.Labels, len(p.Samples), len(p.Histograms))
			}
			for j, x := range s.Samples {
				if x.T != p.Samples[j].T || math.Float64bits(x.V) != math.Float64bits(p.Samples[j].V) {
					t.Fatalf("series %d sample %d: %v, without the cache %v", i, j, x, p.Samples[j])
				}
			}
			for j, h := range s.Histograms {
				if h.T != p.Histograms[j].T {
					t.Fatalf("series %d histogram %d at %d, without the cache at %d", i, j, h.T, p.Histograms[j].T)
				}
			}
		}
		for i, md := range r.metadata {
			if md != plain.metadata[i] {
				t.Fatalf("metadata %d: %+v, without the cache %+v", i, md, plain.metadata[i])
			}
		}
	}
}

// TestWriteSeriesCacheConcurrent: senders writing the same series at once
// (each its own timestamps) through one cache store every sample, in the
// series their labels name.
func TestWriteSeriesCacheConcurrent(t *testing.T) {
	st := openPebbleStore(t)
	srv := newTestServer(t, st, WriteConfig{SeriesCacheBytes: 1 << 20}, ReadConfig{})
	const senders, rounds, n = 4, 5, 12
	const t0 = int64(1_700_000_000_000)
	errs := make(chan string, senders*rounds)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for r := range rounds {
				body := encodeV1(t, testSeries(n, 1, t0+int64(r*senders+g)*15000), nil)
				if code, _, msg := post(t, srv.URL+"/api/v1/write", hdrV1, body); code != http.StatusNoContent {
					errs <- fmt.Sprintf("sender %d round %d: %d %s", g, r, code, msg)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	got := readAllSeries(t, st)
	if lines := strings.Count(got, "\n"); lines != n {
		t.Fatalf("%d series stored, want %d:\n%s", lines, n, got)
	}
	if samples := strings.Count(got, "="); samples != n*senders*rounds+n*4 { // 4 labels a series
		t.Errorf("%d samples and labels stored, want %d samples", samples-n*4, n*senders*rounds)
	}
	if hits := testutil.ToFloat64(srv.m.seriesCacheHits); hits < float64(n*(senders*rounds-senders)) {
		t.Errorf("%v hits: the senders' later requests missed the cache", hits)
	}
}
