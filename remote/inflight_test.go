package remote

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
)

// requestCost is what the handler reserves for a 1.0 body.
func requestCost(t *testing.T, body []byte) int64 {
	t.Helper()
	decoded, err := snappy.Decode(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	sh := scanV1(decoded)
	return int64(len(body)+len(decoded)) + sh.memory(len(decoded)) + sh.writeMemory()
}

// postWrite sends one 1.0 request and returns its status and Retry-After.
func postWrite(t *testing.T, c *http.Client, url string, body []byte) (int, string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	for k, v := range hdrV1 {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	_ = readAll(resp)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestWriteOverload: a limit on the bytes of requests in flight. Requests
// that do not fit get 429 with Retry-After and nothing of them is written;
// retried, every one is written; the bytes in flight never exceed the limit.
func TestWriteOverload(t *testing.T) {
	st := newFakeStore()
	st.writeGate, st.writeEntered = make(chan struct{}), make(chan struct{}, 64)
	bodies := make([][]byte, 48)
	for i := range bodies {
		series := testSeries(200, 5, int64(i)*100_000)
		for j := range series { // distinct series per request
			series[j].Labels = append(series[j].Labels, prompb.Label{Name: "zz_req", Value: string(rune('A' + i))})
		}
		bodies[i] = encodeV1(t, series, nil)
	}
	cost := requestCost(t, bodies[0])
	limit := 3*cost + cost/2 // three requests fit, not four

	m := NewMetrics(nil)
	h := newWriteHandler(st, WriteConfig{MaxBytesInFlight: limit, MaxRequestMemory: limit}, m, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(m.instrument("write", h))
	defer srv.Close()
	url := srv.URL + "/api/v1/write"

	// Three requests held in the store fill the budget: the fourth is
	// refused, whatever the timing.
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if code, _ := postWrite(t, srv.Client(), url, bodies[i]); code != http.StatusNoContent {
				t.Errorf("request %d: %d", i, code)
			}
		})
	}
	for range 3 {
		<-st.writeEntered
	}
	code, retry := postWrite(t, srv.Client(), url, bodies[3])
	if code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("4th request with three in flight: %d, Retry-After %q; want 429 with Retry-After", code, retry)
	}
	if got := testutil.ToFloat64(m.bytesInFlight); got < float64(3*cost) || got > float64(limit) {
		t.Fatalf("bytes in flight gauge %v, want between %d and %d", got, 3*cost, limit)
	}
	close(st.writeGate)
	go func() { // the gate is open: drain the signals
		for range st.writeEntered {
		}
	}()
	wg.Wait()

	// Sixteen senders, retrying on 429 as Prometheus does when asked to.
	st.delay = 20 * time.Millisecond
	var mu sync.Mutex
	refused := 0
	next := 3
	for range 16 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(bodies) {
					return
				}
				for {
					code, _ := postWrite(t, srv.Client(), url, bodies[i])
					if code == http.StatusNoContent {
						break
					}
					if code != http.StatusTooManyRequests {
						t.Errorf("request %d: %d", i, code)
						return
					}
					mu.Lock()
					refused++
					mu.Unlock()
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(st.writeEntered)
	t.Logf("request cost %d bytes, limit %d, 429s among 16 senders: %d, peak in flight %d", cost, limit, refused, h.inFlight.peak)
	if h.inFlight.peak > limit {
		t.Fatalf("%d bytes in flight at the peak, more than the limit of %d", h.inFlight.peak, limit)
	}
	if want := len(bodies) * 200 * 5; st.numSamples() != want {
		t.Fatalf("store holds %d samples, want %d: every request written once retried", st.numSamples(), want)
	}
	if got := testutil.ToFloat64(m.bytesInFlight); got != 0 {
		t.Fatalf("bytes in flight %v after all requests, want 0", got)
	}
}

// TestWriteRequestAboveInFlightLimit: a request that could never fit is
// 413, not a 429 the sender would retry for ever.
func TestWriteRequestAboveInFlightLimit(t *testing.T) {
	body := encodeV1(t, testSeries(200, 5, 1000), nil)
	h := NewWriteHandler(newFakeStore(), WriteConfig{MaxBytesInFlight: requestCost(t, body) - 1}, NewMetrics(nil), slog.New(slog.DiscardHandler))
	w := serveOnce(h, hdrV1, body)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "bytes per request") {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
}
