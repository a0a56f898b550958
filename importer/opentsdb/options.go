package opentsdb

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
)

// Options say where OpenTSDB's tables are, how OpenTSDB was configured, and
// what to import. The zero value reads the tables "tsdb" and "tsdb-uid" of
// a default OpenTSDB 2.x, every metric, all of time, a day per unit.
type Options struct {
	// DataTable and UIDTable are OpenTSDB's tsd.storage.hbase.data_table and
	// uid_table ("tsdb" and "tsdb-uid").
	DataTable, UIDTable string

	// MetricWidth, TagKWidth and TagVWidth are the UID widths in bytes
	// (tsd.storage.uid.width.metric, .tagk, .tagv; 0: OpenTSDB's 3).
	MetricWidth, TagKWidth, TagVWidth int
	// SaltWidth and SaltBuckets are tsd.storage.salt.width (0: no salt, as
	// OpenTSDB's default) and tsd.storage.salt.buckets (0: OpenTSDB's 20).
	SaltWidth, SaltBuckets int

	// Metrics are the OpenTSDB metric names to import; empty: every metric
	// of the UID table.
	Metrics []string
	// MinTime and MaxTime bound the samples imported (milliseconds,
	// inclusive); 0 leaves that end open.
	MinTime, MaxTime int64
	// SpanHours is the span of one unit, aligned on multiples of it since
	// the epoch (0: 24, a UTC day).
	SpanHours int
	// MetricPrefix goes in front of every Prometheus metric name (say
	// "otsdb_"); it must itself be a valid start of a metric name.
	MetricPrefix string

	// SkipCorrupt skips and counts columns OpenTSDB itself cannot read, and
	// rows naming UIDs the UID table lacks, instead of failing the unit.
	SkipCorrupt bool
	// TagValueCache caps the tag values held in memory (0: 1<<20); more are
	// looked up in batches as rows need them.
	TagValueCache int
	// RowsPerBatch caps the rows decoded at once (0: 512), and with them the
	// iterator's memory: at most 3600 samples a row at one-second
	// resolution.
	RowsPerBatch int
	// Logger receives the summary of what was skipped (nil: slog.Default()).
	Logger *slog.Logger

	// scanBytes caps the bytes of a scan round trip (0: 1 MiB), and with it
	// what a scan holds; tests make it small (export_test.go).
	scanBytes int
}

var validPrefix = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// withDefaults fills in the defaults and checks the options.
func (o Options) withDefaults() (Options, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if o.DataTable == "" {
		o.DataTable = "tsdb"
	}
	if o.UIDTable == "" {
		o.UIDTable = "tsdb-uid"
	}
	def(&o.MetricWidth, 3)
	def(&o.TagKWidth, 3)
	def(&o.TagVWidth, 3)
	def(&o.SaltBuckets, 20)
	def(&o.SpanHours, 24)
	def(&o.TagValueCache, 1<<20)
	def(&o.RowsPerBatch, 512)
	def(&o.scanBytes, 1<<20)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	for _, w := range []int{o.MetricWidth, o.TagKWidth, o.TagVWidth} {
		if w < 1 || w > 8 {
			return o, fmt.Errorf("opentsdb: UID width %d outside 1..8 (OpenTSDB's own limit)", w)
		}
	}
	if o.SaltWidth < 0 || o.SaltWidth > 8 {
		return o, fmt.Errorf("opentsdb: salt width %d outside 0..8", o.SaltWidth)
	}
	if o.SaltWidth == 0 {
		o.SaltBuckets = 1
	} else if o.SaltBuckets < 1 || (o.SaltWidth < 4 && o.SaltBuckets > 1<<(8*o.SaltWidth)) {
		return o, fmt.Errorf("opentsdb: %d salt buckets do not fit %d salt bytes", o.SaltBuckets, o.SaltWidth)
	}
	if o.SpanHours < 1 || o.SpanHours > 24*366 {
		return o, fmt.Errorf("opentsdb: unit span of %d hours outside 1..%d", o.SpanHours, 24*366)
	}
	if o.MetricPrefix != "" && !validPrefix.MatchString(o.MetricPrefix) {
		return o, fmt.Errorf("opentsdb: metric prefix %q is not [a-zA-Z_:][a-zA-Z0-9_:]*", o.MetricPrefix)
	}
	if o.MinTime != 0 && o.MaxTime != 0 && o.MinTime > o.MaxTime {
		return o, errors.New("opentsdb: MinTime after MaxTime")
	}
	if o.TagValueCache < 0 || o.RowsPerBatch < 0 {
		return o, errors.New("opentsdb: negative cache or batch size")
	}
	return o, nil
}

func (o Options) layout() keyLayout {
	return keyLayout{salt: o.SaltWidth, metric: o.MetricWidth, tagk: o.TagKWidth, tagv: o.TagVWidth, buckets: o.SaltBuckets}
}

// timeRange is the options' range in milliseconds, open ends made explicit
// (base times are u32 seconds, so that bounds everything).
func (o Options) timeRange() (mint, maxt int64) {
	mint, maxt = o.MinTime, o.MaxTime
	if mint <= 0 {
		mint = 0
	}
	if maxt == 0 || maxt > (maxBase+2*hour)*1000 {
		maxt = (maxBase + 2*hour) * 1000
	}
	return mint, maxt
}
