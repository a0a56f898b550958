package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/tsdb"
)

// blockHours is the span of the blocks the import benchmark writes, as
// Prometheus's head cuts them.
const blockHours = 2

// runImportBench times the adapter's import command into fresh tables and
// prints samples/s and the CPU seconds of the import and of the processes
// named. With -source prometheus it first writes the data set as
// Prometheus TSDB blocks of two hours (old enough that every hour is
// closed); with -source opentsdb it imports OpenTSDB's tables, which `load
// -target opentsdb=URL` filled with the data set (-series x -rounds). The
// command's summary must count every sample of the data set. The data
// table's bytes per sample are the `compact` subcommand's, run afterwards.
func runImportBench(args []string) error {
	fs := flag.NewFlagSet("import", flag.ExitOnError)
	var d dataFlags
	d.register(fs)
	adapter := fs.String("adapter", "", "the adapter binary (required)")
	source := fs.String("source", "prometheus", "prometheus (blocks written into -dir) or opentsdb (the tables of -otsdb-prefix)")
	dir := fs.String("dir", "", "directory for the blocks (required with -source prometheus)")
	hours := fs.Int("hours", 8, "hours of data, a multiple of 2 (-source prometheus)")
	otsdbPrefix := fs.String("otsdb-prefix", "", "prefix of OpenTSDB's tables <prefix>tsdb and <prefix>tsdb-uid (required with -source opentsdb)")
	zk := fs.String("zk", os.Getenv("PROMHBASE_TEST_ZK"), "ZooKeeper quorum of the HBase")
	prefix := fs.String("prefix", "", "table name prefix of the import's tables (required)")
	workers := fs.Int("workers", 0, "the import's --workers (0: its default)")
	batch := fs.Int("batch-samples", 0, "the import's --batch-samples (0: its default)")
	var m cpuMeter
	fs.Var(&m.pids, "pid", "name=PID of a process whose CPU time to report (repeatable)")
	_ = fs.Parse(args)
	if *adapter == "" || *prefix == "" {
		return errors.New("-adapter and -prefix are required")
	}
	var (
		srcArgs []string
		target  = "adapter-import"
		extra   string
	)
	switch *source {
	case "prometheus":
		if *dir == "" || *hours < blockHours || *hours%blockHours != 0 {
			return errors.New("-source prometheus: -dir is required, -hours a multiple of 2")
		}
		if d.start == 0 {
			// Whole blocks, ending at least three hours ago: every hour closed.
			span := int64(blockHours) * 3600 * 1000
			d.start = (time.Now().UnixMilli()-int64(*hours+3)*3600*1000)/span*span - span
		}
		blockBytes, rounds, err := writeBenchBlocks(d, *dir, *hours)
		if err != nil {
			return err
		}
		d.rounds = rounds
		srcArgs = []string{"prometheus", *dir}
		extra = fmt.Sprintf(" block_bytes=%d block_bytes_per_sample=%.3f", blockBytes, float64(blockBytes)/float64(d.series*rounds))
	case "opentsdb":
		if *otsdbPrefix == "" {
			return errors.New("-source opentsdb: -otsdb-prefix is required")
		}
		target = "adapter-import-opentsdb"
		srcArgs = []string{"opentsdb", "--opentsdb.data-table=" + *otsdbPrefix + "tsdb", "--opentsdb.uid-table=" + *otsdbPrefix + "tsdb-uid"}
	default:
		return fmt.Errorf("-source %s: neither prometheus nor opentsdb", *source)
	}
	samples := float64(d.series * d.rounds)

	cmdArgs := []string{"import", "--hbase.zookeeper-quorum=" + *zk, "--hbase.table-prefix=" + *prefix,
		"--progress=log", "--log.level=warn"}
	if *workers > 0 {
		cmdArgs = append(cmdArgs, "--workers="+strconv.Itoa(*workers))
	}
	if *batch > 0 {
		cmdArgs = append(cmdArgs, "--batch-samples="+strconv.Itoa(*batch))
	}
	secs, cpu, err := timeImport(*adapter, append(cmdArgs, srcArgs...), &m, int64(samples))
	if err != nil {
		return err
	}
	fmt.Printf("target=%s series=%d rounds=%d step_ms=%d samples=%.0f seconds=%.2f samples_per_s=%.0f%s%s\n",
		target, d.series, d.rounds, d.step, samples, secs, samples/secs, extra, formatCPU(cpu, samples/1e6, "msample"))
	return nil
}

// importedRE finds the samples count in the import's summary.
var importedRE = regexp.MustCompile(`units \(\d+ done before, 0 failed\): \d+ series, (\d+) samples`)

// timeImport runs the import command until it exits, with its output on
// stderr, and returns its seconds and the CPU seconds of it and of m's
// processes. Its summary must count want samples.
func timeImport(adapter string, args []string, m *cpuMeter, want int64) (float64, map[string]float64, error) {
	var out bytes.Buffer
	cmd := exec.Command(adapter, args...)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stderr, &out), os.Stderr
	if err := m.start(); err != nil {
		return 0, nil, err
	}
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, nil, fmt.Errorf("adapter import: %w", err)
	}
	secs := time.Since(began).Seconds()
	cpu, err := m.stop()
	if err != nil {
		return 0, nil, err
	}
	cpu["import"] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if g := importedRE.FindStringSubmatch(out.String()); g == nil || g[1] != strconv.FormatInt(want, 10) {
		return 0, nil, fmt.Errorf("adapter import: its summary does not count the %d samples of the data set: %q", want, out.String())
	}
	return secs, cpu, nil
}

// writeBenchBlocks writes the data set into blocks of two hours from
// d.start and returns their bytes and the rounds per series.
func writeBenchBlocks(d dataFlags, dir string, hours int) (bytes int64, rounds int, err error) {
	set := seriesSet(d.run, d.series, d.metrics)
	gens := valueGens(set)
	perBlock := int(int64(blockHours) * 3600 * 1000 / d.step)
	logger := slog.New(slog.DiscardHandler)
	for b := range hours / blockHours {
		from := d.start + int64(b*perBlock)*d.step
		// CreateBlock's head refuses samples more than half its chunk
		// range behind the newest: twice the block's span.
		path, err := tsdb.CreateBlock(blockSeries(set, gens, from, d.step, perBlock), dir, 2*blockHours*3600*1000, logger)
		if err != nil {
			return 0, 0, fmt.Errorf("writing block %d: %w", b, err)
		}
		sizes, err := blockSizes(path)
		if err != nil {
			return 0, 0, err
		}
		bytes += sizes["total"]
		rounds += perBlock
	}
	return bytes, rounds, nil
}
