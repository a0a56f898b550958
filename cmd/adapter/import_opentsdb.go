package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/prom-hbase/prom-hbase/importer"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb"
	"github.com/prom-hbase/prom-hbase/importer/promblocks"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/hbasetable"
)

// openTSDBFlags are the flags of `import opentsdb`: where OpenTSDB's tables
// are, how that OpenTSDB was configured, and what to import. The shared
// flags (time range, workers, batch size, --force, --verify, progress, the
// adapter's tables) are the import command's.
type openTSDBFlags struct {
	selected bool // the opentsdb subcommand was given
	opts     opentsdb.Options
}

// addOpenTSDBCommand registers `import opentsdb` on the import command's
// app; its checks run once every flag is parsed.
func addOpenTSDBCommand(app *kingpin.Application, f *importFlags) {
	o := &f.otsdb.opts
	c := app.Command("opentsdb", "An OpenTSDB 2.x data table and UID table on the HBase of --hbase.zookeeper-quorum, read directly (OpenTSDB need not run). OpenTSDB names become Prometheus names: every character outside [a-zA-Z0-9_:] of a metric, and outside [a-zA-Z0-9_] of a tag key, becomes '_'; tag values stay as they are.")
	c.Flag("opentsdb.data-table", "OpenTSDB's data table (its tsd.storage.hbase.data_table).").
		Default("tsdb").StringVar(&o.DataTable)
	c.Flag("opentsdb.uid-table", "OpenTSDB's UID table (its tsd.storage.hbase.uid_table).").
		Default("tsdb-uid").StringVar(&o.UIDTable)
	c.Flag("opentsdb.salt-width", "Salt bytes of OpenTSDB's row keys (its tsd.storage.salt.width; 0: not salted).").
		Default("0").IntVar(&o.SaltWidth)
	c.Flag("opentsdb.salt-buckets", "Salt buckets of OpenTSDB's row keys (its tsd.storage.salt.buckets), when salted.").
		Default("20").IntVar(&o.SaltBuckets)
	for _, w := range []struct {
		kind, what string
		v          *int
	}{{"metric", "metric", &o.MetricWidth}, {"tagk", "tag key", &o.TagKWidth}, {"tagv", "tag value", &o.TagVWidth}} {
		c.Flag("opentsdb.uid-width."+w.kind, fmt.Sprintf("Bytes of OpenTSDB's %s UIDs (its tsd.storage.uid.width.%s).", w.what, w.kind)).
			Default("3").IntVar(w.v)
	}
	c.Flag("opentsdb.skip-corrupt", "Skip (and count) columns OpenTSDB itself could not read and rows naming UIDs the UID table lacks, instead of stopping the unit.").
		BoolVar(&o.SkipCorrupt)
	c.Flag("metric", "An OpenTSDB metric to import, as OpenTSDB names it (repeatable). Default: every metric of the UID table.").
		StringsVar(&o.Metrics)
	c.Flag("metric-prefix", "Put in front of every Prometheus metric name, e.g. otsdb_.").
		StringVar(&o.MetricPrefix)
	c.Action(func(*kingpin.ParseContext) error {
		f.otsdb.selected = true
		switch {
		case len(f.matchers) > 0:
			return errors.New("--match selects Prometheus series; name OpenTSDB metrics with --metric")
		case f.zkQuorum == "":
			return errors.New("import opentsdb reads OpenTSDB's tables on HBase: --hbase.zookeeper-quorum is required")
		}
		return nil
	})
}

// openSource opens the source the subcommand names, over [mint, maxt]
// (the flags' range clipped to the retention), and returns the selection
// its units are kept done under: the flags as given, since the retention
// horizon moves on between runs.
func (f *importFlags) openSource(ctx context.Context, db table.DB, mint, maxt int64, logger *slog.Logger) (importer.Source, string, error) {
	if f.otsdb.selected {
		src, err := f.otsdb.open(ctx, db, mint, maxt, logger)
		if err != nil {
			return nil, "", err
		}
		return src, f.otsdbSelection(), nil
	}
	src, err := promblocks.New(promblocks.Options{Dir: f.dir, Matchers: f.sel, MinTime: mint, MaxTime: maxt, Logger: logger})
	if err != nil {
		return nil, "", err
	}
	return src, selection("prometheus", f.matchers, f.mint, f.maxt), nil
}

// otsdbSelection is the selection of an OpenTSDB import: the data table
// and the prefix decide what a unit writes, beside the time range; the
// metric list does not (a unit is one metric's).
func (f *importFlags) otsdbSelection() string {
	return selection("opentsdb", []string{f.otsdb.opts.DataTable, f.otsdb.opts.MetricPrefix}, f.mint, f.maxt)
}

// open checks that OpenTSDB's tables exist, naming the one missing, and
// opens the source: it reads the UID table and refuses a name mapping that
// would merge series.
func (o *openTSDBFlags) open(ctx context.Context, db table.DB, mint, maxt int64, logger *slog.Logger) (*opentsdb.Source, error) {
	hdb, ok := db.(*hbasetable.DB)
	if !ok {
		return nil, errors.New("import opentsdb needs HBase: --hbase.zookeeper-quorum")
	}
	c := hdb.Client()
	for _, t := range []struct{ flag, name string }{
		{"--opentsdb.data-table", o.opts.DataTable},
		{"--opentsdb.uid-table", o.opts.UIDTable},
	} {
		ok, err := c.TableExists(ctx, t.name)
		if err != nil {
			return nil, fmt.Errorf("look for OpenTSDB's table %s: %w", t.name, err)
		}
		if !ok {
			return nil, fmt.Errorf("OpenTSDB's table %q is not on this HBase (%s): check the name, and its namespace (ns:table) if OpenTSDB used one", t.name, t.flag)
		}
	}
	opts := o.opts
	opts.MinTime, opts.MaxTime, opts.Logger = mint, maxt, logger
	return opentsdb.New(ctx, c, opts)
}
