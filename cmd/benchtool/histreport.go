package main

import "fmt"

// reportHistBytes prints the bytes per native-histogram sample: the
// adapter's data table before and after its compactor, against a
// Prometheus TSDB block of the same histograms. Nothing when the run had
// no histogram step.
func reportHistBytes(rs records) {
	load := rs.find("step", "hist-load", "target", "adapter")
	n := load.num("histograms")
	if n == 0 {
		return
	}
	pb := rs.find("step", "histblock")
	raw, comp := rs.findTable("hist-bytes", "prom-data"), rs.findTable("hist-bytes-compacted", "prom-data")
	prom, promChunks := pb.num("block_bytes"), pb.num("chunks_bytes")
	checked := "not checked"
	if read := rs.find("step", "hist-read", "target", "adapter"); read["equal"] == "true" {
		checked = "all " + read["histograms"] + " equal"
	}
	fmt.Printf("Bytes on disk, native histograms: %.0f samples (%s series of integer histograms, schema 3, %s buckets on average, one every %s s for %s h; data table HFiles after flush + major compaction; the Prometheus block's whole directory). Read back after compaction and compared with what was written: %s.\n\n",
		n, load["series"], load["buckets_per_histogram"], fig(load.num("step_ms")/1000, 0), fig(load.num("rounds")*load.num("step_ms")/3.6e6, 1), checked)
	fmt.Println("| store | bytes | bytes/histogram | / Prometheus block |")
	fmt.Println("|---|---|---|---|")
	row := func(name string, b float64) {
		fmt.Printf("| %s | %s | %s | %s |\n", name, fig(b, 0), fig(b/n, 2), ratio(b, prom))
	}
	row("adapter, raw cells", raw)
	row("adapter, compacted (histogram chunks)", comp)
	row("Prometheus TSDB block", prom)
	row("Prometheus TSDB block, chunks only", promChunks)
	fmt.Println()
}
