package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// reportOutput is what report prints of the records in results.
func reportOutput(t *testing.T, report func(records), results string) string {
	t.Helper()
	rs, err := parseRecords(strings.NewReader(results))
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	report(rs)
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	return string(out)
}

func TestReportImportOpenTSDB(t *testing.T) {
	report := func(results string) string { return reportOutput(t, reportImportOpenTSDB, results) }
	// The Prometheus import's records are not this report's.
	if out := report("step=import target=adapter-import run=1 samples=100 seconds=1\n"); out != "" {
		t.Errorf("a run without an OpenTSDB import printed %q", out)
	}
	out := report(`step=opentsdb-bytes table=b-oi-tsdb hfile_bytes=4000
step=import-opentsdb target=adapter-import-opentsdb run=1 series=10 rounds=100 step_ms=15000 samples=1000 seconds=0.50 samples_per_s=2000 import_seconds=0.25 import_samples_per_s=4000 cpu_s_import=0.20 cpu_s_import_per_msample=200.000 cpu_s_hbase=0.30 cpu_s_hbase_per_msample=300.000
step=import-opentsdb target=adapter-import-opentsdb run=2 series=10 rounds=100 step_ms=15000 samples=1000 seconds=0.40 samples_per_s=2500 import_seconds=0.20 import_samples_per_s=5000 cpu_s_import=0.20 cpu_s_import_per_msample=200.000 cpu_s_hbase=0.30 cpu_s_hbase_per_msample=300.000
step=import-opentsdb-bytes table=b-oi-prom-data hfile_bytes=1500
`)
	for _, want := range []string{
		"1000 samples (10 series x 100 samples, one every 15 s)",
		"| measure | run 1 | run 2 |", "| command samples/s | 2000 | 2500 |", "| loop samples/s | 4000 | 5000 |",
		"| import CPU-s per million samples | 200.00 | 200.00 |", "| HBase CPU-s per million samples | 300.00 | 300.00 |",
		"| adapter data table bytes/sample | 1.50 |", "| OpenTSDB data table bytes/sample | 4.00 |", "| adapter / OpenTSDB | 0.38 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
