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
	"github.com/prom-hbase/prom-hbase/internal/adapterproc"
	"github.com/prom-hbase/prom-hbase/store"
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
	checkTables(ctx, t, bin, zk, prefix)
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

// checkTables runs `adapter check --data` on the tables of prefix, as an
// operator would, and fails the test unless it finds nothing harmful: every
// forward mapping with its reverse one, no UID given to two strings, no UID
// above its counter, every UID of a data row named by the mappings of its
// string, every raw cell covered by a compaction mark. Reverse rows of UIDs
// that failed assignments left, which no row uses, are harmless. It runs
// while the adapters still write and compact.
func checkTables(ctx context.Context, t *testing.T, bin, zk, prefix string) {
	t.Helper()
	out, err := adapterproc.Check(ctx, bin, zk, hbasetest.ZKRoot(), prefix)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("adapter check --data:\n%s", out)
}
