package store

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestReadMemoryBounded reads 2,000 series of 24 hours at a 15 s interval
// (11.5M samples) through the iterator and fails when the heap grows by more
// than 64 MiB above what it held before the read: phase two must hold one
// batch, not the answer.
func TestReadMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 11.5M samples")
	}
	const (
		nSeries   = 2000
		step      = 15_000
		span      = 24 * hour
		maxGrowth = 64 << 20
	)
	db, _ := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{})
	start := int64(1_760_000_000_000) / hour * hour
	end := start + span - 1

	// Written in slices of one hour for all series, as a remote writer would.
	samples := make([][]Sample, nSeries)
	for h := start; h < start+span; h += hour {
		batch := make([]SeriesIn, 0, nSeries)
		for i := range nSeries {
			samples[i] = samples[i][:0]
			for ts := h; ts < h+hour; ts += step {
				samples[i] = append(samples[i], Sample{T: ts, V: float64(ts / step)})
			}
			batch = append(batch, SeriesIn{
				Labels:  lbls("__name__", "mem_test", "instance", fmt.Sprintf("host-%04d", i), "job", "node"),
				Samples: samples[i],
			})
		}
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	samples = nil

	// Garbage is collected promptly during the read, so that the heap
	// measures what the read holds, not when the collector last ran.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	peak := base
	var mu sync.Mutex // the ticker's goroutine and the read loop both sample
	sample := func() {
		mu.Lock()
		defer mu.Unlock()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()

	ss := s.Select(ctx, Query{Start: start, End: end, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "job", "node")}})
	var nSeen, nSamples int
	for ss.Next() {
		sr := ss.At()
		nSeen++
		nSamples += len(sr.Samples)
		if nSeen%50 == 0 {
			sample()
		}
	}
	close(stop)
	<-done
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	ss.Close()
	if nSeen != nSeries || nSamples != nSeries*int(span/step) {
		t.Fatalf("read %d series, %d samples; want %d, %d", nSeen, nSamples, nSeries, nSeries*int(span/step))
	}
	growth := int64(peak) - int64(base)
	t.Logf("heap before the read %d MiB, peak growth %d MiB", base>>20, growth>>20)
	if growth > maxGrowth {
		t.Fatalf("heap grew by %d MiB during the read, bound %d MiB", growth>>20, maxGrowth>>20)
	}
}
