package opentsdb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb/tsdtest"
	"github.com/prom-hbase/prom-hbase/store"
)

// t0 is the first hour of the test's history: 2024-03-01T00:00:00Z.
const t0 = int64(1709251200)

var metrics = []string{"sys.cpu.user", "net.bytes.in", "9p.mixed-values"}

// promName is the Prometheus name each OpenTSDB name of the history must
// get, as the package documents the mapping.
var promName = map[string]string{
	"sys.cpu.user": "sys_cpu_user", "net.bytes.in": "net_bytes_in", "9p.mixed-values": "_9p_mixed_values",
	"host": "host", "cpu": "cpu", "iface": "iface", "dc": "dc", "k.ey": "k_ey", "__x": "tag__x", "café": "caf_",
}

var (
	cpuTags = []map[string]string{{"host": "web-01", "cpu": "0"}, {"host": "web-02", "cpu": "1"}}
	netTags = map[string]string{"host": "web-01", "iface": "eth0", "dc": "zürich"} // ü: ISO-8859-1 in the UID table
	oddTags = map[string]string{"k.ey": "a/b", "__x": "y", "café": "crème"}
)

// history is what the test writes through OpenTSDB, in three phases:
// hours 0 and 1, compacted by OpenTSDB; hours 1 and 2, left raw (beside
// compacted columns in hour 1); hours 2 and 3 with appends on (beside raw
// cells in hour 2). No two phases write one series at one instant but for
// the points written again on purpose, with other values.
func history(phase int) []tsdtest.Point {
	var pts []tsdtest.Point
	add := func(metric string, ts int64, v string, tags map[string]string) {
		pts = append(pts, tsdtest.Point{Metric: metric, Timestamp: ts, Value: json.RawMessage(v), Tags: tags})
	}
	ints := []string{"0", "-1", "127", "128", "-32769", "2147483648", "-1099511627776", "9007199254740993"}
	first, offset := int64(phase-1), int64([]int{0, 30, 45}[phase-1])
	for h := first; h <= first+1; h++ {
		base := t0 + h*3600
		for i := range int64(60) {
			for s, tags := range cpuTags {
				// Integers, second timestamps.
				add("sys.cpu.user", base+offset+i*60, strconv.FormatInt(i*int64(s+1)-30, 10), tags)
			}
			// Floats at millisecond timestamps: exact in 4 bytes, and not.
			v := strconv.FormatFloat(float64(i)*0.25, 'f', -1, 64)
			if i%2 == 1 {
				v = strconv.FormatFloat(float64(i)*0.1+0.01, 'f', -1, 64)
			}
			add("net.bytes.in", (base+offset)*1000+i*1500+int64(phase), v, netTags)
			// Seconds and milliseconds mixed in a row, integers of every
			// width, a name starting with a digit, tag keys to sanitise.
			ts := base + offset + i*59
			if i%3 == 0 {
				ts = ts*1000 + 250
			}
			add("9p.mixed-values", ts, ints[i%int64(len(ints))], oddTags)
		}
	}
	switch phase {
	case 2:
		// Raw cells beside the compacted column of hour 0: at the same
		// second, and at the same instant as a millisecond timestamp. The
		// newer cell wins.
		add("sys.cpu.user", t0+120, "99", cpuTags[0])
		add("sys.cpu.user", (t0+180)*1000, "-99", cpuTags[0])
	case 3:
		// Twice in one append column: the later wins.
		add("sys.cpu.user", t0+2*3600+45, "77", cpuTags[1])
	}
	return pts
}

// The forms the history leaves in the data table (per table).
const (
	wantRows        = 17  // 4 series * 4 hours, and a row holding only an annotation
	wantCompacted   = 8   // hours 0 and 1
	wantAppends     = 8   // hours 2 and 3
	wantAnnotations = 2   // in hour 0 and in an hour without points
	wantRaw         = 482 // phase 2's points
	wantDuplicates  = 3   // phase 2's two, phase 3's one
)

type tableVariant struct {
	name  string
	extra []string // OpenTSDB configuration
	opts  opentsdb.Options
}

// TestOpenTSDBTables loads tables through a real OpenTSDB 2.4.1 and checks
// that the source reads what OpenTSDB's /api/query answers, series by
// series and point by point, over all of the history and over a range
// that cuts rows, unsalted with default UID widths and salted with others.
func TestOpenTSDBTables(t *testing.T) {
	zk := hbasetest.ZK(t)
	tsdtest.Require(t)
	for _, v := range []tableVariant{
		{name: "default"},
		{name: "salted", extra: []string{
			"tsd.storage.salt.width = 1", "tsd.storage.salt.buckets = 4",
			"tsd.storage.uid.width.metric = 4", "tsd.storage.uid.width.tagk = 2", "tsd.storage.uid.width.tagv = 5",
		}, opts: opentsdb.Options{SaltWidth: 1, SaltBuckets: 4, MetricWidth: 4, TagKWidth: 2, TagVWidth: 5}},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			testTables(t, zk, v)
		})
	}
}

func testTables(t *testing.T, zk string, v tableVariant) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client := hbase.New(hbase.Config{ZooKeeper: zk})
	t.Cleanup(func() { client.Close() }) // after the tables are dropped
	prefix := fmt.Sprintf("i2otsdb_%s%d_", v.name, time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		if err := tsdtest.DropTables(context.Background(), client, prefix); err != nil {
			t.Logf("dropping tables: %v", err)
		}
	})
	dir := t.TempDir()
	cfg := func(extra ...string) tsdtest.Config {
		// fix_duplicates: else OpenTSDB refuses to answer for a row holding
		// one instant twice with two values.
		return tsdtest.Config{ZK: zk, RunDir: dir, Prefix: prefix,
			Extra: slices.Concat(v.extra, []string{"tsd.storage.fix_duplicates = true"}, extra)}
	}
	all := [2]int64{(t0 - 3600) * 1000, (t0 + 6*3600) * 1000}

	// Phase 1: a query compacts every row it reads (OpenTSDB writes the
	// compacted column back and deletes the cells), deterministically,
	// unlike the compaction queue, which skips a random third of its rows
	// when it flushes at SIGTERM.
	tsd := tsdtest.Start(t, cfg())
	tsd.Put(t, history(1))
	var tsuid string // of the first series, for annotations
	for _, m := range metrics {
		if s := tsd.Query(t, m, all[0], all[1]); m == metrics[0] {
			tsuid = s[0].TSUID
		}
	}
	tsd.WaitIdle(t)
	tsd.Stop(t)

	// Phase 2: raw cells, left so by SIGKILL; annotations.
	tsd = tsdtest.Start(t, cfg())
	tsd.Put(t, history(2))
	tsd.Annotate(t, tsuid, t0+600, "deploy")
	tsd.Annotate(t, tsuid, t0+5*3600, "alone in its row")
	tsd.Kill(t)

	// Phase 3: appends. The source reads the tables before any query.
	tsd = tsdtest.Start(t, cfg("tsd.storage.enable_appends = true"))
	defer tsd.Stop(t)
	tsd.Put(t, history(3))
	opts := v.opts
	opts.DataTable, opts.UIDTable = prefix+"tsdb", prefix+"tsdb-uid"
	got := readAll(ctx, t, client, opts, true)
	// Round trips of 300 bytes: HBase cuts rows into partial results, and
	// flags as partial a compacted column followed by deleted cells.
	small := opts
	opentsdb.SetScanBytes(&small, 300)
	gotSmall := readAll(ctx, t, client, small, true)
	part := [2]int64{t0*1000 + 1800500, (t0+2*3600)*1000 + 1234567}
	opts.MinTime, opts.MaxTime = part[0], part[1]
	gotPart := readAll(ctx, t, client, opts, false)

	for _, r := range [][2]int64{all, part} {
		want := map[string][]store.Sample{}
		for _, m := range metrics {
			for _, s := range tsd.Query(t, m, r[0], r[1]) {
				want[seriesKey(t, s.Metric, s.Tags)] = points(t, s.Points)
			}
		}
		if r == part {
			compare(t, "range", gotPart, want)
			continue
		}
		compare(t, "all", got, want)
		compare(t, "all, 300 bytes a call", gotSmall, want)
		if n := distinctPoints(t, slices.Concat(history(1), history(2), history(3))); countSamples(got) != n {
			t.Errorf("imported %d samples, wrote %d distinct points", countSamples(got), n)
		}
	}
}

// readAll reads every unit of a source over the tables into series by
// label set, checking each series' samples, and with checkForms the forms
// of the tables (their counts).
func readAll(ctx context.Context, t *testing.T, c *hbase.Client, opts opentsdb.Options, checkForms bool) map[string][]store.Sample {
	t.Helper()
	src, err := opentsdb.New(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	units, err := src.Units(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]store.Sample{}
	for _, u := range units {
		it, err := src.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			in := it.At()
			k := labels.New(in.Labels...).String()
			for i, s := range in.Samples {
				if s.T < u.MinTime || s.T > u.MaxTime || (i > 0 && s.T <= in.Samples[i-1].T) {
					t.Fatalf("unit %s, %s: sample %d at %d out of order or out of the unit", u.ID, k, i, s.T)
				}
			}
			out[k] = append(out[k], in.Samples...)
		}
		if err := it.Err(); err != nil {
			t.Fatalf("unit %s: %v", u.ID, err)
		}
		it.Close()
	}
	for k, s := range out {
		if !slices.IsSortedFunc(s, func(a, b store.Sample) int { return int(a.T - b.T) }) {
			t.Errorf("%s: units or rows out of order", k)
		}
	}
	if checkForms {
		st := src.Stats()
		for _, c := range []struct {
			what      string
			got, want int64
		}{
			{"rows", st.Rows, wantRows},
			{"compacted columns", st.Compacted, wantCompacted},
			{"append columns", st.Appends, wantAppends},
			{"annotations", st.Annotations, wantAnnotations},
			{"raw columns", st.Columns - st.Compacted - st.Appends - st.Annotations, wantRaw},
			{"duplicates dropped", st.Duplicates, wantDuplicates},
		} {
			if c.got != c.want {
				t.Errorf("the tables hold %d %s, want %d", c.got, c.what, c.want)
			}
		}
	}
	return out
}

// seriesKey is the label set a series of OpenTSDB must become.
func seriesKey(t *testing.T, metric string, tags map[string]string) string {
	t.Helper()
	name := func(n string) string {
		p, ok := promName[n]
		if !ok {
			t.Fatalf("no Prometheus name for %q in the test", n)
		}
		return p
	}
	b := labels.NewScratchBuilder(len(tags) + 1)
	b.Add(model.MetricNameLabel, name(metric))
	for k, v := range tags {
		b.Add(name(k), v)
	}
	b.Sort()
	return b.Labels().String()
}

func points(t *testing.T, dps [][2]json.Number) []store.Sample {
	t.Helper()
	out := make([]store.Sample, len(dps))
	for i, p := range dps {
		ts, err := p[0].Int64()
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseFloat(string(p[1]), 64)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = store.Sample{T: ts, V: v}
	}
	return out
}

func compare(t *testing.T, what string, got, want map[string][]store.Sample) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: OpenTSDB returned no series", what)
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, w := got[k], want[k]
		if len(g) != len(w) {
			t.Errorf("%s: %s: %d samples imported, OpenTSDB has %d", what, k, len(g), len(w))
			continue
		}
		for i := range w {
			if g[i].T != w[i].T || math.Float64bits(g[i].V) != math.Float64bits(w[i].V) {
				t.Errorf("%s: %s: sample %d is %v, OpenTSDB has %v", what, k, i, g[i], w[i])
				break
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: imported series %s that OpenTSDB does not return", what, k)
		}
	}
}

func countSamples(m map[string][]store.Sample) int {
	n := 0
	for _, s := range m {
		n += len(s)
	}
	return n
}

// distinctPoints counts the points written by series and millisecond.
func distinctPoints(t *testing.T, pts []tsdtest.Point) int {
	seen := map[string]bool{}
	for _, p := range pts {
		ms := p.Timestamp
		if ms < 1e12 {
			ms *= 1000
		}
		seen[fmt.Sprint(seriesKey(t, p.Metric, p.Tags), ms)] = true
	}
	return len(seen)
}
