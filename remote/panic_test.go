package remote

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/store"
)

// panicOnceStore panics in its first Write, as a bug in the store would.
type panicOnceStore struct {
	*fakeStore
	calls atomic.Int32
}

func (p *panicOnceStore) Write(ctx context.Context, batch []store.SeriesIn) error {
	if p.calls.Add(1) == 1 {
		var refused []bool
		_ = refused[0] // index out of range, as the pooled writer's once did
	}
	return p.fakeStore.Write(ctx, batch)
}

// TestWriteStorePanic: a store call runs in a goroutine of the handler's,
// whose panics net/http does not recover: one request's bug in the store
// would end the process. It must be answered 503, as a failed store call
// is, and the next request served.
func TestWriteStorePanic(t *testing.T) {
	st := &panicOnceStore{fakeStore: newFakeStore()}
	srv := newTestServer(t, st, WriteConfig{}, ReadConfig{})
	u := srv.URL + "/api/v1/write"
	body := encodeV1(t, []prompb.TimeSeries{{Labels: lbls("__name__", "up", "job", "a"), Samples: oneSample()}}, nil)
	if code, _, msg := post(t, u, hdrV1, body); code != http.StatusServiceUnavailable || !strings.Contains(msg, "panicked") {
		t.Fatalf("the write whose store call panicked: %d %q; want 503 saying it panicked", code, msg)
	}
	if code, _, msg := post(t, u, hdrV1, body); code != http.StatusNoContent {
		t.Fatalf("the next write: %d %q; want 204", code, msg)
	}
	if got := st.fakeStore.series[labels.FromStrings("__name__", "up", "job", "a").String()]; got == nil || len(got.samples) != 1 {
		t.Fatalf("the store holds %+v after the retried write, want its sample", got)
	}
}
