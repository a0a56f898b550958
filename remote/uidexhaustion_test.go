package remote

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// TestWriteAfterUIDExhaustion: a remote write that the store answers with a
// partial 400 (a series needs a tag-value UID of a used-up space) leaves
// the adapter serving the next requests, of known series, with 204. The
// store's pooled writer once kept a zero-length refused slice that the
// next write through it indexed: a panic in the goroutine of the store
// call, which ended the process.
func TestWriteAfterUIDExhaustion(t *testing.T) {
	db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	// 1-byte tag values: 255 of them, as a small stand-in for 4-byte ones.
	st, err := store.Open(context.Background(), db, store.Config{Layout: rowkey.Layout{MetricWidth: 3, TagKWidth: 3, TagVWidth: 1, SaltBuckets: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	u := srv.URL + "/api/v1/write"

	series := func(pods ...string) []prompb.TimeSeries {
		var out []prompb.TimeSeries
		for _, p := range pods {
			out = append(out, prompb.TimeSeries{Labels: lbls("__name__", "up", "pod", p), Samples: oneSample()})
		}
		return out
	}
	var fill []string
	for i := range 254 {
		fill = append(fill, fmt.Sprint("p", i))
	}
	if code, _, msg := post(t, u, hdrV1, encodeV1(t, series(fill...), nil)); code != 204 {
		t.Fatalf("fill: %d %s", code, msg)
	}
	// One tag value left for two new ones: a partial write, answered 400.
	if code, _, msg := post(t, u, hdrV1, encodeV1(t, series("new-a", "new-b"), nil)); code != 400 {
		t.Fatalf("exhausting write: %d %s, want 400", code, msg)
	}
	// Known series only: nothing to refuse.
	for i := range 4 {
		if code, _, msg := post(t, u, hdrV1, encodeV1(t, series("p1", "p2"), nil)); code != 204 {
			t.Fatalf("write %d after the exhausting one: %d %s, want 204", i, code, msg)
		}
	}
}
