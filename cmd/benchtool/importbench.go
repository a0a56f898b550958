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

// runImportBench runs the adapter's import command -runs times, each into
// fresh tables, on the data set: with -source prometheus written first as
// Prometheus TSDB blocks of two hours (old enough that every hour is
// closed), with -source opentsdb in OpenTSDB's tables of -otsdb-prefix,
// which `load -target opentsdb=URL` filled (-series x -rounds). The
// command's summary must count every sample of the data set. The first meets
// HBase as it is (a fresh JVM when bench.sh started it), the later ones a
// JVM that has compiled its write path, as a long-running region server
// has. For each it prints samples/s over the command's whole run (tables
// created, every write durable) and over the import loop alone (the
// command's summary), and the CPU seconds of the import and of the
// processes named. The data table's bytes per sample are the `compact`
// subcommand's, run afterwards on the first run's tables (-prefix); run N
// writes to -prefix plus "runN-".
func runImportBench(args []string) error {
	fs := flag.NewFlagSet("import", flag.ExitOnError)
	var d dataFlags
	d.register(fs)
	adapter := fs.String("adapter", "", "the adapter binary (required)")
	source := fs.String("source", "prometheus", "prometheus (blocks written into -dir) or opentsdb (the tables of -otsdb-prefix)")
	dir := fs.String("dir", "", "directory for the blocks (required with -source prometheus)")
	hours := fs.Int("hours", 8, "hours of data, a multiple of 2 (-source prometheus)")
	otsdbPrefix := fs.String("otsdb-prefix", "", "prefix of OpenTSDB's tables <prefix>tsdb and <prefix>tsdb-uid (required with -source opentsdb)")
	runs := fs.Int("runs", 2, "imports of the blocks, each into fresh tables")
	zk := fs.String("zk", os.Getenv("PROMHBASE_TEST_ZK"), "ZooKeeper quorum of the HBase")
	prefix := fs.String("prefix", "", "table name prefix of the import's tables (required)")
	workers := fs.Int("workers", 0, "the import's --workers (0: its default)")
	batch := fs.Int("batch-samples", 0, "the import's --batch-samples (0: its default)")
	var m cpuMeter
	fs.Var(&m.pids, "pid", "name=PID of a process whose CPU time to report (repeatable)")
	_ = fs.Parse(args)
	if *adapter == "" || *prefix == "" || *runs < 1 {
		return errors.New("-adapter and -prefix are required, -runs at least 1")
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
	for run := 1; run <= *runs; run++ {
		tables := *prefix
		if run > 1 {
			tables += fmt.Sprintf("run%d-", run)
		}
		cmdArgs := []string{"import", "--hbase.zookeeper-quorum=" + *zk, "--hbase.table-prefix=" + tables,
			"--progress=log", "--log.level=warn"}
		if *workers > 0 {
			cmdArgs = append(cmdArgs, "--workers="+strconv.Itoa(*workers))
		}
		if *batch > 0 {
			cmdArgs = append(cmdArgs, "--batch-samples="+strconv.Itoa(*batch))
		}
		r, err := timeImport(exec.Command(*adapter, append(cmdArgs, srcArgs...)...), &m, int64(samples))
		if err != nil {
			return err
		}
		fmt.Printf("target=%s run=%d series=%d rounds=%d step_ms=%d samples=%.0f seconds=%.2f samples_per_s=%.0f import_seconds=%.2f import_samples_per_s=%.0f%s%s\n",
			target, run, d.series, d.rounds, d.step, samples, r.secs, samples/r.secs, r.loopSecs, samples/r.loopSecs,
			extra, formatCPU(r.cpu, samples/1e6, "msample"))
	}
	return nil
}

// importRun is one timed import: the command's seconds, its import loop's
// (from its summary), and CPU seconds by process.
type importRun struct {
	secs, loopSecs float64
	cpu            map[string]float64
}

// summaryTime finds the samples and the import loop's seconds in the
// command's summary: "imported ... 0 failed): ... series, N samples ... in
// 12.3s: ... samples/s".
var summaryTime = regexp.MustCompile(`(?m)^imported .* 0 failed\): \d+ series, (\d+) samples .* in ([0-9.]+)s: [0-9]+ samples/s$`)

// timeImport runs cmd, an import that must import want samples.
func timeImport(cmd *exec.Cmd, m *cpuMeter, want int64) (importRun, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stderr, &out), os.Stderr
	if err := m.start(); err != nil {
		return importRun{}, err
	}
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return importRun{}, fmt.Errorf("adapter import: %w", err)
	}
	r := importRun{secs: time.Since(began).Seconds()}
	var err error
	if r.cpu, err = m.stop(); err != nil {
		return r, err
	}
	r.cpu["import"] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	match := summaryTime.FindSubmatch(out.Bytes())
	if match == nil {
		return r, errors.New("adapter import printed no summary line")
	}
	if string(match[1]) != strconv.FormatInt(want, 10) {
		return r, fmt.Errorf("adapter import's summary counts %s samples, not the data set's %d", match[1], want)
	}
	if r.loopSecs, err = strconv.ParseFloat(string(match[2]), 64); err != nil || r.loopSecs <= 0 {
		return r, fmt.Errorf("adapter import's summary: seconds %q", match[2])
	}
	return r, nil
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
