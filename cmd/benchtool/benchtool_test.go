package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 10's cold start: 10,000 series bring 10,115 new strings; the disk
// data set's 1,000 series bring 1,115.
func TestSeriesSetStrings(t *testing.T) {
	for n, want := range map[int]int{10000: 10115, 1000: 1115} {
		set := seriesSet("r", n, 40)
		if got := distinctStrings(set); got != want {
			t.Errorf("%d series: %d strings, want %d", n, got, want)
		}
		for _, s := range set {
			if len(s.labels) < 3 || len(s.labels) > 5 { // job, instance and 1-3 more
				t.Fatalf("series %v: %d labels besides __name__", s, len(s.labels))
			}
			for i, l := range s.labels {
				if strings.Contains(l[1], ":") {
					t.Fatalf("label value %q holds ':', which OpenTSDB refuses", l[1])
				}
				if i > 0 && s.labels[i-1][0] >= l[0] {
					t.Fatalf("labels of %v not sorted", s)
				}
			}
		}
	}
}

// A load split by -skip-rounds sends the same samples as one load.
func TestShardsSkipRounds(t *testing.T) {
	set := seriesSet("r", 10, 4)
	collect := func(d dataFlags) map[[2]int64]float64 {
		out := map[[2]int64]float64{}
		_, _, err := d.shards(set, func(_ []series, pts []point) (request, error) {
			for _, p := range pts {
				out[[2]int64{int64(p.series), p.t}] = p.v
			}
			return request{points: len(pts)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	base := dataFlags{series: 10, rounds: 30, start: 1000, step: 15, perRequest: 7, conc: 3}
	whole := collect(base)
	a, b := base, base
	a.rounds, b.rounds, b.skip = 12, 18, 12
	parts := collect(a)
	for k, v := range collect(b) {
		parts[k] = v
	}
	if len(whole) != 300 || len(parts) != len(whole) {
		t.Fatalf("%d samples whole, %d in parts; want 300", len(whole), len(parts))
	}
	for k, v := range whole {
		if parts[k] != v {
			t.Fatalf("sample %v: %v whole, %v in parts", k, v, parts[k])
		}
	}
}

func TestStoreBytes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int, at time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	since := time.Now()
	write("old1", 100, since.Add(-time.Minute))
	write(".old1.crc", 7, since.Add(-time.Minute))
	write("old2", 50, since.Add(-time.Minute))
	if n, err := storeBytes(dir, time.Time{}); err != nil || n != 150 {
		t.Fatalf("all files: %d, %v; want 150", n, err)
	}
	if _, err := storeBytes(dir, since); err == nil {
		t.Fatal("two old files counted as compacted")
	}
	write("new", 120, since.Add(time.Second))
	if n, err := storeBytes(dir, since); err != nil || n != 120 {
		t.Fatalf("after compaction: %d, %v; want 120", n, err)
	}
}

func TestCPUSecondsOfSelf(t *testing.T) {
	before, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
	}
	after, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("CPU time did not grow over a busy loop: %v then %v", before, after)
	}
}

func TestParseRecords(t *testing.T) {
	rs, err := parseRecords(strings.NewReader("noise\nstep=read target=adapter via=streamed samples_per_sec=12\nstep=bytes table=b1-ds-prom-data hfile_bytes=99\n"))
	if err != nil || len(rs) != 2 {
		t.Fatalf("%v, %v", rs, err)
	}
	if got := rs.find("step", "read", "target", "adapter").num("samples_per_sec"); got != 12 {
		t.Errorf("samples_per_sec %v", got)
	}
	if got := rs.findTable("bytes", "prom-data"); got != 99 {
		t.Errorf("table bytes %v", got)
	}
	if got := rs.findTable("bytes", "tsdb"); got != 0 {
		t.Errorf("unknown table: %v", got)
	}
}
