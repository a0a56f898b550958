package main

import "fmt"

// reportImport prints the import of Prometheus blocks: samples/s of each
// run (the command's whole run, and its import loop alone), CPU per
// million samples, and the data table's bytes per sample after flush and
// major compaction against the blocks'. Nothing when the run had no import
// step.
func reportImport(rs records) {
	var runs []record
	for _, r := range rs {
		if r["step"] == "import" && r["target"] == "adapter-import" && r.num("samples") > 0 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	first := runs[0]
	n := first.num("samples")
	data := rs.findTable("import-bytes", "prom-data")
	fmt.Printf("Import of Prometheus TSDB blocks: %.0f samples (%s series x %s samples, one every %s s, in blocks of 2 h), `adapter import` into fresh tables on HBase; run 1 meets HBase as it is (a fresh JVM when bench.sh started it), later runs import the same blocks into fresh tables of their own with HBase's write path compiled, as on a long-running region server. Command: from its start (tables created) until it exits (every write durable); loop: the import itself, from the command's summary. Bytes: run 1's data table's HFiles after flush + major compaction, the blocks' whole directories.\n\n",
		n, first["series"], first["rounds"], fig(first.num("step_ms")/1000, 0))
	fmt.Print("| measure |")
	for _, r := range runs {
		fmt.Printf(" run %s |", r["run"])
	}
	fmt.Print("\n|---|")
	for range runs {
		fmt.Print("---|")
	}
	fmt.Println()
	row := func(name, key string, prec int) {
		fmt.Printf("| %s |", name)
		for _, r := range runs {
			fmt.Printf(" %s |", fig(r.num(key), prec))
		}
		fmt.Println()
	}
	row("command seconds", "seconds", 1)
	row("command samples/s", "samples_per_s", 0)
	row("loop seconds", "import_seconds", 1)
	row("loop samples/s", "import_samples_per_s", 0)
	row("import CPU-s per million samples", "cpu_s_import_per_msample", 2)
	row("HBase CPU-s per million samples", "cpu_s_hbase_per_msample", 2)
	fmt.Println()
	fmt.Println("| bytes | value |")
	fmt.Println("|---|---|")
	fmt.Printf("| data table bytes/sample | %s |\n", fig(data/n, 2))
	fmt.Printf("| Prometheus blocks bytes/sample | %s |\n", fig(first.num("block_bytes_per_sample"), 2))
	fmt.Printf("| data table / blocks | %s |\n", ratio(data, first.num("block_bytes")))
	fmt.Println()
}
