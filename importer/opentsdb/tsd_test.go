package opentsdb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb"
	"github.com/prom-hbase/prom-hbase/importer/opentsdb/tsdtest"
	"github.com/prom-hbase/prom-hbase/store"
)

// t0 is the first hour of the test's history: 2024-03-01T00:00:00Z.
const t0 = int64(1709251200)

// history is what the test writes through OpenTSDB, in three phases:
// before a SIGTERM (rows get compacted); after a restart, into the same
// hours and the next, before a SIGKILL (those points stay raw cells, beside
// compacted columns in the same rows); and with appends on
// (tsd.storage.enable_appends), into the last of those hours and the next.
// No two phases write one series at one instant, but for the points of
// phase 2 written again on purpose.
func history(phase int) []tsdtest.Point {
	var pts []tsdtest.Point
	add := func(metric string, ts int64, v string, tags map[string]string) {
		pts = append(pts, tsdtest.Point{Metric: metric, Timestamp: ts, Value: json.RawMessage(v), Tags: tags})
	}
	cpu := []map[string]string{{"host": "web-01", "cpu": "0"}, {"host": "web-02", "cpu": "1"}}
	net := map[string]string{"host": "web-01", "iface": "eth0", "dc": "eu.west"}
	odd := map[string]string{"k.ey": "a/b", "__x": "y"}
	ints := []string{"0", "-1", "127", "128", "-32769", "2147483648", "-1099511627776", "9007199254740993"}
	hours, offset := []int64{0, 1}, int64(0)
	switch phase {
	case 2:
		hours, offset = []int64{1, 2}, 30
	case 3:
		hours, offset = []int64{2, 3}, 45
	}
	for _, h := range hours {
		base := t0 + h*3600
		for i := range int64(60) {
			for s, tags := range cpu {
				// Integers, second timestamps.
				add("sys.cpu.user", base+offset+i*60, strconv.FormatInt(i*int64(s+1)-30, 10), tags)
			}
			// Floats at millisecond timestamps: exact in 4 bytes, and not.
			v := strconv.FormatFloat(float64(i)*0.25, 'f', -1, 64)
			if i%2 == 1 {
				v = strconv.FormatFloat(float64(i)*0.1+0.01, 'f', -1, 64)
			}
			add("net.bytes.in", (base+offset)*1000+i*1500+int64(phase), v, net)
			// Seconds and milliseconds mixed in a row, integers of every
			// width, a name starting with a digit, tag keys to sanitise.
			ts := base + offset + i*59
			if i%3 == 0 {
				ts = ts*1000 + 250
			}
			add("9p.mixed-values", ts, ints[i%int64(len(ints))], odd)
		}
	}
	if phase == 2 {
		// Points written again: the same value at the same second, and
		// at the same instant as a millisecond timestamp.
		add("sys.cpu.user", t0+120, "-28", cpu[0])
		add("sys.cpu.user", (t0+180)*1000, "-27", cpu[0])
	}
	if phase == 3 {
		add("sys.cpu.user", t0+2*3600+45, "-30", cpu[1]) // twice in one append column
	}
	return pts
}

func TestOpenTSDBTables(t *testing.T) {
	zk := os.Getenv("PROMHBASE_TEST_ZK")
	if zk == "" || testing.Short() {
		t.Skip("needs PROMHBASE_TEST_ZK (a running HBase) and OpenTSDB 2.4.1's jars")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	client := hbase.New(hbase.Config{ZooKeeper: zk})
	t.Cleanup(func() { client.Close() }) // after the tables are dropped
	prefix := fmt.Sprintf("i2otsdb%d_", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		if err := tsdtest.DropTables(context.Background(), client, prefix); err != nil {
			t.Logf("dropping tables: %v", err)
		}
	})
	cfg := tsdtest.Config{ZK: zk, RunDir: t.TempDir(), Prefix: prefix}

	tsd := tsdtest.Start(t, cfg)
	tsd.Put(t, history(1))
	tsd.WaitIdle(t)
	tsd.Stop(t)
	tsd = tsdtest.Start(t, cfg)
	tsd.Put(t, history(2))
	tsd.WaitIdle(t)
	tsd.Kill(t)
	appends := cfg
	appends.Extra = []string{"tsd.storage.enable_appends = true"}
	tsd = tsdtest.Start(t, appends)
	tsd.Put(t, history(3))
	tsd.WaitIdle(t)
	tsd.Stop(t)

	src, err := opentsdb.New(ctx, client, opentsdb.Options{DataTable: prefix + "tsdb", UIDTable: prefix + "tsdb-uid"})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, ctx, src)
	st := src.Stats()
	t.Logf("read %d rows, %d columns (%d compacted, %d appends), %d samples, %d duplicates dropped",
		st.Rows.Load(), st.Columns.Load(), st.Compacted.Load(), st.Appends.Load(), st.Samples.Load(), st.Duplicates.Load())
	// A point written again at the same instant as a millisecond
	// timestamp is another column: the duplicate is always there.
	if st.Compacted.Load() == 0 || st.Appends.Load() == 0 || st.Columns.Load() == st.Compacted.Load()+st.Appends.Load() || st.Duplicates.Load() < 2 {
		t.Errorf("the tables lack a form: want compacted, append and raw columns, and duplicates")
	}
	src.Close()

	// OpenTSDB's own answer, from a TSD started again on the same tables.
	tsd = tsdtest.Start(t, cfg)
	defer tsd.Stop(t)
	want := map[string][]store.Sample{}
	for _, m := range []string{"sys.cpu.user", "net.bytes.in", "9p.mixed-values"} {
		for _, s := range tsd.Query(t, m, t0-3600, t0+4*3600) {
			want[seriesKey(s.Metric, s.Tags)] = points(t, s.Points)
		}
	}
	compare(t, got, want)
	if n := distinctPoints(slices.Concat(history(1), history(2), history(3))); countSamples(got) != n {
		t.Errorf("imported %d samples, wrote %d distinct points", countSamples(got), n)
	}
}

// readAll reads every unit of src into series by label set, checking that
// a series' rows never repeat a timestamp.
func readAll(t *testing.T, ctx context.Context, src *opentsdb.Source) map[string][]store.Sample {
	t.Helper()
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
			out[k] = append(out[k], in.Samples...)
		}
		if err := it.Err(); err != nil {
			t.Fatalf("unit %s: %v", u.ID, err)
		}
		it.Close()
	}
	for k, s := range out {
		slices.SortFunc(s, func(a, b store.Sample) int { return int(a.T - b.T) })
		for i := 1; i < len(s); i++ {
			if s[i].T == s[i-1].T {
				t.Errorf("%s: timestamp %d twice", k, s[i].T)
			}
		}
	}
	return out
}

func seriesKey(metric string, tags map[string]string) string {
	b := labels.NewScratchBuilder(len(tags) + 1)
	b.Add(model.MetricNameLabel, opentsdb.MetricName(metric))
	for k, v := range tags {
		b.Add(opentsdb.LabelName(k), v)
	}
	b.Sort()
	return b.Labels().String()
}

func points(t *testing.T, dps [][2]json.Number) []store.Sample {
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

func compare(t *testing.T, got, want map[string][]store.Sample) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("OpenTSDB returned no series")
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, w := got[k], want[k]
		if len(g) != len(w) {
			t.Errorf("%s: %d samples imported, OpenTSDB has %d", k, len(g), len(w))
			continue
		}
		for i := range w {
			if g[i].T != w[i].T || math.Float64bits(g[i].V) != math.Float64bits(w[i].V) {
				t.Errorf("%s: sample %d is %v, OpenTSDB has %v", k, i, g[i], w[i])
				break
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("imported series %s that OpenTSDB does not return", k)
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
func distinctPoints(pts []tsdtest.Point) int {
	seen := map[string]bool{}
	for _, p := range pts {
		ms := p.Timestamp
		if ms < 1e12 {
			ms *= 1000
		}
		seen[fmt.Sprint(seriesKey(p.Metric, p.Tags), ms)] = true
	}
	return len(seen)
}
