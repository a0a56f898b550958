// Package tsdtest runs a real OpenTSDB 2.4.1 (scripts/opentsdb.sh) on the
// test HBase for the OpenTSDB source's tests: start with extra
// configuration, stop (SIGTERM: its compaction queue is flushed) or kill
// (SIGKILL: rows stay as written), /api/put acknowledged by HBase,
// annotations, /api/query with every point of every series, and waiting
// until the writes a query makes (it compacts the rows it reads) are done.
//
// It owns nothing but test plumbing; it must not know the source.
package tsdtest

import (
	"bytes"
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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
)

// Tables are OpenTSDB's tables under a prefix, as scripts/opentsdb.sh
// names them.
func Tables(prefix string) []string {
	return []string{prefix + "tsdb", prefix + "tsdb-uid", prefix + "tsdb-tree", prefix + "tsdb-meta"}
}

// RepoRoot is the directory holding go.mod, found upwards from the working
// directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Require resolves OpenTSDB's jars (from Maven Central, once, into the
// cache scripts/opentsdb.sh uses). When that fails the test fails under
// CI=true, where nothing may be skipped, and is skipped otherwise.
func Require(t testing.TB) {
	t.Helper()
	cmd := exec.Command(filepath.Join(RepoRoot(t), "scripts", "opentsdb.sh"), "classpath")
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("OpenTSDB 2.4.1's jars could not be resolved (scripts/opentsdb.sh classpath needs java, mvn and Maven Central): %v\n%.2000s", err, out)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Config says where a TSD runs: its run directory and table prefix must be
// the caller's own.
type Config struct {
	ZK, RunDir, Prefix string
	// Extra are configuration lines added to the script's (such as
	// "tsd.storage.enable_appends = true"); later lines win.
	Extra []string
	// Owner is the test at whose end a TSD still running is stopped (nil:
	// the test given to Start). A subtest that starts a TSD for its parent
	// names the parent.
	Owner testing.TB
}

// flushInterval has the TSD's HBase client send its buffered writes every
// 50 ms rather than every second: a synchronous put waits for them.
const flushInterval = "tsd.storage.flush_interval = 50"

// TSD is one running OpenTSDB.
type TSD struct {
	URL string
	PID int
	cfg Config
	env []string
}

// Start starts a TSD with scripts/opentsdb.sh (creating its tables when
// missing) and waits until it answers.
func Start(t testing.TB, cfg Config) *TSD {
	t.Helper()
	repo := RepoRoot(t)
	bench := filepath.Join(cfg.RunDir, "benchtool")
	if _, err := os.Stat(bench); err != nil {
		build := exec.Command("go", "build", "-o", bench, "./cmd/benchtool")
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building benchtool (the script's table creator): %v\n%s", err, out)
		}
	}
	d := &TSD{cfg: cfg, env: append(os.Environ(),
		"PROMHBASE_TEST_ZK="+cfg.ZK, "OPENTSDB_RUN_DIR="+cfg.RunDir, "OPENTSDB_HEAP=512m",
		"OPENTSDB_TABLE_PREFIX="+cfg.Prefix, "BENCHTOOL="+bench,
		"OPENTSDB_CONF_EXTRA="+strings.Join(append([]string{flushInterval}, cfg.Extra...), "\n"))}
	d.script(t, "start")
	raw, err := os.ReadFile(filepath.Join(cfg.RunDir, "opentsdb.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "OPENTSDB_URL":
			d.URL = v
		case "OPENTSDB_PID":
			d.PID, _ = strconv.Atoi(v)
		}
	}
	if d.URL == "" || d.PID == 0 {
		t.Fatalf("opentsdb.env without URL or PID: %q", raw)
	}
	// A test that fails before its Stop must not leave the JVM running.
	owner := cfg.Owner
	if owner == nil {
		owner = t
	}
	owner.Cleanup(d.stopProcess)
	return d
}

// stopProcess ends the TSD's JVM if it still runs, by its pid: the run
// directory (a test's temporary one) may be gone by then.
func (d *TSD) stopProcess() {
	alive := func() bool {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d.PID))
		return err == nil && bytes.Contains(cmdline, []byte("TSDMain"))
	}
	if !alive() {
		return
	}
	_ = syscall.Kill(d.PID, syscall.SIGTERM)
	for range 300 {
		if !alive() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(d.PID, syscall.SIGKILL)
}

func (d *TSD) script(t testing.TB, arg string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(RepoRoot(t), "scripts", "opentsdb.sh"), arg)
	cmd.Env = d.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("opentsdb.sh %s: %v\n%s", arg, err, out)
	}
}

// Stop sends SIGTERM and waits: the TSD compacts the rows in its
// compaction queue before it exits.
func (d *TSD) Stop(t testing.TB) {
	t.Helper()
	d.script(t, "stop")
	d.stopProcess() // the script finds nothing once its run directory is gone
}

// Kill sends SIGKILL and waits until the process is gone: rows written
// stay uncompacted.
func (d *TSD) Kill(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(d.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	for range 600 {
		if syscall.Kill(d.PID, 0) != nil {
			d.script(t, "stop") // forgets the pid file
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("TSD pid %d still alive after SIGKILL", d.PID)
}

// Log is the end of the TSD's log, for failure messages.
func (d *TSD) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.cfg.RunDir, "logs", "tsd.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Point is one data point of /api/put. Value is written into the JSON as
// is: "42" is stored as an integer, "0.5" as a 4-byte float, "0.1" as an
// 8-byte float. Timestamp has 10 digits for seconds, 13 for milliseconds.
type Point struct {
	Metric    string            `json:"metric"`
	Timestamp int64             `json:"timestamp"`
	Value     json.RawMessage   `json:"value"`
	Tags      map[string]string `json:"tags"`
}

// Put writes points with /api/put?sync and checks that HBase took every
// one: OpenTSDB answers a request once each of its points is written (or
// failed), however long HBase makes it wait, as when a new table's region
// is still opening. Requests of 5,000 points go 4 at a time.
func (d *TSD) Put(t testing.TB, pts []Point) {
	t.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		slots    = make(chan struct{}, 4)
	)
	for len(pts) > 0 {
		n := min(len(pts), 5000)
		chunk := pts[:n]
		pts = pts[n:]
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := d.put(chunk); err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("/api/put: %s\nTSD log:\n%s", strings.Join(failures, "\n"), d.Log())
	}
}

func (d *TSD) put(pts []Point) error {
	body, err := json.Marshal(pts)
	if err != nil {
		return err
	}
	resp, err := http.Post(d.URL+"/api/put?details&sync&sync_timeout=120000", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var sum struct{ Failed, Success int }
	if resp.StatusCode/100 != 2 || json.Unmarshal(answer, &sum) != nil || sum.Failed > 0 || sum.Success != len(pts) {
		return fmt.Errorf("HTTP %d: %.2000s", resp.StatusCode, answer)
	}
	return nil
}

// Annotate stores an annotation of the series of tsuid at ts (seconds):
// OpenTSDB keeps it as a column of the series' data row.
func (d *TSD) Annotate(t testing.TB, tsuid string, ts int64, text string) {
	t.Helper()
	d.post(t, "/api/annotation", map[string]any{"tsuid": tsuid, "startTime": ts, "description": text}, nil)
}

func (d *TSD) post(t testing.TB, path string, body, into any) []byte {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(d.URL+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: HTTP %d: %.2000s\nTSD log:\n%s", path, resp.StatusCode, answer, d.Log())
	}
	if into != nil {
		if err := json.Unmarshal(answer, into); err != nil {
			t.Fatalf("POST %s: %v: %.2000s", path, err, answer)
		}
	}
	return answer
}

// WaitIdle waits until the TSD's HBase client has no RPC queued, batched
// or in flight on two polls in a row: after a query, the compacted columns
// it writes back and the deletes of the cells they replace are done.
func (d *TSD) WaitIdle(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for idle := 0; idle < 2; {
		busy, err := d.busyRPCs(ctx)
		if err != nil {
			t.Fatalf("%v\nTSD log:\n%s", err, d.Log())
		}
		idle++
		if busy > 0 {
			idle = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *TSD) busyRPCs(ctx context.Context) (int64, error) {
	var clients []struct {
		RPCsInFlight       int64 `json:"rpcsInFlight"`
		PendingRPCs        int64 `json:"pendingRPCs"`
		PendingBatchedRPCs int64 `json:"pendingBatchedRPCs"`
	}
	if err := d.get(ctx, "/api/stats/region_clients", &clients); err != nil {
		return 0, err
	}
	var busy int64
	for _, c := range clients {
		busy += c.RPCsInFlight + c.PendingRPCs + c.PendingBatchedRPCs
	}
	return busy, nil
}

func (d *TSD) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %.500s", path, resp.StatusCode, body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// Series is one series of /api/query: its tags, TSUID, and points (ms,
// value as OpenTSDB printed it).
type Series struct {
	Metric string
	Tags   map[string]string
	TSUID  string
	Points [][2]json.Number
}

// Query returns every point of every series of metric from start to end
// (milliseconds): aggregator none (each series on its own, nothing
// interpolated), millisecond timestamps.
func (d *TSD) Query(t testing.TB, metric string, start, end int64) []Series {
	t.Helper()
	q := url.Values{"start": {strconv.FormatInt(start, 10)}, "end": {strconv.FormatInt(end, 10)},
		"m": {"none:" + metric}, "ms": {"true"}, "arrays": {"true"}, "show_tsuids": {"true"}}
	var out []struct {
		Metric string            `json:"metric"`
		Tags   map[string]string `json:"tags"`
		TSUIDs []string          `json:"tsuids"`
		DPs    [][2]json.Number  `json:"dps"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.get(ctx, "/api/query?"+q.Encode(), &out); err != nil {
		t.Fatalf("%v\nTSD log:\n%s", err, d.Log())
	}
	series := make([]Series, len(out))
	for i, s := range out {
		series[i] = Series{Metric: s.Metric, Tags: s.Tags, Points: s.DPs}
		if len(s.TSUIDs) == 1 {
			series[i].TSUID = s.TSUIDs[0]
		}
	}
	return series
}

// DropTables disables and deletes a prefix's tables, those that exist.
func DropTables(ctx context.Context, c *hbase.Client, prefix string) error {
	var errs []error
	for _, tb := range Tables(prefix) {
		ok, err := c.TableExists(ctx, tb)
		if err != nil || !ok {
			errs = append(errs, err)
			continue
		}
		if err := c.DisableTable(ctx, tb); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, c.DeleteTable(ctx, tb))
	}
	return errors.Join(errs...)
}
