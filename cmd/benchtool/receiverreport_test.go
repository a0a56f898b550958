package main

import (
	"strings"
	"testing"
)

// TestReceiverReport: a row per protocol and store, Prometheus first; each
// store's median against Prometheus's median, with the range of the ratios
// of the runs paired in the order they ran; a store without runs has no row.
func TestReceiverReport(t *testing.T) {
	in := `step=receiver store=prometheus rw=1 rep=1 target=prometheus series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=400000 cpu_s_total_per_million=1.0
step=receiver store=hbase rw=1 rep=1 target=adapter series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=100000 cpu_s_total_per_million=8.0
step=receiver store=embedded rw=1 rep=1 target=adapter series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=300000 cpu_s_total_per_million=3.0
step=receiver store=prometheus rw=2 rep=1 target=prometheus series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=500000 cpu_s_total_per_million=0.8
step=receiver store=hbase rw=2 rep=1 target=adapter series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=125000 cpu_s_total_per_million=7.0
step=receiver store=hbase rw=1 rep=2 target=adapter series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=120000 cpu_s_total_per_million=9.0
step=receiver store=prometheus rw=1 rep=2 target=prometheus series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=200000 cpu_s_total_per_million=2.0
step=receiver store=prometheus rw=1 rep=3 target=prometheus series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=300000 cpu_s_total_per_million=1.5
step=receiver store=hbase rw=1 rep=3 target=adapter series=10000 samples_per_request=2000 samples=2000000 samples_per_sec=90000 cpu_s_total_per_million=7.5
`
	rs, err := parseRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	out := captureStdout(t, func() { reportReceiver(rs) })
	rows := []string{
		"| 1.0 | Prometheus (its receiver, into its head) | 10000 | 2000 | 3 | 2000000 | 300000 | 1.00 | 1.50 | 1.00 |",
		// Medians 100,000 / 300,000 and 8.0 / 1.5; the runs' ratios 0.25,
		// 0.60, 0.30 and 8.0, 4.5, 5.0.
		"| 1.0 | adapter, HBase | 10000 | 2000 | 3 | 2000000 | 100000 | 0.33 (0.25-0.60) | 8.00 | 5.33 (4.50-8.00) |",
		"| 1.0 | adapter, embedded store | 10000 | 2000 | 1 | 2000000 | 300000 | 1.00 | 3.00 | 2.00 |",
		"| 2.0 | Prometheus (its receiver, into its head) |",
		"| 2.0 | adapter, HBase | 10000 | 2000 | 1 | 2000000 | 125000 | 0.25 | 7.00 | 8.75 |",
	}
	wantRowsInOrder(t, out, rows)
	if strings.Contains(out, "| 2.0 | adapter, embedded store") {
		t.Errorf("a row for a store without runs:\n%s", out)
	}
	if out := captureStdout(t, func() { reportReceiver(records{}) }); out != "" {
		t.Errorf("a table without receiver runs: %q", out)
	}
}
