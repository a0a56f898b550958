package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/prom-hbase/prom-hbase/internal/benchdata"
)

func TestIngestMedianAndRange(t *testing.T) {
	in := `step=ingest rep=1 target=adapter samples_per_request=200 samples_per_sec=60000
step=ingest rep=1 target=opentsdb samples_per_request=200 samples_per_sec=50000
step=ingest rep=2 target=opentsdb samples_per_request=200 samples_per_sec=40000
step=ingest rep=2 target=adapter samples_per_request=200 samples_per_sec=80000
step=ingest rep=3 target=adapter samples_per_request=200 samples_per_sec=70000
step=ingest rep=3 target=opentsdb samples_per_request=200 samples_per_sec=70000
step=ingest rep=1 target=adapter samples_per_request=2000 samples_per_sec=1
`
	rs, err := parseRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	a := rs.findAll("step", "ingest", "target", "adapter", "samples_per_request", "200")
	o := rs.findAll("step", "ingest", "target", "opentsdb", "samples_per_request", "200")
	if len(a) != 3 || len(o) != 3 {
		t.Fatalf("found %d and %d runs, want 3 each", len(a), len(o))
	}
	if m := median(a, "samples_per_sec"); m != 70000 {
		t.Errorf("median %v, want 70000", m)
	}
	if m := median(a[:2], "samples_per_sec"); m != 70000 {
		t.Errorf("median of two %v, want their mean 70000", m)
	}
	// Runs pair up by rep, whichever went first: 1.2, 2.0 and 1.0.
	if got := ratioRange(a, o, "samples_per_sec"); got != " (1.00-2.00)" {
		t.Errorf("ratioRange %q, want %q", got, " (1.00-2.00)")
	}
	if got := ratioRange(a[:1], o[:1], "samples_per_sec"); got != "" {
		t.Errorf("ratioRange of one run %q, want empty", got)
	}
	if f := rs.find("step", "ingest", "samples_per_request", "2000"); f.num("samples_per_sec") != 1 {
		t.Errorf("find: %v", f)
	}
}

// TestIngestShapes: the report has a row per shape of the runs (samples
// per request, requests in flight, series), in the order they first ran;
// runs that do not say their concurrency ran 4.
func TestIngestShapes(t *testing.T) {
	in := `step=ingest rep=1 target=adapter samples_per_request=200 series=1000 samples=450000 samples_per_sec=60000 cpu_s_total_per_million=10
step=ingest rep=1 target=opentsdb samples_per_request=200 series=1000 samples_per_sec=50000 cpu_s_total_per_million=20
step=ingest rep=1 target=adapter samples_per_request=200 concurrency=16 series=1000 samples_per_sec=150000 cpu_s_total_per_million=5
step=ingest rep=1 target=opentsdb samples_per_request=200 concurrency=16 series=1000 samples_per_sec=100000 cpu_s_total_per_million=10
step=ingest rep=1 target=opentsdb samples_per_request=2000 concurrency=4 series=10000 samples_per_sec=100000 cpu_s_total_per_million=10
step=ingest rep=1 target=adapter samples_per_request=2000 concurrency=4 series=10000 samples_per_sec=300000 cpu_s_total_per_million=4
step=ingest rep=1 target=adapter samples_per_request=2000 concurrency=4 series=1000 samples_per_sec=400000 cpu_s_total_per_million=4
`
	rs, err := parseRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() { reportIngest(rs) })
	rows := []string{
		"| 200 | 4 | 1000 | 1 | 1 | 450000 | 60000 | 50000 | 1.20 | 10.0 | 20.0 | 0.50 |",
		"| 200 | 16 | 1000 | 3.2 | 1 | n/a | 150000 | 100000 | 1.50 | 5.0 | 10.0 | 0.50 |",
		"| 2000 | 4 | 10000 | 1 | 1 | n/a | 300000 | 100000 | 3.00 | 4.0 | 10.0 | 0.40 |",
		"| 2000 | 4 | 1000 | 8 | 0 | n/a | 400000 |",
	}
	wantRowsInOrder(t, out, rows)
}

// TestIngestSettled: runs that settled after the clock get a second table,
// each system's CPU per sample with its settling counted, summed over the
// runs of a shape and over the step; runs without it (reports before
// -settle) get none.
func TestIngestSettled(t *testing.T) {
	in := `step=ingest rep=1 target=adapter samples_per_request=200 concurrency=4 series=1000 samples=2000000 samples_per_sec=60000 cpu_s_total=10 settle_s=9.0 settle_cpu_s_hbase=6 settle_cpu_s_total=7
step=ingest rep=1 target=opentsdb samples_per_request=200 concurrency=4 series=1000 samples=2000000 samples_per_sec=30000 cpu_s_total=24 settle_s=3.0 settle_cpu_s_hbase=2 settle_cpu_s_total=2
step=ingest rep=2 target=opentsdb samples_per_request=200 concurrency=4 series=1000 samples=2000000 samples_per_sec=30000 cpu_s_total=20 settle_s=0.0 settle_cpu_s_hbase=0 settle_cpu_s_total=0
step=ingest rep=2 target=adapter samples_per_request=200 concurrency=4 series=1000 samples=2000000 samples_per_sec=60000 cpu_s_total=12 settle_s=2.0 settle_cpu_s_hbase=1 settle_cpu_s_total=1
step=ingest rep=1 target=adapter samples_per_request=2000 concurrency=4 series=1000 samples=1000000 samples_per_sec=600000 cpu_s_total=4 settle_s=1.0 settle_cpu_s_hbase=1 settle_cpu_s_total=1
step=ingest rep=1 target=opentsdb samples_per_request=2000 concurrency=4 series=1000 samples=1000000 samples_per_sec=100000 cpu_s_total=12 settle_s=1.0 settle_cpu_s_hbase=1 settle_cpu_s_total=1
`
	rs, err := parseRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() { reportIngest(rs) })
	// At 200: the adapter 30 CPU-s over 4M samples, 7 of them HBase's after
	// the clock; OpenTSDB 46 and 2. Over the step: 35 and 59 CPU-s over 5M.
	wantRowsInOrder(t, out, []string{
		"| 200 | 4 | 1000 | 1 | 2 |",
		"| 200 | 4 | 1000 | 9, 2 | 3, 0 | 1.8 | 0.5 | 7.5 | 11.5 | 0.65 |",
		"| 2000 | 4 | 1000 | 1 | 1 | 1.0 | 1.0 | 5.0 | 13.0 | 0.38 |",
		"| all |  |  | 9, 2, 1 | 3, 0, 1 | 1.6 | 0.6 | 7.0 | 11.8 | 0.59 |",
	})
	rs, err = parseRecords(strings.NewReader(strings.ReplaceAll(in, "settle_", "x_")))
	if err != nil {
		t.Fatal(err)
	}
	if out := captureStdout(t, func() { reportIngest(rs) }); strings.Contains(out, "after the clock") {
		t.Errorf("a report of runs without settling has the settled table:\n%s", out)
	}
}

// wantRowsInOrder fails t unless out holds every row, in the order given.
func wantRowsInOrder(t *testing.T, out string, rows []string) {
	t.Helper()
	last := -1
	for _, want := range rows {
		i := strings.Index(out, want)
		if i < 0 {
			t.Fatalf("report lacks %q:\n%s", want, out)
		}
		if i < last {
			t.Errorf("row %q out of order:\n%s", want, out)
		}
		last = i
	}
}

// TestReadRoundsMedianAndRange: a reader that read in rounds is reported at
// the median of its rounds, its ratio to Prometheus with the range of the
// ratios of the rounds, paired in the order they ran; its first pass is the
// first round's.
func TestReadRoundsMedianAndRange(t *testing.T) {
	in := `step=read target=adapter via=streamed samples_per_sec=100 first_pass_samples_per_sec=7 cpu_s_total_per_million=0.3
step=read target=prometheus via=streamed samples_per_sec=100 first_pass_samples_per_sec=90 cpu_s_total_per_million=0.1
step=read target=prometheus via=streamed samples_per_sec=100 first_pass_samples_per_sec=95 cpu_s_total_per_million=0.1
step=read target=adapter via=streamed samples_per_sec=80 first_pass_samples_per_sec=60 cpu_s_total_per_million=0.2
step=read target=adapter via=streamed samples_per_sec=50 first_pass_samples_per_sec=50 cpu_s_total_per_million=0.1
step=read target=prometheus via=streamed samples_per_sec=100 first_pass_samples_per_sec=99 cpu_s_total_per_million=0.1
step=read target=opentsdb via=api/query samples_per_sec=10 first_pass_samples_per_sec=1 cpu_s_total_per_million=1
`
	rs, err := parseRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() { reportRead(rs) })
	// Ratios of the rounds: 1.0, 0.8 and 0.5; the medians differ from the
	// first round.
	want := "| adapter, streamed remote read | 80 | 8.00 | 0.80 (0.50-1.00) | 7 | 0.200 |"
	if !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, "in 3 rounds each") {
		t.Errorf("report does not say the rounds:\n%s", out)
	}
	if want := "| Prometheus, streamed remote read | 100 | 10.00 | 1.00 | 90 | 0.100 |"; !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "XOR chunks only") {
		t.Errorf("report has XOR-only rows without their reads:\n%s", out)
	}

	// The XOR-only tables' streamed rounds: a row of their own, paired with
	// Prometheus's rounds and with the default tables' (0.8, 1.0 and 1.0).
	in += `step=read-xor target=adapter via=streamed samples_per_sec=100 first_pass_samples_per_sec=8 cpu_s_total_per_million=0.2
step=read-xor target=adapter via=streamed samples_per_sec=80 first_pass_samples_per_sec=60 cpu_s_total_per_million=0.2
step=read-xor target=adapter via=streamed samples_per_sec=100 first_pass_samples_per_sec=60 cpu_s_total_per_million=0.2
`
	if rs, err = parseRecords(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	out = captureStdout(t, func() { reportRead(rs) })
	if want := "| adapter, streamed remote read, XOR chunks only (--storage.float-chunks=xor) | 100 | 10.00 | 1.00 (0.80-1.00) | 8 | 0.200 |"; !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
	if want := "against XOR chunks only: 0.80 (0.50-1.00)"; !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "| adapter on the embedded store") {
		t.Errorf("report has embedded-store rows without their reads:\n%s", out)
	}

	// The embedded store's rounds: rows of their own against Prometheus's
	// rounds of the same response type (1.2, 0.9 and 1.0; 0.5 alone), no
	// ratio to OpenTSDB, which reads another store.
	in += `step=read-embedded target=adapter via=streamed samples_per_sec=120 first_pass_samples_per_sec=30 cpu_s_total_per_million=0.09
step=read-embedded target=adapter via=streamed samples_per_sec=90 first_pass_samples_per_sec=60 cpu_s_total_per_million=0.1
step=read-embedded target=adapter via=streamed samples_per_sec=100 first_pass_samples_per_sec=60 cpu_s_total_per_million=0.1
step=read-embedded target=adapter via=samples samples_per_sec=5 first_pass_samples_per_sec=4 cpu_s_total_per_million=2
step=read target=prometheus via=samples samples_per_sec=10 first_pass_samples_per_sec=9 cpu_s_total_per_million=1
`
	if rs, err = parseRecords(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	out = captureStdout(t, func() { reportRead(rs) })
	for _, want := range []string{
		"| adapter on the embedded store, streamed remote read | 100 |  | 1.00 (0.90-1.20) | 30 | 0.100 |",
		"| adapter on the embedded store, sampled remote read | 5 |  | 0.50 | 4 | 2.000 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// captureStdout returns what f prints to standard output.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	return <-done
}

// TestChunkBytes: each kind's chunks hold its quarter of the samples, the
// "all" row sums the kinds' XOR bytes (its deflated bytes are of one stream,
// so they need not), deflate never grows these chunks, and the kinds keep
// the order the data set gives them: gauges unchanged in most scrapes cost
// less than counters with two decimals that move every scrape.
func TestChunkBytes(t *testing.T) {
	set := seriesSet("ds", 40, 8)
	ks := chunkBytes(set, 1_750_000_000_000, 15000, 250)
	if len(ks) != benchdata.Kinds+1 || ks[len(ks)-1].kind != "all" {
		t.Fatalf("%d rows, want one per kind and all", len(ks))
	}
	all := ks[len(ks)-1]
	var samples, xor int
	for _, k := range ks[:len(ks)-1] {
		if k.samples != 10*250 {
			t.Errorf("%s: %d samples, want %d", k.kind, k.samples, 10*250)
		}
		if k.gz <= 0 || k.gz > k.xor {
			t.Errorf("%s: deflated %d of %d XOR bytes", k.kind, k.gz, k.xor)
		}
		samples, xor = samples+k.samples, xor+k.xor
	}
	if all.samples != samples || all.xor != xor {
		t.Errorf("all: %d samples, %d bytes; the kinds sum to %d, %d", all.samples, all.xor, samples, xor)
	}
	if g, c := ks[benchdata.IntGauge], ks[benchdata.FloatCounter]; g.xor >= c.xor {
		t.Errorf("integer gauges %d bytes, two-decimal counters %d: want fewer", g.xor, c.xor)
	}
	// 250 samples: chunks of 120, 120 and 10 per series, each with its
	// 2-byte sample count.
	if floor := 3 * 2 * 40; all.xor < floor {
		t.Errorf("all: %d bytes, less than the chunk headers alone (%d)", all.xor, floor)
	}
}
