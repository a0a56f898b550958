package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/prom-hbase/prom-hbase/importer/opentsdb"
)

func TestImportOpenTSDBFlags(t *testing.T) {
	zk := "--hbase.zookeeper-quorum=zk:2181"
	f, err := parseImportFlags([]string{zk, "opentsdb"})
	if err != nil {
		t.Fatal(err)
	}
	// OpenTSDB's own defaults.
	want := opentsdb.Options{DataTable: "tsdb", UIDTable: "tsdb-uid", MetricWidth: 3, TagKWidth: 3, TagVWidth: 3, SaltBuckets: 20}
	if !f.otsdb.selected || !reflect.DeepEqual(f.otsdb.opts, want) {
		t.Errorf("defaults: selected %v, %+v, want %+v", f.otsdb.selected, f.otsdb.opts, want)
	}

	// The shared flags before and after the subcommand, its own after it.
	f, err = parseImportFlags([]string{zk, "--workers=3", "--min-time=1000", "opentsdb", "--verify",
		"--opentsdb.data-table=ns:t", "--opentsdb.uid-table=ns:u", "--opentsdb.salt-width=1", "--opentsdb.salt-buckets=4",
		"--opentsdb.uid-width.metric=4", "--opentsdb.uid-width.tagk=2", "--opentsdb.uid-width.tagv=5",
		"--opentsdb.skip-corrupt", "--metric=a.b", "--metric=c", "--metric-prefix=otsdb_"})
	if err != nil {
		t.Fatal(err)
	}
	want = opentsdb.Options{DataTable: "ns:t", UIDTable: "ns:u", SaltWidth: 1, SaltBuckets: 4,
		MetricWidth: 4, TagKWidth: 2, TagVWidth: 5, SkipCorrupt: true, Metrics: []string{"a.b", "c"}, MetricPrefix: "otsdb_"}
	if !reflect.DeepEqual(f.otsdb.opts, want) || f.workers != 3 || !f.verify || f.mint != 1000 {
		t.Errorf("flags: %+v (workers %d, verify %v, min %d), want %+v", f.otsdb.opts, f.workers, f.verify, f.mint, want)
	}

	if f, err = parseImportFlags([]string{"prometheus", t.TempDir()}); err != nil || f.otsdb.selected {
		t.Errorf("prometheus: selected opentsdb %v, %v", f != nil && f.otsdb.selected, err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"opentsdb"}, "--hbase.zookeeper-quorum is required"},
		{[]string{zk, `--match={a="b"}`, "opentsdb"}, "--metric"},
	} {
		if _, err := parseImportFlags(bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}
}

// The selection, which a unit is done under, changes with what a unit
// writes (the tables read, the prefix, the time range given) and not with
// the metric list: a unit is one metric's.
func TestImportOpenTSDBSelection(t *testing.T) {
	sel := func(args ...string) string {
		f, err := parseImportFlags(append([]string{"--hbase.zookeeper-quorum=zk:2181", "opentsdb"}, args...))
		if err != nil {
			t.Fatal(err)
		}
		return f.otsdbSelection()
	}
	base := sel()
	if sel("--metric=a", "--metric=b") != base {
		t.Error("the metric list changes the selection")
	}
	for _, other := range [][]string{{"--opentsdb.data-table=t2"}, {"--metric-prefix=p_"}, {"--max-time=5"}} {
		if sel(other...) == base {
			t.Errorf("%v leaves the selection as it was", other)
		}
	}
}
