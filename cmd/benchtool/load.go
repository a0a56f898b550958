package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// dataFlags describe the data set: the same flags give every target the
// same series and samples.
type dataFlags struct {
	run        string
	series     int
	metrics    int
	rounds     int
	skip       int // rounds before this load (the values continue from them)
	start      int64
	step       int64
	perRequest int
	conc       int
}

func (d *dataFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.run, "run", "ds", "token in the pod label values")
	fs.IntVar(&d.series, "series", 1000, "series")
	fs.IntVar(&d.metrics, "metrics", 40, "metric names the series are spread over")
	fs.IntVar(&d.rounds, "rounds", 360, "samples per series")
	fs.IntVar(&d.skip, "skip-rounds", 0, "rounds written by earlier loads; this load starts after them")
	fs.Int64Var(&d.start, "start", 0, "ms of the data set's first sample (required)")
	fs.Int64Var(&d.step, "step", 15000, "ms between a series' samples")
	fs.IntVar(&d.perRequest, "samples-per-request", 2000, "samples in one write request")
	fs.IntVar(&d.conc, "concurrency", 4, "requests in flight")
}

// shards pre-encodes the load: shard w owns the series s with
// s % conc == w and sends them round by round, as the shards of a
// Prometheus remote-write queue do.
func (d *dataFlags) shards(set []series, enc encoder) ([][]request, int, error) {
	gens := make([]*valueGen, len(set))
	for i := range set {
		gens[i] = newValueGen(set[i], i)
		for range d.skip {
			gens[i].Next()
		}
	}
	// Values are drawn in round order for every series, so a load split
	// over several runs (-skip-rounds) continues the same values.
	values := make([][]float64, len(set))
	for i := range set {
		values[i] = make([]float64, d.rounds)
		for r := range d.rounds {
			values[i][r] = gens[i].Next()
		}
	}
	out := make([][]request, d.conc)
	total := 0
	for w := range d.conc {
		var pts []point
		for r := range d.rounds {
			t := d.start + int64(d.skip+r)*d.step
			for s := w; s < len(set); s += d.conc {
				pts = append(pts, point{series: s, t: t, v: values[s][r]})
			}
		}
		for off := 0; off < len(pts); off += d.perRequest {
			req, err := enc(set, pts[off:min(off+d.perRequest, len(pts))])
			if err != nil {
				return nil, 0, err
			}
			out[w] = append(out[w], req)
			total += req.points
		}
	}
	return out, total, nil
}

// sendShards sends every shard's requests in order, one worker per shard,
// and returns when all are answered.
func sendShards(ctx context.Context, client *http.Client, shards [][]request) (time.Duration, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	begin := time.Now()
	for w, reqs := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, r := range reqs {
				if _, err := r.sendRetrying(ctx, client); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("shard %d, request %d: %w", w, i, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(begin), firstErr
}

// target names a system and how to write to it.
type target struct {
	kind string // adapter, prometheus, opentsdb
	url  string // base URL
	rw2  bool   // remote write 2.0 instead of 1.0
}

func parseTarget(s string) (target, error) {
	kind, url, ok := strings.Cut(s, "=")
	if !ok || (kind != "adapter" && kind != "prometheus" && kind != "opentsdb") {
		return target{}, errors.New("target must be adapter=URL, prometheus=URL or opentsdb=URL")
	}
	return target{kind: kind, url: strings.TrimSuffix(url, "/")}, nil
}

// encoder for plain loads: remote write, or OpenTSDB's asynchronous put
// (durability is then awaited through its stats, see waitOpenTSDBIdle).
func (t target) encoder() encoder {
	if t.kind == "opentsdb" {
		return openTSDBPut(t.url, false)
	}
	if t.rw2 {
		return remoteWrite2(t.url + "/api/v1/write")
	}
	return remoteWrite(t.url + "/api/v1/write")
}

// runLoad writes the data set into one target and waits until it is
// durable; it is ingest without the CPU figures, for loads that are not
// themselves measured.
func runLoad(args []string) error { return runIngest(args) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
