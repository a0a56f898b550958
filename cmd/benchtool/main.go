// Command benchtool is the measuring half of `make bench` (scripts/bench.sh):
// it drives the adapter, OpenTSDB 2.4.1 and Prometheus with the same series
// and samples in one run and prints one line of key=value figures per
// measurement, which the script turns into ratios.
//
// It speaks only the systems' public protocols (Prometheus remote write and
// remote read, OpenTSDB's HTTP API, the HBase admin RPCs for flush and major
// compaction) and reads the HBase root directory and /proc for bytes and CPU
// time. It must not know how the adapter lays out its rows.
//
// Subcommands:
//
//	otsdb-tables  create OpenTSDB's four tables the way its create_table.sh does
//	compact       flush and major-compact tables, then print their HFile bytes
//	du            print the HFile bytes of tables under an HBase root directory
//	drop          disable and delete a run's tables
//	cold          one request of 10,000 new series, then new series for N seconds
//	load          write the disk-usage data set (counters and gauges)
//	promblock     write the same data set into a Prometheus TSDB block
//	chunkbytes    the data set's bytes as XOR chunks, per value kind, raw and deflated
//	read          read everything back (remote read or OpenTSDB /api/query)
//	ingest        ingest until durable, with CPU-seconds of the named processes
//	histload      write the histogram data set (native histograms)
//	histblock     write the same histograms into a Prometheus TSDB block
//	histread      read the histogram data set back and check every histogram
//	import        time the adapter's import of the data set: written as TSDB
//	              blocks, or loaded into OpenTSDB's tables
//	report        the Markdown tables of one run, with ratios
package main

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
)

type subcommand struct {
	help string
	run  func(args []string) error
}

var subcommands = map[string]subcommand{
	"otsdb-tables": {"create OpenTSDB's tables on HBase", runOTSDBTables},
	"compact":      {"flush + major-compact tables and print their HFile bytes", runCompact},
	"du":           {"print HFile bytes of tables", runDU},
	"flush":        {"flush tables, wait for their compactions, print their live HFile bytes", runFlush},
	"drop":         {"disable and delete the tables with a name prefix", runDrop},
	"cold":         {"UID cold start: 10,000 new series, then sustained new strings/s", runCold},
	"load":         {"write the disk-usage data set into a target", runLoad},
	"promblock":    {"write the data set into a Prometheus TSDB block and print its bytes", runPromBlock},
	"chunkbytes":   {"print the data set's bytes as XOR chunks per value kind, raw and deflated", runChunkBytes},
	"read":         {"read the data set back from a target", runRead},
	"ingest":       {"ingest until durable and report samples/s and CPU-seconds", runIngest},
	"histload":     {"write the native-histogram data set into a target", runHistLoad},
	"histblock":    {"write the histogram data set into a Prometheus TSDB block and print its bytes", runHistBlock},
	"histread":     {"read the histogram data set back and check every histogram", runHistRead},
	"import":       {"time `adapter import` of the data set, as TSDB blocks or in OpenTSDB's tables", runImportBench},
	"report":       {"turn a run's figures into the Markdown tables of BENCHMARKS.md", runReport},
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	sc, ok := subcommands[os.Args[1]]
	if !ok {
		usage()
		os.Exit(2)
	}
	if err := sc.run(os.Args[2:]); err != nil {
		slog.Error("benchtool "+os.Args[1]+" failed", "err", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchtool <subcommand> [flags]")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-13s %s\n", n, subcommands[n].help)
	}
}
