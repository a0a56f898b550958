package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/tsdb"
)

// blockHours is the span of the blocks the import benchmark writes, as
// Prometheus's head cuts them.
const blockHours = 2

// runImportBench writes the data set as Prometheus TSDB blocks of two hours
// (old enough that every hour is closed), runs the adapter's import
// command on them into fresh tables, and prints samples/s and the CPU
// seconds of the import and of the processes named. The data table's
// bytes per sample are the `compact` subcommand's, run afterwards.
func runImportBench(args []string) error {
	fs := flag.NewFlagSet("import", flag.ExitOnError)
	var d dataFlags
	d.register(fs)
	adapter := fs.String("adapter", "", "the adapter binary (required)")
	dir := fs.String("dir", "", "directory for the blocks (required)")
	hours := fs.Int("hours", 8, "hours of data, a multiple of 2")
	zk := fs.String("zk", os.Getenv("PROMHBASE_TEST_ZK"), "ZooKeeper quorum of the HBase")
	prefix := fs.String("prefix", "", "table name prefix of the import's tables (required)")
	workers := fs.Int("workers", 0, "the import's --workers (0: its default)")
	batch := fs.Int("batch-samples", 0, "the import's --batch-samples (0: its default)")
	var m cpuMeter
	fs.Var(&m.pids, "pid", "name=PID of a process whose CPU time to report (repeatable)")
	_ = fs.Parse(args)
	if *adapter == "" || *dir == "" || *prefix == "" || *hours < blockHours || *hours%blockHours != 0 {
		return errors.New("-adapter, -dir and -prefix are required, -hours a multiple of 2")
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
	samples := float64(d.series * rounds)

	cmdArgs := []string{"import", "--hbase.zookeeper-quorum=" + *zk, "--hbase.table-prefix=" + *prefix,
		"--progress=log", "--log.level=warn"}
	if *workers > 0 {
		cmdArgs = append(cmdArgs, "--workers="+strconv.Itoa(*workers))
	}
	if *batch > 0 {
		cmdArgs = append(cmdArgs, "--batch-samples="+strconv.Itoa(*batch))
	}
	cmd := exec.Command(*adapter, append(cmdArgs, "prometheus", *dir)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := m.start(); err != nil {
		return err
	}
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("adapter import: %w", err)
	}
	secs := time.Since(began).Seconds()
	cpu, err := m.stop()
	if err != nil {
		return err
	}
	cpu["import"] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	fmt.Printf("target=adapter-import series=%d rounds=%d step_ms=%d samples=%.0f seconds=%.2f samples_per_s=%.0f block_bytes=%d block_bytes_per_sample=%.3f%s\n",
		d.series, rounds, d.step, samples, secs, samples/secs, blockBytes, float64(blockBytes)/samples, formatCPU(cpu, samples/1e6, "msample"))
	return nil
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
