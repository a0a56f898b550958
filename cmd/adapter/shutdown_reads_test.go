package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// TestShutdownUnderReads: when --web.shutdown-timeout runs out while remote
// reads are still being served (the default --read.timeout of 2m is three
// times the default --web.shutdown-timeout of 40s, so a long read outlives
// it), the reads' contexts end and the embedded store waits for them
// before it closes Pebble, and the adapter exits 0. It once closed Pebble
// under the running reads: a panic in the store's goroutines ("pebble:
// closed"), exit status 2, or leaked iterators logged and exit 0.
func TestShutdownUnderReads(t *testing.T) {
	dir := t.TempDir()
	client := &http.Client{Timeout: 60 * time.Second}
	// A short shutdown timeout stands for a read that runs longer than it.
	a := startAdapter(t, client, "http", "--storage.path="+dir, "--web.shutdown-timeout=50ms", "--no-compactor.enabled")
	base := "http://" + a.addr
	waitReady(t, client, base)

	const ts = int64(1_750_000_000_000)
	const nSeries = 20000
	var series []prompb.TimeSeries
	for i := range nSeries {
		s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "shutdown_reads"}, {Name: "i", Value: fmt.Sprint(i)}}}
		for j := range 20 {
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: ts + int64(j)*15000, Value: float64(i + j)})
		}
		series = append(series, s)
	}
	for i := 0; i < nSeries; i += 2000 {
		b, err := (&prompb.WriteRequest{Timeseries: series[i : i+2000]}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if code, msg, err := postWrite(client, base+"/api/v1/write", "", "", snappy.Encode(nil, b)); err != nil || code != 204 {
			t.Fatalf("write: %d %q %v", code, msg, err)
		}
	}

	rr := &prompb.ReadRequest{Queries: []*prompb.Query{{
		StartTimestampMs: ts, EndTimestampMs: ts + 3_600_000,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "shutdown_reads"}},
	}}}
	rb, err := rr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	body := snappy.Encode(nil, rb)
	read := func() (int, error) {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/read", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	start := time.Now()
	if code, err := read(); err != nil || code != 200 {
		t.Fatalf("read: %d %v", code, err)
	}
	t.Logf("one read of %d series took %v", nSeries, time.Since(start))

	// Readers that keep reads in flight, then SIGTERM.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := read(); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("adapter did not stop on SIGTERM\n%s", a.logs)
	}
	stop.Store(true)
	wg.Wait()

	logs := a.logs.String()
	cutShort := strings.Contains(logs, "in-flight requests cut short")
	var bad []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "closing storage") || strings.Contains(l, "panic") || strings.Contains(l, "pebble: closed") || strings.Contains(l, "leaked iterators") {
			bad = append(bad, l)
		}
	}
	t.Logf("exit: %v; shutdown cut short: %v", werr, cutShort)
	if len(bad) > 0 || (werr != nil) {
		n := min(len(bad), 10)
		t.Errorf("the store was closed under running reads (exit %v):\n%s", werr, strings.Join(bad[:n], "\n"))
	}
}
