package main

import "fmt"

// receiverStores are the targets of make bench's receiver step, in the
// order of its table, with what the table calls them.
var receiverStores = []struct{ store, name string }{
	{"prometheus", "Prometheus (its receiver, into its head)"},
	{"hbase", "adapter, HBase"},
	{"embedded", "adapter, embedded store"},
}

// reportReceiver prints the receiver step's table: each store's median
// samples/s and CPU per sample in remote write 1.0 and 2.0, as ratios to
// Prometheus's own receiver, with the range of the ratios of the runs
// taken in turn (run i of a store against run i of Prometheus).
func reportReceiver(rs records) {
	if len(rs.findAll("step", "receiver")) == 0 {
		return
	}
	fmt.Println("Remote write next to Prometheus's own receiver (Prometheus's steady-state shape: one sample of each series a request; the median of the runs, the stores taking turns to go first; the range of the ratios of the runs in brackets; CPU: Prometheus, adapter + HBase, adapter):")
	fmt.Println()
	fmt.Println("| remote write | store | series | samples/request | runs | samples a run | samples/s | / Prometheus | CPU-s per M samples | / Prometheus |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, proto := range []string{"1", "2"} {
		prom := rs.findAll("step", "receiver", "store", "prometheus", "rw", proto)
		pr, pc := median(prom, "samples_per_sec"), median(prom, "cpu_s_total_per_million")
		for _, st := range receiverStores {
			runs := rs.findAll("step", "receiver", "store", st.store, "rw", proto)
			if len(runs) == 0 {
				continue
			}
			r, c := median(runs, "samples_per_sec"), median(runs, "cpu_s_total_per_million")
			rateRatio, cpuRatio := "1.00", "1.00"
			if st.store != "prometheus" {
				rateRatio = ratio(r, pr) + ratioRange(runs, prom, "samples_per_sec")
				cpuRatio = ratio(c, pc) + ratioRange(runs, prom, "cpu_s_total_per_million")
			}
			fmt.Printf("| %s.0 | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", proto, st.name,
				runs[0]["series"], runs[0]["samples_per_request"], len(runs), fig(median(runs, "samples"), 0),
				fig(r, 0), rateRatio, fig(c, 2), cpuRatio)
		}
	}
	fmt.Println()
}
