package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// writeTestBlock writes a block of three series of 480 samples, a
// millisecond apart, from 2026-01-01T00:00:00Z.
func writeTestBlock(t *testing.T, dir string) {
	t0 := int(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	var ss []storage.Series
	for i, job := range []string{"node", "node", "api"} {
		ss = append(ss, storage.NewListSeries(labels.FromStrings("__name__", "up", "job", job, "i", string(rune('a'+i))),
			chunks.GenerateSamples(t0, 480)))
	}
	if _, err := tsdb.CreateBlock(ss, dir, 4*3600*1000, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
}

func runAdapter(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(adapterBin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

func TestImportCommand(t *testing.T) {
	blocks, data := t.TempDir(), t.TempDir()
	writeTestBlock(t, blocks)
	// Only the run that creates the tables names their layout; the others
	// take the tables' own.
	common := []string{"import", "--storage.path=" + data}

	out, code := runAdapter(t, append(common, "--salt.buckets=2", "--verify", "--match={job=\"node\"}", "prometheus", blocks)...)
	if code != 0 || !strings.Contains(out, "imported 1 of 1 units (0 done before, 0 failed): 2 series, 960 samples") ||
		!strings.Contains(out, "verified 1 units: the store holds what the source holds") {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	if out, code = runAdapter(t, append(common, "--salt.buckets=1", "prometheus", blocks)...); code == 0 || !strings.Contains(out, "--salt.buckets is 1 but the tables were created with 2") {
		t.Errorf("another salt on the tables: exit %d\n%s", code, out)
	}
	// The same again: done. Another selection: imported.
	if out, code = runAdapter(t, append(common, "--match={job=\"node\"}", "prometheus", blocks)...); code != 0 || !strings.Contains(out, "(1 done before") {
		t.Errorf("rerun: exit %d\n%s", code, out)
	}
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	if out, code = runAdapter(t, append(common, "--verify", "--debug.cpu-profile="+prof, "prometheus", blocks)...); code != 0 || !strings.Contains(out, "3 series, 1440 samples") {
		t.Errorf("every series: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("no CPU profile written: %v", err)
	}
	// A retention moves the time range's start on between runs; the
	// units done stay done.
	days := int(time.Since(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).Hours()/24) + 30
	for range 2 {
		if out, code = runAdapter(t, append(common, "--storage.retention="+strconv.Itoa(days)+"d", "prometheus", blocks)...); code != 0 || !strings.Contains(out, "(1 done before") {
			t.Errorf("with a retention: exit %d\n%s", code, out)
		}
	}
	for _, bad := range [][]string{
		{"--match={job=", "prometheus", blocks},
		{"--min-time=yesterday", "prometheus", blocks},
		{"--min-time=2026-01-02T00:00:00Z", "--max-time=2026-01-01T00:00:00Z", "prometheus", blocks},
		{"prometheus", blocks + "/nowhere"},
		{"--workers=0", "prometheus", blocks},
	} {
		if out, code = runAdapter(t, append(common, bad...)...); code != 2 || !strings.Contains(out, "adapter import:") {
			t.Errorf("%v: exit %d, want 2 and a message\n%s", bad, code, out)
		}
	}
}

func TestImportKeepsRetention(t *testing.T) {
	ctx := context.Background()
	db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := store.Open(ctx, db, store.Config{TablePrefix: "p_", Retention: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	f := &importFlags{storageFlags: storageFlags{tablePrefix: "p_"}}
	if err := f.keepTableRetention(ctx, db, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if f.retention != model.Duration(48*time.Hour) {
		t.Errorf("retention %v, want the table's 48h", f.retention)
	}
	f = &importFlags{storageFlags: storageFlags{tablePrefix: "p_", retention: model.Duration(time.Hour), retentionSet: true}}
	if err := f.keepTableRetention(ctx, db, slog.New(slog.DiscardHandler)); err != nil || f.retention != model.Duration(time.Hour) {
		t.Errorf("a retention given: %v %v", f.retention, err)
	}

	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	horizon := now.Add(-48 * time.Hour).UnixMilli()
	log := slog.New(slog.DiscardHandler)
	if mint, err := clipToRetention(0, 0, 48*time.Hour, now, log); err != nil || mint != horizon {
		t.Errorf("open start: %d %v, want the horizon %d", mint, err, horizon)
	}
	if mint, err := clipToRetention(horizon+5, 0, 48*time.Hour, now, log); err != nil || mint != horizon+5 {
		t.Errorf("start after the horizon: %d %v", mint, err)
	}
	if _, err := clipToRetention(0, horizon-1, 48*time.Hour, now, log); err == nil {
		t.Error("a range wholly past the retention was accepted")
	}
	if mint, err := clipToRetention(7, 0, 0, now, log); err != nil || mint != 7 {
		t.Errorf("no retention: %d %v", mint, err)
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]int64{
		"":                          0,
		"1767225600000":             1767225600000,
		"2026-01-01T00:00:00Z":      1767225600000,
		"2026-01-01T01:00:00+01:00": 1767225600000,
		"2026-01-01T00:00:00.5Z":    1767225600500,
	} {
		if got, err := parseTime("--x", in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	if _, err := parseTime("--x", "2026-01-01"); err == nil {
		t.Error("a date without a time was accepted")
	}
}

// TestHistoryFlagsReachTheStore: the store's history writes depend on
// --compactor.grace, --write.timeout and --storage.float-chunks, in the
// adapter and in its import.
func TestHistoryFlagsReachTheStore(t *testing.T) {
	given := []string{"--compactor.grace=2h", "--write.timeout=7s", "--storage.float-chunks=xor"}
	serve, err := parseFlags(given)
	if err != nil {
		t.Fatal(err)
	}
	imp, err := parseImportFlags(append(given, "prometheus", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]store.Config{
		"adapter": serve.storeConfig(0, nil, nil),
		"import":  imp.storeConfig(0, nil, nil),
	} {
		if c.CompactGrace != 2*time.Hour || c.WriteTimeout != 7*time.Second || c.FloatChunks != store.FloatChunksXOR {
			t.Errorf("%s: store config has grace %v, write timeout %v, float chunks %q; want the flags' 2h, 7s and xor", name, c.CompactGrace, c.WriteTimeout, c.FloatChunks)
		}
	}
	imp, err = parseImportFlags([]string{"prometheus", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c := imp.storeConfig(0, nil, nil); c.CompactGrace != store.DefaultCompactGrace || c.WriteTimeout != store.DefaultWriteTimeout || c.FloatChunks != store.FloatChunksAuto {
		t.Errorf("import defaults: grace %v, write timeout %v, float chunks %q; want the adapter's", c.CompactGrace, c.WriteTimeout, c.FloatChunks)
	}
	// A grace of 0s is none, where the store's zero would be its default.
	serve, err = parseFlags([]string{"--compactor.grace=0s"})
	if err != nil {
		t.Fatal(err)
	}
	if c := serve.storeConfig(0, nil, nil); c.CompactGrace != store.NoGrace {
		t.Errorf("--compactor.grace=0s: store config has grace %v, want store.NoGrace", c.CompactGrace)
	}
}

// TestImportGrace imports a series with samples in an hour long closed and
// in one that ended between 30 and 90 minutes ago: closed for the default
// grace (both hours go in chunk cells), open for --compactor.grace=2h (that
// hour goes in raw cells, for the compactors).
func TestImportGrace(t *testing.T) {
	const hour = int64(time.Hour / time.Millisecond)
	recent := time.Now().Add(-90*time.Minute).UnixMilli() / hour * hour
	db, err := tsdb.Open(t.TempDir(), slog.New(slog.DiscardHandler), nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	app := db.Appender(context.Background())
	for _, from := range []int64{recent - 5*hour, recent} {
		for i := range int64(240) {
			if _, err := app.Append(0, labels.FromStrings("__name__", "g"), from+i*15000, float64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	blocks := t.TempDir()
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Snapshot(blocks, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "written: 480 samples in chunk cells, 0 in raw cells"},
		{[]string{"--compactor.grace=2h"}, "written: 240 samples in chunk cells, 240 in raw cells"},
	} {
		args := append([]string{"import", "--storage.path=" + t.TempDir(), "--verify"}, c.flags...)
		out, code := runAdapter(t, append(args, "prometheus", blocks)...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, want %q\n%s", c.flags, code, c.want, out)
		}
	}
}
