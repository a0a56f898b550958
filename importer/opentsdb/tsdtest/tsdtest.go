// Package tsdtest runs a real OpenTSDB 2.4.1 (scripts/opentsdb.sh) on the
// test HBase for the OpenTSDB source's tests: start, stop (SIGTERM: its
// compaction queue is flushed) or kill (SIGKILL: rows stay as written),
// /api/put, waiting until HBase has every point, and /api/query with
// every point of every series.
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

// TSD is one running OpenTSDB.
type TSD struct {
	URL    string
	PID    int
	repo   string
	env    []string
	runDir string
	own    *exec.Cmd     // the JVM, when started here rather than by the script
	exited chan struct{} // closed when own has exited
}

// Config says where a TSD runs: its run directory and table prefix must be
// the caller's own.
type Config struct {
	ZK, RunDir, Prefix string
	// Extra are configuration lines added to the script's (such as
	// "tsd.storage.enable_appends = true"). The script has no way to take
	// them: the TSD is started by the script once, for its tables and
	// configuration, then again here with them.
	Extra []string
}

// RepoRoot is the directory holding go.mod, found upwards from the working
// directory.
func RepoRoot(t testing.TB) string {
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
	d := &TSD{repo: repo, runDir: cfg.RunDir, env: append(os.Environ(),
		"PROMHBASE_TEST_ZK="+cfg.ZK, "OPENTSDB_RUN_DIR="+cfg.RunDir,
		"OPENTSDB_TABLE_PREFIX="+cfg.Prefix, "BENCHTOOL="+bench)}
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
	if len(cfg.Extra) > 0 {
		d.Stop(t)
		d.startOwn(t, cfg.Extra)
	}
	return d
}

// startOwn starts TSDMain as the script does, on the script's
// configuration with extra lines added.
func (d *TSD) startOwn(t testing.TB, extra []string) {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(d.runDir, "opentsdb.conf"))
	if err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(d.runDir, "opentsdb-extra.conf")
	conf = append(conf, []byte(strings.Join(extra, "\n")+"\n")...)
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	cp := exec.Command(filepath.Join(d.repo, "scripts", "opentsdb.sh"), "classpath")
	cp.Env = d.env
	classpath, err := cp.Output()
	if err != nil {
		t.Fatalf("opentsdb.sh classpath: %v", err)
	}
	logFile, err := os.Create(filepath.Join(d.runDir, "logs", "stdout-extra.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command("java", "-Xms256m", "-Xmx1g", "-XX:+UseG1GC",
		"-Dlogback.configurationFile="+filepath.Join(d.runDir, "logback.xml"),
		"-cp", strings.TrimSpace(string(classpath)), "net.opentsdb.tools.TSDMain", "--config="+confPath)
	cmd.Dir, cmd.Stdout, cmd.Stderr = d.runDir, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.own, d.PID, d.exited = cmd, cmd.Process.Pid, make(chan struct{})
	go func() { _ = cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(d.URL + "/api/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-d.exited:
			t.Fatalf("TSD exited at start:\n%s", d.Log())
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Kill(t)
			t.Fatalf("TSD not up after 2 minutes:\n%s", d.Log())
		}
	}
}

// signal sends sig to a TSD started here and waits until it exits.
func (d *TSD) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := d.own.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(2 * time.Minute):
		_ = d.own.Process.Kill()
		t.Fatalf("TSD pid %d still running 2 minutes after %v", d.PID, sig)
	}
}

func (d *TSD) script(t testing.TB, arg string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(d.repo, "scripts", "opentsdb.sh"), arg)
	cmd.Env = d.env
	cmd.Dir = d.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("opentsdb.sh %s: %v\n%s", arg, err, out)
	}
}

// Stop sends SIGTERM and waits: the TSD compacts every row in its
// compaction queue before it exits.
func (d *TSD) Stop(t testing.TB) {
	t.Helper()
	if d.own != nil {
		d.signal(t, syscall.SIGTERM)
		return
	}
	d.script(t, "stop")
}

// Kill sends SIGKILL and waits until the process is gone: rows written
// stay uncompacted.
func (d *TSD) Kill(t testing.TB) {
	t.Helper()
	if d.own != nil {
		d.signal(t, syscall.SIGKILL)
		return
	}
	if err := syscall.Kill(d.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	for range 600 {
		if syscall.Kill(d.PID, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("TSD pid %d still alive after SIGKILL", d.PID)
}

// Log is the TSD's log so far, for failure messages.
func (d *TSD) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.runDir, "logs", "tsd.log"))
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

// Put writes points with /api/put and checks that every one was accepted.
func (d *TSD) Put(t testing.TB, pts []Point) {
	t.Helper()
	for len(pts) > 0 {
		n := min(len(pts), 500)
		body, err := json.Marshal(pts[:n])
		if err != nil {
			t.Fatal(err)
		}
		pts = pts[n:]
		resp, err := http.Post(d.URL+"/api/put?details", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var sum struct{ Failed, Success int }
		if resp.StatusCode/100 != 2 || json.Unmarshal(answer, &sum) != nil || sum.Failed > 0 || sum.Success != n {
			t.Fatalf("/api/put: HTTP %d: %s", resp.StatusCode, answer)
		}
	}
}

// WaitIdle waits until the TSD's HBase client has no RPC queued, batched
// or in flight on two polls in a row: then HBase holds every point it
// accepted (OpenTSDB answers /api/put before HBase has them).
func (d *TSD) WaitIdle(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	idle := 0
	for idle < 2 {
		busy, err := d.busyRPCs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if busy == 0 {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(50 * time.Millisecond)
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

// Series is one series of /api/query: its tags and points (ms, value as
// OpenTSDB printed it).
type Series struct {
	Metric string
	Tags   map[string]string
	Points [][2]json.Number
}

// Query returns every point of every series of metric in [start, end]
// (seconds): aggregator none (each series on its own, nothing
// interpolated), millisecond timestamps.
func (d *TSD) Query(t testing.TB, metric string, start, end int64) []Series {
	t.Helper()
	q := url.Values{"start": {strconv.FormatInt(start, 10)}, "end": {strconv.FormatInt(end, 10)},
		"m": {"none:" + metric}, "ms": {"true"}, "arrays": {"true"}}
	var out []struct {
		Metric string            `json:"metric"`
		Tags   map[string]string `json:"tags"`
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
