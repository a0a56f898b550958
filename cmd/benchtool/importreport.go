package main

import "fmt"

// reportImport prints the import of Prometheus blocks: samples/s, CPU per
// million samples, and the data table's bytes per sample after flush and
// major compaction against the blocks'. Nothing when the run had no import
// step.
func reportImport(rs records) {
	imp := rs.find("step", "import", "target", "adapter-import")
	n := imp.num("samples")
	if n == 0 {
		return
	}
	data := rs.findTable("import-bytes", "prom-data")
	fmt.Printf("Import of Prometheus TSDB blocks: %.0f samples (%s series x %s samples, one every %s s, in blocks of 2 h), `adapter import` into fresh tables on HBase, until the command exits (every write durable); bytes: the data table's HFiles after flush + major compaction, the blocks' whole directories.\n\n",
		n, imp["series"], imp["rounds"], fig(imp.num("step_ms")/1000, 0))
	importRows(imp)
	fmt.Printf("| data table bytes/sample | %s |\n", fig(data/n, 2))
	fmt.Printf("| Prometheus blocks bytes/sample | %s |\n", fig(imp.num("block_bytes_per_sample"), 2))
	fmt.Printf("| data table / blocks | %s |\n", ratio(data, imp.num("block_bytes")))
	fmt.Println()
}

// reportImportOpenTSDB prints the import of OpenTSDB's tables: samples/s,
// CPU per million samples, and the bytes per sample of the adapter's data
// table and of OpenTSDB's, each after flush and major compaction. Nothing
// when the run had no such step.
func reportImportOpenTSDB(rs records) {
	imp := rs.find("step", "import-opentsdb", "target", "adapter-import-opentsdb")
	n := imp.num("samples")
	if n == 0 {
		return
	}
	data, otsdb := rs.findTable("import-opentsdb-bytes", "prom-data"), rs.findTable("opentsdb-bytes", "tsdb")
	fmt.Printf("Import of OpenTSDB's tables: %.0f samples (%s series x %s samples, one every %s s) that OpenTSDB 2.4.1 loaded through /api/put and compacted as it does (its compaction queue, flushed when it stops), `adapter import opentsdb` into fresh tables on the same HBase, until the command exits (every write durable); bytes: each data table's HFiles after flush + major compaction.\n\n",
		n, imp["series"], imp["rounds"], fig(imp.num("step_ms")/1000, 0))
	importRows(imp)
	fmt.Printf("| adapter data table bytes/sample | %s |\n", fig(data/n, 2))
	fmt.Printf("| OpenTSDB data table bytes/sample | %s |\n", fig(otsdb/n, 2))
	fmt.Printf("| adapter / OpenTSDB | %s |\n", ratio(data, otsdb))
	fmt.Println()
}

// importRows starts an import's table: its time, rate and CPU.
func importRows(imp record) {
	fmt.Println("| measure | value |")
	fmt.Println("|---|---|")
	fmt.Printf("| seconds | %s |\n", fig(imp.num("seconds"), 1))
	fmt.Printf("| samples/s | %s |\n", fig(imp.num("samples_per_s"), 0))
	fmt.Printf("| import CPU-s per million samples | %s |\n", fig(imp.num("cpu_s_import_per_msample"), 2))
	fmt.Printf("| HBase CPU-s per million samples | %s |\n", fig(imp.num("cpu_s_hbase_per_msample"), 2))
}
