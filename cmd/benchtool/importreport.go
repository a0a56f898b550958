package main

import "fmt"

// reportImport prints the import of Prometheus blocks: samples/s of each
// run (the command's whole run, and its import loop alone), CPU per
// million samples, and the data table's bytes per sample after flush and
// major compaction against the blocks'. Nothing when the run had no import
// step.
func reportImport(rs records) {
	runs := importRuns(rs, "import", "adapter-import")
	if len(runs) == 0 {
		return
	}
	first := runs[0]
	n := first.num("samples")
	data := rs.findTable("import-bytes", "prom-data")
	fmt.Printf("Import of Prometheus TSDB blocks: %.0f samples (%s series x %s samples, one every %s s, in blocks of 2 h), `adapter import` into fresh tables on HBase; run 1 meets HBase as it is (a fresh JVM when bench.sh started it), later runs import the same blocks into fresh tables of their own with HBase's write path compiled, as on a long-running region server. Command: from its start (tables created) until it exits (every write durable); loop: the import itself, from the command's summary. Bytes: run 1's data table's HFiles after flush + major compaction, the blocks' whole directories.\n\n",
		n, first["series"], first["rounds"], fig(first.num("step_ms")/1000, 0))
	importRunRows(runs)
	fmt.Println("| bytes | value |")
	fmt.Println("|---|---|")
	fmt.Printf("| data table bytes/sample | %s |\n", fig(data/n, 2))
	fmt.Printf("| Prometheus blocks bytes/sample | %s |\n", fig(first.num("block_bytes_per_sample"), 2))
	fmt.Printf("| data table / blocks | %s |\n", ratio(data, first.num("block_bytes")))
	fmt.Println()
}

// reportImportOpenTSDB prints the import of OpenTSDB's tables as
// reportImport prints the blocks', with the bytes per sample of the
// adapter's data table and of OpenTSDB's, each after flush and major
// compaction. Nothing when the run had no such step.
func reportImportOpenTSDB(rs records) {
	runs := importRuns(rs, "import-opentsdb", "adapter-import-opentsdb")
	if len(runs) == 0 {
		return
	}
	first := runs[0]
	n := first.num("samples")
	data, otsdb := rs.findTable("import-opentsdb-bytes", "prom-data"), rs.findTable("opentsdb-bytes", "tsdb")
	fmt.Printf("Import of OpenTSDB's tables: %.0f samples (%s series x %s samples, one every %s s) that OpenTSDB 2.4.1 loaded through /api/put and compacted as it does (its compaction queue, flushed when it stops), `adapter import opentsdb` into fresh tables on the same HBase; run 1 meets HBase as it is, later runs import the same tables into fresh tables of their own. Command: from its start (tables created) until it exits (every write durable); loop: the import itself, from the command's summary. Bytes: each data table's HFiles after flush + major compaction (the adapter's of run 1).\n\n",
		n, first["series"], first["rounds"], fig(first.num("step_ms")/1000, 0))
	importRunRows(runs)
	fmt.Println("| bytes | value |")
	fmt.Println("|---|---|")
	fmt.Printf("| adapter data table bytes/sample | %s |\n", fig(data/n, 2))
	fmt.Printf("| OpenTSDB data table bytes/sample | %s |\n", fig(otsdb/n, 2))
	fmt.Printf("| adapter / OpenTSDB | %s |\n", ratio(data, otsdb))
	fmt.Println()
}

// importRuns are the records of a step's import runs, in order.
func importRuns(rs records, step, target string) []record {
	var runs []record
	for _, r := range rs {
		if r["step"] == step && r["target"] == target && r.num("samples") > 0 {
			runs = append(runs, r)
		}
	}
	return runs
}

// importRunRows prints the table of the runs' times, rates and CPU.
func importRunRows(runs []record) {
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
}
