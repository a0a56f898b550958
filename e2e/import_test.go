package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
)

// TestImportSnapshot is issue 15's end-to-end check. Prometheus A starts
// on a data directory that already holds three days of history as TSDB
// blocks (floats and native histograms, one block overlapping others as
// out-of-order ingestion leaves them), scrapes the targets for a while, has
// a series range deleted (tombstones), and is asked for a snapshot. The
// adapter's import command brings the snapshot into fresh tables; an
// adapter serves them to Prometheus B, and every question asked of A must
// get the same answer from B. Then an import into other tables is killed
// (SIGKILL) in the middle and run again: same answers.
func TestImportSnapshot(t *testing.T) {
	s := newSuite(t)
	s.target = startTarget(t)
	s.histTarget = startHistTarget(t)
	s.hist = makeHistory(time.Now())
	s.native = makeNativeHistory(s.hist)
	blocks := writeHistoryBlocks(t, filepath.Join(s.dir, "prometheus-A", "data"), s.hist, s.native)
	t.Logf("history: %d blocks, %d float series, %d native-histogram series", blocks, len(s.hist.series), len(s.native.series))

	port := freePort(t)
	s.a = promAPI{name: "A", base: "http://127.0.0.1:" + itoa(port)}
	s.startPrometheus("prometheus-A", port, importConfigA(s), "--web.enable-admin-api")
	s.scrapeStart = time.Now()
	s.deleteSeries(`e2e_history_gauge{series="1"}`, s.hist.start.Add(10*time.Hour), s.hist.start.Add(13*time.Hour))
	time.Sleep(time.Until(s.scrapeStart.Add(20 * time.Second)))
	at, snap := s.snapshot()
	qs := importQueries(s, at)

	// Units in parallel: the head's block and the block before it may
	// share an hour.
	prefix := s.prefix + "once_"
	out := s.runImport(prefix, snap, "--verify", "--workers=4")
	t.Logf("import:\n%s", out)
	checkWritten(t, out)
	s.compareWith(s.serveTables("1", prefix), "import", qs, at)

	// Killed once its first unit is done and the next begun: the rerun
	// skips what is done and verifies everything.
	prefix = s.prefix + "killed_"
	batches, first := pauseAfter(t, snap)
	s.killImport(prefix, snap, batches)
	out = s.runImport(prefix, snap, "--verify", "--workers=4")
	t.Logf("import after SIGKILL:\n%s", out)
	checkWritten(t, out)
	if m := regexp.MustCompile(`\((\d+) done before`).FindStringSubmatch(out); m == nil || first && m[1] == "0" {
		t.Errorf("the rerun after the kill did not skip the unit done before it")
	}
	s.compareWith(s.serveTables("2", prefix), "import-killed", qs, at)
	t.Logf("report:\n%s", s.report())
}

// importConfigA scrapes both targets and A itself, as the main suite's A
// does, and writes nowhere.
func importConfigA(s *suite) string {
	return `global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: e2e-target
    static_configs:
      - targets: ["` + s.target.addr + `"]` +
		histScrapeConfigs(s.histTarget.addr, strings.TrimPrefix(s.a.base, "http://"))
}

// deleteSeries deletes a range of series in A (admin API): tombstones in
// the blocks, which the snapshot keeps and the import must honour.
func (s *suite) deleteSeries(match string, start, end time.Time) {
	_, err := s.a.postAdmin(s.ctx, "/api/v1/admin/tsdb/delete_series",
		url.Values{"match[]": {match}, "start": {apiTime(start)}, "end": {apiTime(end)}})
	if err != nil {
		s.t.Fatal(err)
	}
}

// snapshot asks A for a snapshot with its head and returns its directory
// and a query time before it whose every sample is in it.
func (s *suite) snapshot() (time.Time, string) {
	at := time.Now().Add(-2 * time.Second).Truncate(time.Second)
	raw, err := s.a.postAdmin(s.ctx, "/api/v1/admin/tsdb/snapshot", nil)
	if err != nil {
		s.t.Fatal(err)
	}
	var d struct{ Name string }
	if err := json.Unmarshal(raw, &d); err != nil || d.Name == "" {
		s.t.Fatalf("snapshot answer %s: %v", raw, err)
	}
	return at, filepath.Join(s.dir, "prometheus-A", "data", "snapshots", d.Name)
}

// postAdmin posts to an admin endpoint and returns the data of its JSON
// answer (none for a 204).
func (p promAPI) postAdmin(ctx context.Context, path string, params url.Values) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.name, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode == http.StatusNoContent {
		return nil, err
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("%s %s: %s: %.300s", p.name, path, resp.Status, body)
	}
	return r.Data, nil
}

// runImport imports the snapshot into tables of the prefix and returns the
// command's output; it must succeed.
func (s *suite) runImport(prefix, snap string, extra ...string) string {
	s.t.Helper()
	out, err := exec.CommandContext(s.ctx, s.adapterBin, s.importArgs(prefix, snap, extra...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("adapter import: %v\n%s", err, out)
	}
	return string(out)
}

// checkWritten reads how the store wrote an import's samples: every
// sample imported is accounted for, and closed hours (all but the last of
// three days) went in as chunk cells.
func checkWritten(t *testing.T, out string) {
	t.Helper()
	imp := regexp.MustCompile(`(?m)^imported .*: \d+ series, (\d+) samples`).FindStringSubmatch(out)
	w := regexp.MustCompile(`(?m)^written: (\d+) samples in chunk cells, (\d+) in raw cells .*, (\d+) stored already, (\d+) past the retention$`).FindStringSubmatch(out)
	if imp == nil || w == nil {
		t.Errorf("no summary of the samples imported and written")
		return
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	chunked, raw, same, expired := n(w[1]), n(w[2]), n(w[3]), n(w[4])
	if chunked+raw+same+expired != n(imp[1]) || chunked <= raw {
		t.Errorf("%d samples imported; written %d chunked, %d raw, %d stored already, %d expired: want them all, most chunked",
			n(imp[1]), chunked, raw, same, expired)
	}
}

func (s *suite) importArgs(prefix, snap string, extra ...string) []string {
	args := []string{"import",
		"--hbase.zookeeper-quorum=" + s.zk,
		"--hbase.zookeeper-root=" + hbasetest.ZKRoot(),
		"--hbase.table-prefix=" + prefix,
		"--salt.buckets=4",
		"--batch-samples=" + strconv.Itoa(importBatch),
		"--progress=log",
	}
	return append(append(args, extra...), "prometheus", snap)
}

// importBatch is the import's batch size here: small, so that a unit takes
// several writes and a kill can fall inside one.
const importBatch = 2000

// killImport starts an import that stops writing after the given number
// of batches, and kills it with SIGKILL once it says so.
func (s *suite) killImport(prefix, snap string, batches int) {
	t := s.t
	logPath := filepath.Join(s.dir, "import-killed.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(s.adapterBin, s.importArgs(prefix, snap, "--workers=1", "--testing.pause-after-batches="+itoa(batches))...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(readFile(logPath), "TESTING: import paused") {
		select {
		case err := <-exited:
			t.Fatalf("the import ended (%v) before it paused:\n%s", err, readFile(logPath))
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the import did not pause:\n%s", readFile(logPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	<-exited
	s.faults = append(s.faults, fmt.Sprintf("import SIGKILLed after %d batches", batches))
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// pauseAfter picks when to stop the import to be killed: once the oldest
// unit is written and the next one begun, when the oldest unit holds less
// than half the samples (first); else in the middle of the oldest unit.
// With one worker, units go oldest first, and a batch holds at least
// importBatch less one series-hour (60 samples here).
func pauseAfter(t *testing.T, snap string) (batches int, first bool) {
	type meta struct {
		MinTime int64 `json:"minTime"`
		MaxTime int64 `json:"maxTime"`
		Stats   struct {
			NumSamples int64 `json:"numSamples"`
		} `json:"stats"`
	}
	entries, err := os.ReadDir(snap)
	if err != nil {
		t.Fatal(err)
	}
	var metas []meta
	var total int64
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(snap, e.Name(), "meta.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var m meta
		if err != nil || json.Unmarshal(raw, &m) != nil {
			t.Fatalf("block %s: %v", e.Name(), err)
		}
		metas = append(metas, m)
		total += m.Stats.NumSamples
	}
	// The oldest unit: the oldest block and every block overlapping it.
	oldest := metas[0]
	for _, m := range metas {
		if m.MinTime < oldest.MinTime {
			oldest = m
		}
	}
	var unit int64
	for _, m := range metas {
		if m.MinTime < oldest.MaxTime && m.MaxTime > oldest.MinTime {
			unit += m.Stats.NumSamples
		}
	}
	perBatch := int64(importBatch - 60)
	n := int((unit + perBatch - 1) / perBatch)
	if unit < total/2 {
		return n + 1, true
	}
	return max(1, n/2), false
}

// serveTables starts an adapter on the tables of the prefix and a
// Prometheus that reads only through it.
func (s *suite) serveTables(name, prefix string) promAPI {
	t := s.t
	adapterURL := "http://127.0.0.1:" + itoa(freePort(t))
	args := append([]string{
		"--web.listen-address=" + strings.TrimPrefix(adapterURL, "http://"),
		"--hbase.zookeeper-quorum=" + s.zk,
		"--hbase.zookeeper-root=" + hbasetest.ZKRoot(),
		"--hbase.table-prefix=" + prefix,
		"--salt.buckets=4",
	}, compactorArgs...)
	startProcess(t, s.dir, "adapter-import"+name, s.adapterBin, args...).waitReady(t, adapterURL+"/-/ready", 2*time.Minute)
	port := freePort(t)
	b := promAPI{name: "B" + name, base: "http://127.0.0.1:" + itoa(port)}
	s.startPrometheus("prometheus-B"+name, port, `global:
  evaluation_interval: 1m
remote_read:
  - url: `+adapterURL+`/api/v1/read
    read_recent: true
    remote_timeout: 1m
`)
	return b
}

// importQueries are the main suite's questions over the history, the
// scraped window and the native histograms, and a few about the
// overlapping block and the deleted range.
func importQueries(s *suite, at time.Time) []query {
	qs := liveQueries(s.scrapeStart, at)
	qs = append(qs, historyQueries(s.hist)...)
	qs = append(qs, nativeQueries(s.scrapeStart, at, s.native)...)
	ooo := s.hist.start.Add(7 * time.Hour)
	return append(qs,
		query{expr: `e2e_import_ooo[3h]`, end: ooo},
		query{expr: `count_over_time(e2e_history_requests_total[3h])`, end: ooo},
		query{expr: `e2e_history_requests_total{series="0"}[3h]`, end: ooo},
		query{expr: `e2e_history_gauge{series=~"1|2"}[6h]`, end: s.hist.start.Add(14 * time.Hour)},
		query{expr: `count_over_time(e2e_history_gauge[1d])`, end: s.hist.start.Add(20 * time.Hour)},
	)
}

// compareWith asks A and b every question and the series of every job;
// the answers must be equal.
func (s *suite) compareWith(b promAPI, name string, qs []query, at time.Time) {
	start := time.Now()
	r := roundResult{name: name, queries: len(qs)}
	for _, q := range qs {
		s.compareQuery(b, &r, q)
	}
	for _, match := range []string{`{job="e2e-target"}`, `{job="e2e-histograms"}`, `{origin="direct"}`, `{__name__="e2e_import_ooo"}`} {
		s.compareSeries(b, &r, match, at)
	}
	r.elapsed = time.Since(start)
	s.rounds = append(s.rounds, r)
	s.t.Logf("%s: %d/%d queries equal (%d non-empty), %d samples compared, %d series listed, %v",
		name, r.equal, r.queries, r.nonEmpty, r.samples, r.series, r.elapsed.Round(time.Millisecond))
}
