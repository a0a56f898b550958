package remote

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
	"google.golang.org/protobuf/encoding/protowire"
)

// allocated returns the bytes f allocates (garbage included): what a
// request costs the process, whatever it keeps.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bombV2 is a 2.0 request of 60,000 identical series of 64 labels: 9 MB of
// protobuf that snappy compresses to 450 KB, and whose labels alone take
// 123 MiB once decoded.
func bombV2(t testing.TB) (decoded, body []byte) {
	decoded = mustMarshal(t, wideV2(60_000, 64))
	return decoded, snappy.Encode(nil, decoded)
}

func serveOnce(h http.Handler, hdr map[string]string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestWriteMemoryBoundedByRequest is the regression test of decoding that
// was not bounded by the body: the 450 KB request above made the handler
// allocate some 690 MiB (arenas grown by appending, a quarter of it ever
// used) and answer 204.
//
// Now the shape of the request is counted before anything is decoded.
// With the default limits the request is refused with 413 naming the limit,
// having allocated little more than its decompressed body. With a limit
// raised to admit it, the handler allocates at most its body, decompressed
// body and exactly sized arenas: less than 24 bytes per decompressed byte.
func TestWriteMemoryBoundedByRequest(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not measurable under the race detector")
	}
	decoded, body := bombV2(t)
	t.Logf("body %d bytes, decompressed %d bytes", len(body), len(decoded))

	h := NewWriteHandler(nopStore{}, WriteConfig{}, NewMetrics(nil), slog.New(slog.DiscardHandler))
	var w *httptest.ResponseRecorder
	n := allocated(func() { w = serveOnce(h, hdrV2, body) })
	t.Logf("default limits: %d, allocated %d bytes", w.Code, n)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "more than the limit of 134217728 bytes per request") {
		t.Fatalf("got %d %q, want 413 naming the per-request limit", w.Code, w.Body.String())
	}
	if limit := uint64(len(body)+len(decoded)) + 1<<20; n > limit {
		t.Fatalf("refusing the request allocated %d bytes, more than body + decompressed body + 1 MiB (%d)", n, limit)
	}

	h = NewWriteHandler(nopStore{}, WriteConfig{MaxRequestMemory: 1 << 30, MaxBytesInFlight: 1 << 30}, NewMetrics(nil), slog.New(slog.DiscardHandler))
	n = allocated(func() { w = serveOnce(h, hdrV2, body) })
	t.Logf("limit raised: %d, allocated %d bytes (%.1f per decompressed byte)", w.Code, n, float64(n)/float64(len(decoded)))
	if w.Code != http.StatusNoContent {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
	if limit := uint64(24 * len(decoded)); n > limit {
		t.Fatalf("decoding allocated %d bytes, more than 24 per decompressed byte (%d)", n, limit)
	}
}

// TestDecodeAllocatesWhatShapeSays: for both versions, what decoding
// allocates is within what the scan charged for it.
func TestDecodeAllocatesWhatShapeSays(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not measurable under the race detector")
	}
	v2, _ := bombV2(t)
	for _, tc := range []struct {
		name string
		b    []byte
		v2   bool
	}{
		{"v1", mustMarshal(t, &prompb.WriteRequest{Timeseries: testSeries(5000, 3, 1000)}), false},
		{"v2", mustMarshal(t, toV2(testSeries(5000, 3, 1000))), true},
		{"v2 wide", v2, true},
		{"v1 histograms", mustMarshal(t, &prompb.WriteRequest{Timeseries: toV1Hist(histTestSeries(1, "mem", 2000, 1000))}), false},
		{"v2 histograms", mustMarshal(t, toV2Hist(histTestSeries(1, "mem", 2000, 1000))), true},
		{"v2 minimal histograms", histogramBomb(100_000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r writeRequest
			var sh shape
			var err error
			n := allocated(func() {
				if tc.v2 {
					sh = scanV2(tc.b)
					err = r.decodeV2Sized(tc.b, sh)
				} else {
					sh = scanV1(tc.b)
					err = r.decodeV1Sized(tc.b, sh)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if mem := sh.memory(len(tc.b)); n > uint64(mem)+64<<10 {
				t.Fatalf("decoding allocated %d bytes; the scan charged %d", n, mem)
			}
			if len(r.series) != sh.series || len(r.labels) != sh.labels || len(r.samples) != sh.samples {
				t.Fatalf("decoded %d series, %d labels, %d samples; scanned %+v", len(r.series), len(r.labels), len(r.samples), sh)
			}
		})
	}
}

// histogramBomb is a 2.0 request of one series with n of the smallest valid
// histograms (count_int 0: 4 bytes on the wire, 184 decoded).
func histogramBomb(n int) []byte {
	var req []byte
	for _, s := range []string{"", "__name__", "h"} {
		req = hField(req, 4, []byte(s))
	}
	ts := hField(nil, 1, protowire.AppendVarint(protowire.AppendVarint(nil, 1), 2))
	h := hField(nil, hCountInt, uint64(0))
	for range n {
		ts = hField(ts, 3, h)
	}
	return hField(req, 5, ts)
}

// TestWriteHistogramMemoryBounded: histograms are charged before they are
// decoded. A request of 2 million minimal histograms (8 MB decompressed,
// 380 KB compressed) is refused with 413 naming its histograms under the
// default limits, having allocated little more than its bodies; with the
// limit raised, decoding allocates what the scan charged: under 48 bytes per
// decompressed byte.
func TestWriteHistogramMemoryBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not measurable under the race detector")
	}
	decoded := histogramBomb(2_000_000)
	body := snappy.Encode(nil, decoded)
	t.Logf("body %d bytes, decompressed %d bytes", len(body), len(decoded))
	h := NewWriteHandler(nopStore{}, WriteConfig{}, NewMetrics(nil), slog.New(slog.DiscardHandler))
	var w *httptest.ResponseRecorder
	n := allocated(func() { w = serveOnce(h, hdrV2, body) })
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "and 2000000 histograms") {
		t.Fatalf("got %d %q, want 413 counting the histograms", w.Code, w.Body.String())
	}
	if limit := uint64(len(body)+len(decoded)) + 1<<20; n > limit {
		t.Fatalf("refusing the request allocated %d bytes, more than body + decompressed body + 1 MiB (%d)", n, limit)
	}
	h = NewWriteHandler(nopStore{}, WriteConfig{MaxRequestMemory: 1 << 30, MaxBytesInFlight: 1 << 30}, NewMetrics(nil), slog.New(slog.DiscardHandler))
	n = allocated(func() { w = serveOnce(h, hdrV2, body) })
	t.Logf("limit raised: %d, allocated %d bytes (%.1f per decompressed byte)", w.Code, n, float64(n)/float64(len(decoded)))
	if w.Code != http.StatusNoContent {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
	if limit := uint64(48 * len(decoded)); n > limit {
		t.Fatalf("decoding allocated %d bytes, more than 48 per decompressed byte (%d)", n, limit)
	}
}
