package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// A record is one line of figures: step=... then what a subcommand printed.
type record map[string]string

func (r record) num(k string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSuffix(r[k], "s"), 64)
	if err != nil {
		return 0
	}
	return v
}

type records []record

// find returns the first record whose fields include every key=value of kv.
func (rs records) find(kv ...string) record {
	if all := rs.findAll(kv...); len(all) > 0 {
		return all[0]
	}
	return record{}
}

// findAll returns every record whose fields have the given values, in the
// order they were written.
func (rs records) findAll(kv ...string) records {
	var out records
next:
	for _, r := range rs {
		for i := 0; i+1 < len(kv); i += 2 {
			if r[kv[i]] != kv[i+1] {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// findTable returns the bytes of the table of a step whose name ends in
// suffix.
func (rs records) findTable(step, suffix string) float64 {
	for _, r := range rs {
		if r["step"] == step && strings.HasSuffix(r["table"], suffix) {
			return r.num("hfile_bytes")
		}
	}
	return 0
}

func parseRecords(in io.Reader) (records, error) {
	var rs records
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		r := record{}
		for _, f := range strings.Fields(sc.Text()) {
			if k, v, ok := strings.Cut(f, "="); ok {
				r[k] = v
			}
		}
		if r["step"] != "" {
			rs = append(rs, r)
		}
	}
	return rs, sc.Err()
}

// runReport turns the records of one `make bench` run into the Markdown
// tables of BENCHMARKS.md, ratios included.
func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	samples := fs.Float64("samples", 0, "samples of the disk-usage data set")
	only := fs.String("only", "", "print only this table: histograms, ingest, receiver, import or import-opentsdb")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || (*samples == 0 && *only == "") {
		return errors.New("usage: benchtool report [-samples N | -only histograms|ingest|receiver|import|import-opentsdb] RESULTS_FILE")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	rs, err := parseRecords(f)
	if err != nil {
		return err
	}
	switch *only {
	case "import":
		reportImport(rs)
		return nil
	case "import-opentsdb":
		reportImportOpenTSDB(rs)
		return nil
	case "ingest":
		reportIngest(rs)
		return nil
	case "receiver":
		reportReceiver(rs)
		return nil
	case "":
		reportCold(rs)
		reportBytes(rs, *samples)
		reportChunkBytes(rs)
		reportRead(rs)
		reportIngest(rs)
		reportReceiver(rs)
	}
	reportHistBytes(rs)
	return nil
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func fig(v float64, prec int) string {
	if v == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func reportCold(rs records) {
	a1, o1 := rs.find("step", "cold", "target", "adapter", "phase", "first-request"), rs.find("step", "cold", "target", "opentsdb", "phase", "first-request")
	a2, o2 := rs.find("step", "cold", "target", "adapter", "phase", "sustained"), rs.find("step", "cold", "target", "opentsdb", "phase", "sustained")
	fmt.Printf("UID cold start (%s series, %s new strings in one request; then new series for a while, %s per request, %s in flight):\n\n",
		a1["series"], a1["new_strings"], a2["batch"], a2["concurrency"])
	fmt.Println("| measure | adapter | OpenTSDB | adapter / OpenTSDB |")
	fmt.Println("|---|---|---|---|")
	row := func(name string, a, o float64, prec int) {
		fmt.Printf("| %s | %s | %s | %s |\n", name, fig(a, prec), fig(o, prec), ratio(a, o))
	}
	row("first request: seconds until the 2xx", a1.num("seconds"), o1.num("seconds"), 2)
	fmt.Printf("| first request: retried 5xx answers | %s | %s | |\n", a1["retries"], o1["retries"])
	row("first request: new strings/s", a1.num("new_strings")/a1.num("seconds"), o1.num("new_strings")/o1.num("seconds"), 0)
	row("sustained: new strings/s", a2.num("strings_per_sec"), o2.num("strings_per_sec"), 0)
	row("HBase CPU-s per 1,000 new strings, first request", a1.num("cpu_s_hbase_per_1000_strings"), o1.num("cpu_s_hbase_per_1000_strings"), 2)
	row("HBase CPU-s per 1,000 new strings, sustained", a2.num("cpu_s_hbase_per_1000_strings"), o2.num("cpu_s_hbase_per_1000_strings"), 2)
	row("adapter / TSD CPU-s per 1,000 new strings, sustained", a2.num("cpu_s_adapter_per_1000_strings"), o2.num("cpu_s_tsd_per_1000_strings"), 2)
	fmt.Println()
}

func reportBytes(rs records, samples float64) {
	pb := rs.find("step", "promblock")
	raw, comp := rs.findTable("bytes", "prom-data"), rs.findTable("bytes-compacted", "prom-data")
	otsdb := rs.findTable("bytes", "tsdb")
	prom := pb.num("block_bytes")
	fmt.Printf("Bytes on disk, %.0f samples (data table HFiles after flush + major compaction, or, where the row says so, after a flush alone, as a table stands between HBase's weekly major compactions; the Prometheus block's whole directory):\n\n", samples)
	fmt.Println("| store | bytes | bytes/sample | / OpenTSDB | / Prometheus block |")
	fmt.Println("|---|---|---|---|---|")
	row := func(name string, b float64) {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", name, fig(b, 0), fig(b/samples, 2), ratio(b, otsdb), ratio(b, prom))
	}
	row("adapter, raw cells", raw)
	row("adapter, compacted", comp)
	if b := rs.findTable("bytes-compacted-xor", "prom-data"); b > 0 {
		row("adapter, compacted, XOR chunks only (--storage.float-chunks=xor)", b)
	}
	if b := rs.findTable("bytes-fresh-compacted", "prom-data"); b > 0 {
		row("adapter, compacted, before HBase's major compaction (raw family swept by the compactor)", b)
	}
	row("OpenTSDB 2.4.1, after its row compaction", otsdb)
	if b := rs.findTable("bytes-fresh", "tsdb"); b > 0 {
		row("OpenTSDB 2.4.1, after its row compaction, before HBase's major compaction", b)
	}
	if b := rs.findTable("bytes-snappy", "tsdb"); b > 0 {
		row("OpenTSDB 2.4.1, after its row compaction, table re-compressed SNAPPY", b)
	}
	if b := rs.findTable("bytes-gz", "tsdb"); b > 0 {
		row("OpenTSDB 2.4.1, after its row compaction, table re-compressed GZ", b)
	}
	row("Prometheus TSDB block", prom)
	if b := pb.num("chunks_bytes"); b > 0 {
		row("Prometheus TSDB block, chunks only", b)
	}
	au, ou := rs.findTable("bytes", "prom-uid"), rs.findTable("bytes", "tsdb-uid")
	fmt.Printf("\nUID tables for the same %s strings: adapter %s bytes, OpenTSDB %s bytes (%s x).\n\n",
		rs.find("step", "load")["strings"], fig(au, 0), fig(ou, 0), ratio(au, ou))
}

// reportChunkBytes is the chunkbytes step: what the samples of the data set
// take as XOR chunks alone, per value kind, raw and deflated.
func reportChunkBytes(rs records) {
	kinds := rs.findAll("step", "chunkbytes")
	if len(kinds) == 0 {
		return
	}
	fmt.Println("The same samples as Prometheus XOR chunks alone (120 samples each, no keys, no index), per value kind, and deflated as HBase's GZ codec does a block of them (`benchtool chunkbytes`):")
	fmt.Println()
	fmt.Println("| value kind | samples | XOR bytes/sample | deflated bytes/sample |")
	fmt.Println("|---|---|---|---|")
	for _, k := range kinds {
		fmt.Printf("| %s | %s | %s | %s |\n", k["kind"], k["samples"], fig(k.num("xor_bytes_per_sample"), 2), fig(k.num("gz_bytes_per_sample"), 2))
	}
	fmt.Println()
}

func reportRead(rs records) {
	// A reader may have read in several rounds (bench.sh's READ_ROUNDS):
	// its figures are the medians over them, its first pass the first
	// round's.
	type reader struct {
		rate, cold, cpu float64
		runs            records
	}
	get := func(step, target, via string) reader {
		runs := rs.findAll("step", step, "target", target, "via", via)
		if len(runs) == 0 {
			return reader{}
		}
		return reader{median(runs, "samples_per_sec"), runs[0].num("first_pass_samples_per_sec"), median(runs, "cpu_s_total_per_million"), runs}
	}
	vs := func(a, b reader) string { return ratio(a.rate, b.rate) + ratioRange(a.runs, b.runs, "samples_per_sec") }
	o := get("read", "opentsdb", "api/query")
	ps, pm := get("read", "prometheus", "streamed"), get("read", "prometheus", "samples")
	as, am := get("read", "adapter", "streamed"), get("read", "adapter", "samples")
	fmt.Printf("Read everything back, metric by metric, 4 queries in flight, after major compaction (median of the passes after the warm-up; the adapter and Prometheus in %d rounds each, taking turns to go first: the median of the rounds, and the range of the ratios of the rounds in brackets; the first pass of each reader, cold, beside it; CPU over the timed passes: adapter + HBase, TSD + HBase, Prometheus, the adapter alone on its embedded store):\n", len(as.runs))
	fmt.Println()
	fmt.Println("| reader | samples/s | / OpenTSDB | / Prometheus, same response type | first pass, samples/s | CPU-s per M samples |")
	fmt.Println("|---|---|---|---|---|---|")
	row := func(name string, r reader, vsO, vsP string) {
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", name, fig(r.rate, 0), vsO, vsP, fig(r.cold, 0), fig(r.cpu, 3))
	}
	row("adapter, streamed remote read", as, ratio(as.rate, o.rate), vs(as, ps))
	ax := get("read-xor", "adapter", "streamed")
	if ax.rate > 0 {
		row("adapter, streamed remote read, XOR chunks only (--storage.float-chunks=xor)", ax, ratio(ax.rate, o.rate), vs(ax, ps))
	}
	ae := get("read-embedded", "adapter", "streamed")
	if ae.rate > 0 {
		row("adapter on the embedded store, streamed remote read", ae, "", vs(ae, ps))
	}
	row("adapter, sampled remote read", am, ratio(am.rate, o.rate), vs(am, pm))
	if aem := get("read-embedded", "adapter", "samples"); aem.rate > 0 {
		row("adapter on the embedded store, sampled remote read", aem, "", vs(aem, pm))
	}
	row("OpenTSDB /api/query (aggregator none)", o, "1.00", "")
	row("Prometheus, streamed remote read", ps, ratio(ps.rate, o.rate), "1.00")
	row("Prometheus, sampled remote read", pm, ratio(pm.rate, o.rate), "1.00")
	fmt.Println()
	if ax.rate > 0 {
		fmt.Printf("The adapter's streamed read of its default cells (dense where they save at least a fifth) against XOR chunks only: %s%s (the rounds paired as they ran).\n\n",
			ratio(as.rate, ax.rate), ratioRange(as.runs, ax.runs, "samples_per_sec"))
	}
	fa, fo := get("read-fresh", "adapter", "streamed"), get("read-fresh", "opentsdb", "api/query")
	if fa.rate == 0 || fo.rate == 0 {
		return
	}
	fmt.Println("The same reads before HBase's major compaction: each store's compaction done (the adapter's compactor, OpenTSDB's row compaction), the cells it replaced still in HBase behind a delete marker each (median of up to 3 passes after the warm-up):")
	fmt.Println()
	fmt.Println("| reader | samples/s | / OpenTSDB | / same reader after major compaction | first pass, samples/s | CPU-s per M samples |")
	fmt.Println("|---|---|---|---|---|---|")
	row("adapter, streamed remote read", fa, ratio(fa.rate, fo.rate), ratio(fa.rate, as.rate))
	row("OpenTSDB /api/query (aggregator none)", fo, "1.00", ratio(fo.rate, o.rate))
	fmt.Println()
}

func reportIngest(rs records) {
	fmt.Println("Ingest until durable (CPU: adapter + HBase against TSD + HBase; the median of the runs, the two systems taking turns to go first; the range of the ratios of the runs in brackets; samples per series in a request as the loader's shards split the series, one shard per request in flight):")
	fmt.Println()
	fmt.Println("| samples/request | in flight | series | samples of a series per request | runs | samples a run | adapter samples/s | OpenTSDB samples/s | adapter / OpenTSDB | adapter+HBase CPU-s per M samples | TSD+HBase CPU-s per M samples | adapter / OpenTSDB |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, sh := range ingestShapes(rs) {
		a, o := sh.runs(rs, "adapter"), sh.runs(rs, "opentsdb")
		ar, or := median(a, "samples_per_sec"), median(o, "samples_per_sec")
		ac, oc := median(a, "cpu_s_total_per_million"), median(o, "cpu_s_total_per_million")
		fmt.Printf("| %s | %s | %s | %s | %d | %s | %s | %s | %s%s | %s | %s | %s%s |\n", sh.per, sh.conc, sh.series, sh.perSeries(), min(len(a), len(o)),
			fig(median(a, "samples"), 0), fig(ar, 0), fig(or, 0), ratio(ar, or), ratioRange(a, o, "samples_per_sec"),
			fig(ac, 1), fig(oc, 1), ratio(ac, oc), ratioRange(a, o, "cpu_s_total_per_million"))
	}
	fmt.Println()
	reportSettled(rs)
}

// reportSettled is the ingest runs' HBase work after the clock (ingest
// -settle), where the runs carry it: what each system's writes left HBase
// to flush and compact, and the CPU per sample with it counted. That work
// comes in lumps (a compaction rewrites a whole store; a table's first
// split rewrites it all again), so the CPU is summed over the runs, not a
// median: a median would drop the lump of whichever run it fell after.
func reportSettled(rs records) {
	if ingest := rs.findAll("step", "ingest"); len(ingest) == 0 || ingest[0]["settle_s"] == "" {
		return
	}
	fmt.Println("The same runs after the clock: each waited until HBase had no compaction of the system's table running or queued and its process idled (3 s in a row); the CPU of that wait is the flushes and compactions the run left behind, counted here and not in the next run. CPU per sample over all the runs of a row together (CPU-seconds summed over samples summed), the last row over every run of the step:")
	fmt.Println()
	fmt.Println("| samples/request | in flight | series | adapter: s to settle, each run | OpenTSDB: s to settle, each run | adapter: HBase CPU-s per M after the clock | OpenTSDB: HBase CPU-s per M after the clock | adapter+HBase CPU-s per M, both | TSD+HBase CPU-s per M, both | adapter / OpenTSDB |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	var allA, allO records
	row := func(per, conc, series string, a, o records) {
		ac, oc := settledTotal(a, "cpu_s_total", "settle_cpu_s_total"), settledTotal(o, "cpu_s_total", "settle_cpu_s_total")
		fmt.Printf("| %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %s |\n", per, conc, series,
			settleTimes(a), settleTimes(o), settledTotal(a, "settle_cpu_s_hbase"), settledTotal(o, "settle_cpu_s_hbase"), ac, oc, ratio(ac, oc))
	}
	for _, sh := range ingestShapes(rs) {
		a, o := sh.runs(rs, "adapter"), sh.runs(rs, "opentsdb")
		allA, allO = append(allA, a...), append(allO, o...)
		row(sh.per, sh.conc, sh.series, a, o)
	}
	row("all", "", "", allA, allO)
	fmt.Println()
}

// settledTotal is the CPU-seconds of keys summed over rs, per million of
// their samples summed.
func settledTotal(rs records, keys ...string) float64 {
	var cpu, samples float64
	for _, r := range rs {
		for _, k := range keys {
			cpu += r.num(k)
		}
		samples += r.num("samples")
	}
	if samples == 0 {
		return 0
	}
	return cpu / samples * 1e6
}

// settleTimes lists the runs' seconds to settle, in the order they ran.
func settleTimes(rs records) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatFloat(r.num("settle_s"), 'f', 0, 64))
	}
	return b.String()
}

// ingestShape is what an ingest run sent: samples per request, requests in
// flight and the series of the data set.
type ingestShape struct{ per, conc, series string }

// ingestShapes are the shapes of the ingest runs in the order they first
// ran. A run that does not say its concurrency (reports before the
// 16-in-flight row) ran 4.
func ingestShapes(rs records) []ingestShape {
	var out []ingestShape
	for _, r := range rs.findAll("step", "ingest") {
		if sh := shapeOf(r); !slices.Contains(out, sh) {
			out = append(out, sh)
		}
	}
	return out
}

func shapeOf(r record) ingestShape {
	sh := ingestShape{per: r["samples_per_request"], conc: r["concurrency"], series: r["series"]}
	if sh.conc == "" {
		sh.conc = "4"
	}
	return sh
}

// runs are target's ingest runs of this shape, in the order they ran.
func (sh ingestShape) runs(rs records, target string) records {
	var out records
	for _, r := range rs.findAll("step", "ingest", "target", target) {
		if shapeOf(r) == sh {
			out = append(out, r)
		}
	}
	return out
}

// perSeries is how many samples of one series a request carries: the
// loader gives each of conc shards an equal part of the series and fills a
// request with whole rounds of its part.
func (sh ingestShape) perSeries() string {
	per, err1 := strconv.ParseFloat(sh.per, 64)
	conc, err2 := strconv.ParseFloat(sh.conc, 64)
	series, err3 := strconv.ParseFloat(sh.series, 64)
	if err1 != nil || err2 != nil || err3 != nil || series == 0 {
		return "?"
	}
	return strconv.FormatFloat(math.Max(1, per/(series/conc)), 'g', 2, 64)
}

// median is the median of key over rs (the mean of the middle two for an
// even count); 0 for none.
func median(rs records, key string) float64 {
	v := make([]float64, 0, len(rs))
	for _, r := range rs {
		v = append(v, r.num(key))
	}
	return medianOf(v)
}

// medianOf sorts v in place and returns its median: the mean of the middle
// two for an even count, 0 for none. The read and the steady-state windows
// use it too, so every reported median means the same.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 0 {
		return (v[m-1] + v[m]) / 2
	}
	return v[m]
}

// ratioRange is " (lo-hi)" over the ratios of key of the runs of a and b
// taken in pairs, in the order they ran; empty for fewer than two pairs.
func ratioRange(a, b records, key string) string {
	n := min(len(a), len(b))
	if n < 2 {
		return ""
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range n {
		if d := b[i].num(key); d > 0 {
			r := a[i].num(key) / d
			lo, hi = min(lo, r), max(hi, r)
		}
	}
	if lo > hi {
		return ""
	}
	return fmt.Sprintf(" (%.2f-%.2f)", lo, hi)
}
