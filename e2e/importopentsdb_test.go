package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb/tsdtest"
)

// otsdbT0 is the first hour of the OpenTSDB history: 2024-03-01T00:00:00Z.
const otsdbT0 = int64(1709251200)

// otsdbNames is the Prometheus name every OpenTSDB name of the history must
// get, as README's "Importing history" tells users (the salted table's
// metrics are imported with --metric-prefix=salted_).
var otsdbNames = map[string]string{
	"sys.cpu.user": "sys_cpu_user", "net.bytes.in": "net_bytes_in", "9p.mixed-values": "_9p_mixed_values",
	"a.b": "salted_a_b", "disk.used": "salted_disk_used",
	"host": "host", "cpu": "cpu", "iface": "iface", "dc": "dc", "mount": "mount",
	"k.ey": "k_ey", "__x": "tag__x", "café": "caf_",
}

// otsdbTable is one OpenTSDB table pair the test loads and imports.
type otsdbTable struct {
	prefix  string   // of its tables
	conf    []string // OpenTSDB configuration of every TSD on it
	metrics []string // imported and compared
	args    []string // its layout flags of `adapter import opentsdb`
	tsd     *tsdtest.TSD
	points  int // distinct points written
}

// TestImportOpenTSDB is issue 15's end-to-end check of the OpenTSDB source.
// A real OpenTSDB 2.4.1 loads two table pairs: a default one holding
// compacted rows (OpenTSDB's own compaction, forced by a query) and raw
// cells beside and after them, integers of every width and floats of 4 and
// 8 bytes, second and millisecond timestamps, a point written twice; and a
// salted one with other UID widths, two of whose metrics collide (a.b and
// a_b). `adapter import opentsdb` brings them into fresh tables (the salted
// one's collision refused, then one of the two imported under a prefix),
// with --verify; a rerun skips every unit; an adapter then serves the
// tables, and every series read back by remote read equals, point for
// point, what OpenTSDB's /api/query answers.
func TestImportOpenTSDB(t *testing.T) {
	zk := hbasetest.ZK(t)
	tsdtest.Require(t)
	dir := t.TempDir()
	bin := buildAdapter(t, dir)
	run := "e2eotsdb" + strconv.FormatInt(time.Now().UnixNano(), 36)
	client := hbase.New(hbase.Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot()})
	t.Cleanup(func() { client.Close() })
	plain := &otsdbTable{prefix: run + "a_", metrics: []string{"sys.cpu.user", "net.bytes.in", "9p.mixed-values"}}
	salted := &otsdbTable{prefix: run + "s_",
		conf: []string{"tsd.storage.salt.width = 1", "tsd.storage.salt.buckets = 4",
			"tsd.storage.uid.width.metric = 4", "tsd.storage.uid.width.tagk = 2", "tsd.storage.uid.width.tagv = 5"},
		metrics: []string{"a.b", "disk.used"},
		args: []string{"--opentsdb.salt-width=1", "--opentsdb.salt-buckets=4",
			"--opentsdb.uid-width.metric=4", "--opentsdb.uid-width.tagk=2", "--opentsdb.uid-width.tagv=5"}}
	for _, tb := range []*otsdbTable{plain, salted} {
		t.Cleanup(func() {
			if err := tsdtest.DropTables(context.Background(), client, tb.prefix); err != nil {
				t.Logf("dropping OpenTSDB's tables: %v", err)
			}
		})
	}
	owner := t // the TSDs left running serve the comparison below
	t.Run("load", func(t *testing.T) {
		t.Run("default", func(t *testing.T) { t.Parallel(); plain.load(t, owner, zk, plainHistory) })
		t.Run("salted", func(t *testing.T) { t.Parallel(); salted.load(t, owner, zk, saltedHistory) })
	})
	if t.Failed() {
		return
	}
	for _, tb := range []*otsdbTable{plain, salted} {
		t.Cleanup(func() { tb.tsd.Stop(t) })
	}

	imp := otsdbImport{t: t, bin: bin, zk: zk, prefix: run + "_"}
	out := imp.run(0, plain, "--verify")
	t.Logf("import:\n%s", out)
	units := checkImported(t, out, plain.points, 0)
	// Closed hours, all of them: chunk cells only.
	if want := fmt.Sprintf("written: %d samples in chunk cells, 0 in raw cells", plain.points); !strings.Contains(out, want) {
		t.Errorf("no %q in the import's output", want)
	}
	// The rows were as the test meant them: compacted columns and raw ones.
	if m := regexp.MustCompile(`rows=\d+ columns=(\d+) compacted_columns=(\d+)`).FindStringSubmatch(out); m == nil || atoi(m[2]) == 0 || atoi(m[1]) <= atoi(m[2]) {
		t.Errorf("the default table holds no compacted columns, or nothing else:\n%s", out)
	}
	out = imp.run(0, plain, "--verify")
	if checkImported(t, out, 0, units) != units {
		t.Errorf("the rerun did not skip the %d units done:\n%s", units, out)
	}
	// The salted table: its metrics collide until the list leaves a_b out.
	if out = imp.run(1, salted, "--metric-prefix=salted_"); !strings.Contains(out, "a.b and a_b -> a_b") {
		t.Errorf("the collision of a.b and a_b was not reported:\n%s", out)
	}
	out = imp.run(0, salted, "--verify", "--metric=a.b", "--metric=disk.used", "--metric-prefix=salted_")
	checkImported(t, out, salted.points-1, 0) // a_b's point left out
	// A table that is not there is named.
	if out = imp.run(1, &otsdbTable{prefix: run + "nope_"}); !strings.Contains(out, run+"nope_tsdb") || !strings.Contains(out, "--opentsdb.data-table") {
		t.Errorf("a missing data table is not named:\n%s", out)
	}

	url := "http://127.0.0.1:" + itoa(freePort(t))
	startProcess(t, dir, "adapter-otsdb", bin, "--web.listen-address="+strings.TrimPrefix(url, "http://"),
		"--hbase.zookeeper-quorum="+zk, "--hbase.zookeeper-root="+hbasetest.ZKRoot(),
		"--hbase.table-prefix="+imp.prefix, "--salt.buckets=4").waitReady(t, url+"/-/ready", 2*time.Minute)
	for _, tb := range []*otsdbTable{plain, salted} {
		for _, m := range tb.metrics {
			compareOpenTSDB(t, tb.tsd, url, m)
		}
	}
}

// load has OpenTSDB write the history into the table pair: the compacted
// part with compaction on, then read back by a query (which writes every
// row it reads back compacted) before that TSD stops; the raw part with
// compaction off, by a TSD left running for the comparison.
func (tb *otsdbTable) load(t, owner *testing.T, zk string, history func() (compacted, raw []tsdtest.Point)) {
	compacted, raw := history()
	// The TSD left running serves the parent's comparison: its run
	// directory and its end are the parent's.
	cfg := tsdtest.Config{ZK: zk, RunDir: owner.TempDir(), Prefix: tb.prefix, Owner: owner,
		// fix_duplicates: else OpenTSDB refuses to answer for a row holding
		// one instant twice with two values.
		Extra: append(slices.Clone(tb.conf), "tsd.storage.fix_duplicates = true")}
	if len(compacted) > 0 {
		tsd := tsdtest.Start(t, cfg)
		tsd.Put(t, compacted)
		for _, m := range tb.metrics {
			tsd.Query(t, m, 0, (otsdbT0+24*3600)*1000)
		}
		tsd.WaitIdle(t)
		tsd.Stop(t)
	}
	cfg.Extra = append(cfg.Extra, "tsd.storage.enable_compaction = false")
	tb.tsd = tsdtest.Start(t, cfg)
	tb.tsd.Put(t, raw)
	seen := map[string]bool{}
	for _, p := range append(compacted, raw...) {
		ms := p.Timestamp
		if ms < 1e12 {
			ms *= 1000
		}
		seen[fmt.Sprint(p.Metric, p.Tags, ms)] = true
	}
	tb.points = len(seen)
}

// plainHistory is the default table's: hours 0 and 1 compacted, hours 1
// and 2 raw (between the compacted points in hour 1), and one raw point
// written again over a compacted one with another value (the newer wins).
func plainHistory() (compacted, raw []tsdtest.Point) {
	cpu := []map[string]string{{"host": "web-01", "cpu": "0"}, {"host": "web-02", "cpu": "1"}}
	net := map[string]string{"host": "web-01", "iface": "eth0", "dc": "zürich"} // ü: ISO-8859-1 in the UID table
	odd := map[string]string{"k.ey": "a/b", "__x": "y", "café": "crème"}
	ints := []string{"0", "-1", "127", "128", "-32769", "2147483648", "-1099511627776", "9007199254740993"}
	hours := func(first int64, offset int64) []tsdtest.Point {
		var pts []tsdtest.Point
		for h := first; h <= first+1; h++ {
			base := otsdbT0 + h*3600 + offset
			for i := range int64(60) {
				for s, tags := range cpu { // integers, second timestamps
					pts = append(pts, otsdbPoint("sys.cpu.user", base+i*60, strconv.FormatInt(i*int64(s+1)-30, 10), tags))
				}
				// Floats at millisecond timestamps: exact in 4 bytes, and not.
				v := strconv.FormatFloat(float64(i)*0.25, 'f', -1, 64)
				if i%2 == 1 {
					v = strconv.FormatFloat(float64(i)*0.1+0.01, 'f', -1, 64)
				}
				pts = append(pts, otsdbPoint("net.bytes.in", base*1000+i*1500+7, v, net))
				// Seconds and milliseconds mixed, integers of every width.
				ts := base + i*59
				if i%3 == 0 {
					ts = ts*1000 + 250
				}
				pts = append(pts, otsdbPoint("9p.mixed-values", ts, ints[i%int64(len(ints))], odd))
			}
		}
		return pts
	}
	raw = append(hours(1, 29), otsdbPoint("sys.cpu.user", otsdbT0+3600+120, "99", cpu[0]))
	return hours(0, 0), raw
}

// saltedHistory is the salted table's, all raw: a.b (floats) and disk.used
// (integers) are imported, a_b collides with a.b.
func saltedHistory() (compacted, raw []tsdtest.Point) {
	tags := map[string]string{"host": "db-1", "mount": "/var"}
	for i := range int64(120) {
		ts := otsdbT0 + i*60
		raw = append(raw, otsdbPoint("a.b", ts, strconv.FormatFloat(float64(i)/8, 'f', -1, 64), tags),
			otsdbPoint("disk.used", ts*1000+i, strconv.FormatInt(i<<40, 10), tags))
	}
	return nil, append(raw, otsdbPoint("a_b", otsdbT0, "1", tags))
}

func otsdbPoint(metric string, ts int64, v string, tags map[string]string) tsdtest.Point {
	return tsdtest.Point{Metric: metric, Timestamp: ts, Value: json.RawMessage(v), Tags: tags}
}

// otsdbImport runs `adapter import opentsdb` into the tables of a prefix.
type otsdbImport struct {
	t               *testing.T
	bin, zk, prefix string
}

// run imports a table pair with its layout flags and extra ones, and
// returns the output; the exit status must be want.
func (imp otsdbImport) run(want int, tb *otsdbTable, extra ...string) string {
	imp.t.Helper()
	args := []string{"import", "--hbase.zookeeper-quorum=" + imp.zk, "--hbase.zookeeper-root=" + hbasetest.ZKRoot(),
		"--hbase.table-prefix=" + imp.prefix, "--salt.buckets=4", "--workers=2", "--batch-samples=500", "--progress=log",
		"opentsdb", "--opentsdb.data-table=" + tb.prefix + "tsdb", "--opentsdb.uid-table=" + tb.prefix + "tsdb-uid"}
	args = slices.Concat(args, tb.args, extra)
	out, err := exec.CommandContext(imp.t.Context(), imp.bin, args...).CombinedOutput()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		imp.t.Fatal(err)
	}
	if code != want {
		imp.t.Fatalf("adapter %s: exit status %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	return string(out)
}

var importedRE = regexp.MustCompile(`imported (\d+) of (\d+) units \((\d+) done before, 0 failed\): \d+ series, (\d+) samples`)

// checkImported checks an import's summary: the samples imported, the
// units done before, and (with --verify) that every unit verified. It
// returns the units.
func checkImported(t *testing.T, out string, samples, doneBefore int) int {
	t.Helper()
	m := importedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary in the import's output:\n%s", out)
	}
	imported, units, before, got := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])
	if units == 0 || before != doneBefore || imported != units-doneBefore || got != samples {
		t.Errorf("imported %d of %d units, %d done before, %d samples; want %d done before and %d samples:\n%s",
			imported, units, before, got, doneBefore, samples, out)
	}
	if want := fmt.Sprintf("verified %d units: the store holds what the source holds", units); !strings.Contains(out, want) {
		t.Errorf("no %q in the import's output:\n%s", want, out)
	}
	return units
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// compareOpenTSDB reads every series of an OpenTSDB metric from OpenTSDB
// (/api/query, aggregator none, milliseconds) and through the adapter's
// remote read under its Prometheus name: the same series, point for point,
// values bit for bit.
func compareOpenTSDB(t *testing.T, tsd *tsdtest.TSD, url, metric string) {
	t.Helper()
	start, end := (otsdbT0-3600)*1000, (otsdbT0+24*3600)*1000
	want := map[string][]prompb.Sample{}
	var points int
	for _, s := range tsd.Query(t, metric, start, end) {
		b := labels.NewScratchBuilder(len(s.Tags) + 1)
		b.Add(model.MetricNameLabel, promName(t, metric))
		for k, v := range s.Tags {
			b.Add(promName(t, k), v)
		}
		b.Sort()
		key := b.Labels().String()
		for _, p := range s.Points {
			ts, err1 := p[0].Int64()
			v, err2 := strconv.ParseFloat(string(p[1]), 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: OpenTSDB's point %v", metric, p)
			}
			want[key] = append(want[key], prompb.Sample{Timestamp: ts, Value: v})
		}
		points += len(s.Points)
	}
	got, err := remoteRead(t.Context(), url+"/api/v1/read", time.UnixMilli(start), time.UnixMilli(end),
		&prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: model.MetricNameLabel, Value: promName(t, metric)})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || len(got) != len(want) {
		t.Errorf("%s: OpenTSDB has %d series, the adapter %d", metric, len(want), len(got))
	}
	for _, s := range got {
		b := labels.NewScratchBuilder(len(s.Labels))
		for _, l := range s.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		key := b.Labels().String()
		w, ok := want[key]
		if !ok {
			t.Errorf("%s: the adapter has %s, OpenTSDB has not", metric, key)
			continue
		}
		if i := firstDiff(s.Samples, w); i >= 0 {
			t.Errorf("%s: %s: %d samples, OpenTSDB %d; first difference at %d: %v, OpenTSDB %v",
				key, metric, len(s.Samples), len(w), i, at(s.Samples, i), at(w, i))
		}
	}
	t.Logf("%s: %d series, %d points equal", metric, len(want), points)
}

func promName(t *testing.T, otsdb string) string {
	n, ok := otsdbNames[otsdb]
	if !ok {
		t.Fatalf("no Prometheus name for %q in the test", otsdb)
	}
	return n
}

// firstDiff is the index of the first sample where a and b differ
// (timestamp, or value bits), or -1.
func firstDiff(a, b []prompb.Sample) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i].Timestamp != b[i].Timestamp ||
			math.Float64bits(a[i].Value) != math.Float64bits(b[i].Value) {
			return i
		}
	}
	return -1
}

func at(s []prompb.Sample, i int) any {
	if i < len(s) {
		return s[i]
	}
	return "none"
}
