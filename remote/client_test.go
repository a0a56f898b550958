package remote

import (
	"context"
	"math"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestPrometheusClients drives the handlers through Prometheus's own
// remote-write and remote-read clients, on the in-memory test double.
func TestPrometheusClients(t *testing.T) {
	testPrometheusClients(t, newFakeStore())
}

// testPrometheusClients writes with RW 1.0 and 2.0 and reads back with
// SAMPLES and STREAMED_XOR_CHUNKS, comparing bit for bit. Shared by the
// tests on real stores.
func testPrometheusClients(t *testing.T, st appendQuerier) {
	ctx := context.Background()
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{MaxBytesInFrame: 4096})

	const t0 = int64(1_700_000_000_000)
	v1Series := testSeries(20, 300, t0) // 300 samples: 3 chunks per series
	v2Series := testSeries(20, 300, t0+300*15000)
	// RW 2.0 series get different label values so both sets are distinct.
	for i := range v2Series {
		v2Series[i].Labels = append(v2Series[i].Labels[:0:0], v2Series[i].Labels...)
		for j := range v2Series[i].Labels {
			if v2Series[i].Labels[j].Name == "job" {
				v2Series[i].Labels[j].Value = "node-v2"
			}
		}
	}

	for _, tc := range []struct {
		name   string
		msg    remoteapi.WriteMessageType
		body   []byte
		series []prompb.TimeSeries
	}{
		{"v1", remoteapi.WriteV1MessageType, encodeV1(t, v1Series, []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "metric_0", Help: "h", Unit: "bytes"}}), v1Series},
		{"v2", remoteapi.WriteV2MessageType, encodeV2(t, toV2(v2Series)), v2Series},
	} {
		t.Run("write_"+tc.name, func(t *testing.T) {
			c, err := remote.NewWriteClient("test", &remote.ClientConfig{URL: srv.url(t, "/api/v1/write"), Timeout: timeout(), WriteProtoMsg: tc.msg})
			if err != nil {
				t.Fatal(err)
			}
			stats, err := c.Store(ctx, tc.body, 0)
			if err != nil {
				t.Fatalf("Store: %v", err)
			}
			want := 0
			for _, s := range tc.series {
				want += len(s.Samples)
			}
			if tc.msg == remoteapi.WriteV2MessageType {
				if !stats.Confirmed || stats.Samples != want || stats.Histograms != 0 || stats.Exemplars != 0 {
					t.Fatalf("stats = %+v, want %d samples confirmed", stats, want)
				}
			}
		})
	}

	all := append(append([]prompb.TimeSeries{}, v1Series...), v2Series...)
	for _, rt := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		t.Run("read_"+rt.String(), func(t *testing.T) {
			c, err := remote.NewReadClient("test", &remote.ClientConfig{
				URL: srv.url(t, "/api/v1/read"), Timeout: timeout(), ChunkedReadLimit: 50 << 20,
				AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, job := range []string{"node", "node-v2"} {
				q, err := remote.ToQuery(t0, t0+1_000_000_000, []*labels.Matcher{
					labels.MustNewMatcher(labels.MatchRegexp, "__name__", "metric_.*"),
					labels.MustNewMatcher(labels.MatchEqual, "job", job),
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				ss, err := c.Read(ctx, q, true)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				var want []prompb.TimeSeries
				for _, s := range all {
					var b labels.ScratchBuilder
					if s.ToLabels(&b, nil).Get("job") == job {
						want = append(want, s)
					}
				}
				compareSeriesSet(t, ss, want)
			}
		})
	}
}

// compareSeriesSet checks ss against want (any order of want), merging the
// series that a streamed response splits over frames, samples compared with
// math.Float64bits.
func compareSeriesSet(t *testing.T, ss storage.SeriesSet, want []prompb.TimeSeries) {
	t.Helper()
	got := map[string][]prompb.Sample{}
	var order []labels.Labels
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		key := s.Labels().String()
		if _, ok := got[key]; !ok {
			order = append(order, s.Labels())
		}
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			got[key] = append(got[key], prompb.Sample{Timestamp: ts, Value: v})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatalf("series set: %v", err)
	}
	for i := 1; i < len(order); i++ {
		if labels.Compare(order[i-1], order[i]) >= 0 {
			t.Fatalf("series out of order: %s before %s", order[i-1], order[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d series, want %d", len(got), len(want))
	}
	for _, w := range want {
		var b labels.ScratchBuilder
		key := w.ToLabels(&b, nil).String()
		g, ok := got[key]
		if !ok {
			t.Fatalf("series %s missing", key)
		}
		if len(g) != len(w.Samples) {
			t.Fatalf("series %s: %d samples, want %d", key, len(g), len(w.Samples))
		}
		for i := range g {
			if g[i].Timestamp != w.Samples[i].Timestamp || math.Float64bits(g[i].Value) != math.Float64bits(w.Samples[i].Value) {
				t.Fatalf("series %s sample %d: got (%d, %#x), want (%d, %#x)", key, i,
					g[i].Timestamp, math.Float64bits(g[i].Value), w.Samples[i].Timestamp, math.Float64bits(w.Samples[i].Value))
			}
		}
	}
}
