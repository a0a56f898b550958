package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/prom-hbase/prom-hbase/importer"
	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table"
)

// Exit statuses of the import command beside 0 (done) and 2 (bad flags).
const (
	exitImportFailed = 1 // a unit failed, or the run was interrupted: rerun to resume
	exitVerifyFailed = 3 // imported, but --verify found a unit that differs
)

// importFlags are the import command's own flags.
type importFlags struct {
	log promslog.Config
	storageFlags

	dir          string
	matchers     []string
	minTime      string
	maxTime      string
	workers      int
	batchSamples int
	force        bool
	verify       bool
	progress     string
	cpuProfile   string
	pauseAfter   int64

	sel        [][]*labels.Matcher // the parsed --match
	mint, maxt int64               // the parsed --min-time, --max-time (0: open)

	otsdb openTSDBFlags // import opentsdb's own (import_opentsdb.go)
}

func parseImportFlags(args []string) (*importFlags, error) {
	app := kingpin.New("adapter import", "Import history into the adapter's tables: Prometheus TSDB blocks (a data directory or a snapshot), or OpenTSDB 2.x tables. A killed import resumes where it stopped when run again with the same flags.")
	app.HelpFlag.Short('h')
	f := &importFlags{}
	promslogflag.AddFlags(app, &f.log)
	addStorageFlags(app, &f.storageFlags)
	app.Flag("match", "Import only the series this PromQL selector matches, e.g. '{job=\"node\"}' (repeatable: a series matching any is imported; Prometheus blocks only). Default: every series.").
		StringsVar(&f.matchers)
	app.Flag("min-time", "Import only samples at or after this time: RFC3339 or Unix milliseconds. Default: the oldest.").
		StringVar(&f.minTime)
	app.Flag("max-time", "Import only samples at or before this time: RFC3339 or Unix milliseconds. Default: the newest.").
		StringVar(&f.maxTime)
	app.Flag("workers", "Units read, and batches written, at once.").
		Default(strconv.Itoa(runtime.GOMAXPROCS(0))).IntVar(&f.workers)
	app.Flag("batch-samples", "Most samples in one write to the storage; 2 x --workers batches are the import's memory beside one series per worker.").
		Default(strconv.Itoa(importer.DefaultBatchSamples)).IntVar(&f.batchSamples)
	app.Flag("force", "Import units that an earlier run finished, again.").BoolVar(&f.force)
	app.Flag("verify", "Read every unit back once imported (or found done) and compare its series and sample counts with the source; exit status 3 when one differs.").
		BoolVar(&f.verify)
	app.Flag("compactor.grace", "The adapters' --compactor.grace: hours that ended at least this long ago are written as compacted chunks, later ones as raw cells that the adapters' compactors fold.").
		Default(store.DefaultCompactGrace.String()).DurationVar(&f.compactGrace)
	app.Flag("write.timeout", "The adapters' --write.timeout (at most): each step of a history write (read up to 4096 hour rows, write them back) must land within it, as the compactors count on.").
		Default(store.DefaultWriteTimeout.String()).DurationVar(&f.writeTimeout)
	app.Flag("progress", "How to show progress: a line redrawn in place (line), log lines every 10s (log), or line when stderr is a terminal (auto).").
		Default("auto").EnumVar(&f.progress, "auto", "line", "log")
	app.Flag("debug.cpu-profile", "Write a Go CPU profile of the import to this file (go tool pprof reads it).").
		PlaceHolder("FILE").StringVar(&f.cpuProfile)
	app.Flag("testing.pause-after-batches", "TESTING ONLY: after this many batches are written, stop writing and wait to be killed.").
		Hidden().Default("0").Int64Var(&f.pauseAfter)
	prom := app.Command("prometheus", "Prometheus TSDB blocks: a data directory (its blocks; the head is not read), a snapshot (POST /api/v1/admin/tsdb/snapshot to a Prometheus run with --web.enable-admin-api; it writes the head as a block too), or one block.")
	prom.Arg("dir", "The data directory, snapshot or block.").Required().ExistingDirVar(&f.dir)
	addOpenTSDBCommand(app, f)

	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	if f.workers < 1 || f.batchSamples < 1 {
		return nil, errors.New("--workers and --batch-samples must be at least 1")
	}
	if err := f.checkLayout(); err != nil {
		return nil, err
	}
	var err error
	if f.sel, err = parseSelectors(f.matchers); err != nil {
		return nil, err
	}
	if f.mint, err = parseTime("--min-time", f.minTime); err != nil {
		return nil, err
	}
	if f.maxt, err = parseTime("--max-time", f.maxTime); err != nil {
		return nil, err
	}
	if f.maxt != 0 && f.mint > f.maxt {
		return nil, errors.New("--min-time is after --max-time")
	}
	return f, nil
}

func runImport(args []string) int {
	f, err := parseImportFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adapter import:", err)
		return 2
	}
	logger := promslog.New(&f.log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if f.cpuProfile != "" {
		stopProfile, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "adapter import:", err)
			return 2
		}
		defer stopProfile()
	}
	sum, hist, err := importBlocks(ctx, f, logger)
	if sum != nil {
		sum.Print(os.Stdout)
		printHistoryStats(os.Stdout, hist)
	}
	switch {
	case errors.Is(err, importer.ErrVerify):
		logger.Error("import verified: some units differ from their source (see above)", "err", err)
		return exitVerifyFailed
	case err != nil && sum == nil:
		// Tables, source or flags: nothing was imported, nothing resumes.
		logger.Error("import could not start", "err", err)
		return exitImportFailed
	case err != nil:
		logger.Error("import stopped; run it again with the same flags to resume", "err", err)
		return exitImportFailed
	}
	return 0
}

// importBlocks imports the history the flags name: Prometheus blocks or
// OpenTSDB tables. It returns the summary and what the store did with the
// samples written.
func importBlocks(ctx context.Context, f *importFlags, logger *slog.Logger) (_ *importer.Summary, hist store.HistoryStats, err error) {
	mint, maxt := f.mint, f.maxt
	db, err := openDB(ctx, &f.storageFlags, logger)
	if err != nil {
		return nil, hist, err
	}
	defer db.Close()
	if err := f.keepTableRetention(ctx, db, logger); err != nil {
		return nil, hist, err
	}
	if mint, err = clipToRetention(mint, maxt, time.Duration(f.retention), time.Now(), logger); err != nil {
		return nil, hist, err
	}
	src, sel, err := f.openSource(ctx, db, mint, maxt, logger)
	if err != nil {
		return nil, hist, err
	}
	defer src.Close()
	regions, err := dataRegions(ctx, db, f.dataRegions)
	if err != nil {
		return nil, hist, err
	}
	st, err := store.Open(ctx, db, f.storeConfig(regions, prometheus.NewRegistry(), logger))
	if err != nil {
		return nil, hist, fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	state, err := importer.OpenState(ctx, db, f.tablePrefix)
	if err != nil {
		return nil, hist, err
	}
	sum, err := importer.Run(ctx, importer.Config{
		Source: src,
		Writer: f.pausing(st, logger),
		Reader: st,
		State:  state,
		// The flags as given: the retention horizon moves on between runs;
		// From says where this run's began.
		Selection:    sel,
		From:         mint,
		Workers:      f.workers,
		BatchSamples: f.batchSamples,
		Limits:       seriesrules.Limits(f.limits),
		Force:        f.force,
		Verify:       f.verify,
		Progress:     f.progressOut(),
		Logger:       logger,
	})
	return sum, st.HistoryStats(), err
}

// printHistoryStats says how the store wrote the samples: chunk cells for
// closed hours, raw cells for the compactors to fold.
func printHistoryStats(w io.Writer, h store.HistoryStats) {
	fmt.Fprintf(w, "written: %d samples in chunk cells, %d in raw cells (hours not closed, rows holding other cells, histograms no chunk holds exactly), %d stored already, %d past the retention\n",
		h.Chunked, h.Raw, h.Unchanged, h.Expired)
}

// parseSelectors parses the --match flags as promtool does.
func parseSelectors(in []string) ([][]*labels.Matcher, error) {
	if len(in) == 0 {
		return nil, nil
	}
	sets, err := parser.NewParser(parser.Options{}).ParseMetricSelectors(in)
	if err != nil {
		return nil, fmt.Errorf("--match: %w", err)
	}
	return sets, nil
}

// parseTime reads a time flag: empty (0, an open end), Unix milliseconds,
// or RFC3339.
func parseTime(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: neither Unix milliseconds nor RFC3339 (2006-01-02T15:04:05Z)", flag, s)
	}
	return t.UnixMilli(), nil
}

// selection is what besides the units decides what an import writes: a
// unit done under another selection is imported again.
func selection(source string, matchers []string, mint, maxt int64) string {
	return fmt.Sprintf("%s|%s|%d|%d", source, strings.Join(matchers, "|"), mint, maxt)
}

// keepTableRetention takes the data table's TTL as the retention when the
// flag was not given: opening the store sets the TTL to the flag's value,
// and an import must not change what the adapters keep.
func (f *importFlags) keepTableRetention(ctx context.Context, db table.DB, logger *slog.Logger) error {
	if f.retentionSet {
		return nil
	}
	spec, err := db.Describe(ctx, f.tablePrefix+store.DataTableSuffix)
	if errors.Is(err, table.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the data table's retention: %w", err)
	}
	for _, fam := range spec.Families {
		if fam.Name == store.FamilyData && fam.TTL > 0 {
			f.retention = model.Duration(fam.TTL)
			logger.Info("keeping the data table's retention", "retention", f.retention)
		}
	}
	return nil
}

// clipToRetention moves mint past the retention: older samples would
// expire at once.
func clipToRetention(mint, maxt int64, retention time.Duration, now time.Time, logger *slog.Logger) (int64, error) {
	if retention <= 0 {
		return mint, nil
	}
	horizon := now.Add(-retention).UnixMilli()
	if mint >= horizon {
		return mint, nil
	}
	if maxt != 0 && maxt < horizon {
		return 0, fmt.Errorf("every sample asked for is older than the retention (%v): nothing to import", model.Duration(retention))
	}
	logger.Info("samples older than the retention are left out", "retention", model.Duration(retention), "min_time", time.UnixMilli(horizon).UTC())
	return horizon, nil
}

// progressOut is where the progress line goes, or nil for log lines.
func (f *importFlags) progressOut() io.Writer {
	switch f.progress {
	case "line":
		return os.Stderr
	case "log":
		return nil
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return os.Stderr
	}
	return nil
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--debug.cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("--debug.cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}
