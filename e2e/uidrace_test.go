package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/hbasetable"
)

// TestUIDRaceWithFaults is issue 10's fault test across processes: four
// adapters, each its own process with its own caches, whose calls to the
// UID table fail at random (half of the failures after HBase applied the
// call: a lost reply), are sent the same 10,000 brand-new series at once,
// each retrying as Prometheus does until acknowledged. Then a fifth adapter
// without faults must read every series back with its sample, and the UID
// table must hold one UID per string, forward and reverse in agreement.
func TestUIDRaceWithFaults(t *testing.T) {
	zk := hbasetest.ZK(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildAdapter(t, dir)
	prefix := "uidrace" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_"
	start := func(name string, faults bool) string {
		url := "http://127.0.0.1:" + itoa(freePort(t))
		args := []string{
			"--web.listen-address=" + strings.TrimPrefix(url, "http://"),
			"--hbase.zookeeper-quorum=" + zk,
			"--hbase.zookeeper-root=" + hbasetest.ZKRoot(),
			"--hbase.table-prefix=" + prefix,
			"--salt.buckets=4",
			"--write.timeout=20s",
		}
		if faults {
			args = append(args, "--testing.table-fault-rate=0.15", "--testing.table-fault-tables="+store.UIDTableSuffix,
				"--testing.table-fault-seed="+strconv.Itoa(len(name)*7919+int(name[len(name)-1])))
		}
		p := startProcess(t, dir, name, bin, args...)
		p.waitReady(t, url+"/-/ready", 2*time.Minute)
		return url
	}
	// The tables exist before the racers start, so that every racer gets
	// faults from its first call on.
	reader := start("reader", false)
	var racers []string
	for i := range 4 {
		racers = append(racers, start("racer"+itoa(i), true))
	}

	const n = 10000
	ts := time.Now().Add(-time.Minute).UnixMilli()
	series := make([]prompb.TimeSeries, n)
	for i := range series {
		series[i] = newSeries([]string{
			"__name__", fmt.Sprintf("uidrace_metric_%d", i%7),
			"job", "uidrace", "instance", fmt.Sprintf("10.1.%d.%d:9100", i/250, i%250),
			"pod", fmt.Sprintf("pod-%s-%05d", prefix, i),
		}, []prompb.Sample{{Timestamp: ts, Value: float64(i)}})
	}
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(racers))
	for i, url := range racers {
		wg.Go(func() {
			// Each racer sends the series in its own order, in requests of
			// 2,000, as a Prometheus queue shard would.
			for k := range 5 {
				lo := ((k + i) % 5) * 2000
				if err := mustRemoteWrite(ctx, url+"/api/v1/write", series[lo:lo+2000]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("4 racers acknowledged %d new series each in %v", n, time.Since(begin).Round(time.Millisecond))

	got, err := remoteRead(ctx, reader+"/api/v1/read", time.UnixMilli(ts), time.UnixMilli(ts),
		&prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "job", Value: "uidrace"},
		&prompb.LabelMatcher{Type: prompb.LabelMatcher_RE, Name: "__name__", Value: "uidrace_metric_.*"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range got {
		var pod string
		for _, l := range s.Labels {
			if l.Name == "pod" {
				pod = l.Value
			}
		}
		i, err := strconv.Atoi(pod[strings.LastIndexByte(pod, '-')+1:])
		if err != nil || len(s.Samples) != 1 || s.Samples[0].Value != float64(i) || seen[pod] {
			t.Fatalf("series %v read back wrong (duplicate: %v)", s, seen[pod])
		}
		seen[pod] = true
	}
	if len(seen) != n {
		t.Fatalf("read back %d series, want %d", len(seen), n)
	}
	checkUIDTable(ctx, t, zk, prefix)
}

// buildAdapter builds cmd/adapter into dir.
func buildAdapter(t *testing.T, dir string) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "adapter")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/adapter")
	build.Dir = filepath.Dir(wd)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build adapter: %v\n%s", err, out)
	}
	return bin
}

// checkUIDTable reads the UID table directly: every forward mapping has
// its reverse one, no UID is given to two strings of a kind, and every
// reverse row left without a forward one (a failed attempt's) names a UID
// that no string uses.
func checkUIDTable(ctx context.Context, t *testing.T, zk, prefix string) {
	db, err := hbasetable.Open(ctx, hbasetable.Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.Table(ctx, prefix+store.UIDTableSuffix)
	if err != nil {
		t.Fatal(err)
	}
	forward := scanFamily(ctx, t, tbl, labels2uid.FamilyID, []byte{1})
	reverse := scanFamily(ctx, t, tbl, labels2uid.FamilyName, nil)
	orphans := 0
	for kind := range labels2uid.NumKinds {
		q := labels2uid.Kind(kind).String()
		used := map[string]string{}
		for name, cells := range forward {
			uid, ok := cells[q]
			if !ok {
				continue
			}
			if other, dup := used[uid]; dup {
				t.Fatalf("%s UID %x given to %q and %q", q, uid, other, name)
			}
			used[uid] = name
			if back := reverse[uid][q]; back != name {
				t.Fatalf("%s %q has UID %x whose reverse mapping is %q", q, name, uid, back)
			}
		}
		for uid, cells := range reverse {
			name, ok := cells[q]
			if !ok {
				continue
			}
			if used[uid] == "" {
				orphans++
			} else if used[uid] != name {
				t.Fatalf("%s reverse %x = %q, but forward gives it to %q", q, uid, name, used[uid])
			}
		}
		t.Logf("%s: %d strings with UIDs", q, len(used))
	}
	t.Logf("%d reverse rows of unused UIDs left by failed attempts", orphans)
}

// scanFamily reads a family of tbl into row -> qualifier -> value.
func scanFamily(ctx context.Context, t *testing.T, tbl table.Table, family string, start []byte) map[string]map[string]string {
	out := map[string]map[string]string{}
	sc := tbl.Scan(ctx, table.ScanOptions{Start: start, Family: family})
	defer sc.Close()
	for sc.Next() {
		row := sc.At()
		m := map[string]string{}
		for _, c := range row.Cells {
			m[string(c.Qualifier)] = string(c.Value)
		}
		out[string(row.Key)] = m
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
