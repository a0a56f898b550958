package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A step of TestPrometheusRoundTrip takes one to three minutes; its own
// waits give up within ten. A step still running past its budget is stuck,
// and the package's timeout would otherwise end the whole run with
// nothing but the test binary's own stacks (seen in CI, 2026-11-27: thirty
// minutes, and the adapters left running).
const (
	maxStepBudget = 12 * time.Minute
	// timeoutMargin is kept before the package's -timeout for the steps
	// after a stuck one to be skipped and the cleanups to run.
	timeoutMargin = 2 * time.Minute
)

// stepBudget is maxStepBudget, less what would run past the package's
// -timeout.
func stepBudget(t *testing.T) time.Duration {
	budget := maxStepBudget
	if d, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(d)-timeoutMargin)
	}
	return max(budget, time.Minute)
}

// logGoroutines logs the goroutines of the adapters that run the project's
// code, of Prometheus B that run its remote-storage code, and of Prometheus
// A that run its TSDB (where its remote-write receiver appends: the one hang
// seen, 2026-11-27, was A's appenders waiting on a series lock), from their
// /debug/pprof endpoints, so that a stuck step shows where it is stuck. The
// whole dumps go to a file outside the test's temporary directory, which a
// later look at the machine still finds.
func (s *suite) logGoroutines(t *testing.T) {
	servers := []struct{ name, url, keep string }{
		{"adapter1", s.adapterURLs[0], "prom-hbase/prom-hbase/"},
		{"adapter2", s.adapterURLs[1], "prom-hbase/prom-hbase/"},
		{"prometheus-A", s.a.base, "prometheus/prometheus/tsdb"},
		{"prometheus-B", s.b.base, "storage/remote"},
	}
	var all strings.Builder
	for _, srv := range servers {
		dump, err := goroutineDump(srv.url)
		if err != nil {
			t.Logf("goroutines of %s: %v", srv.name, err)
			continue
		}
		fmt.Fprintf(&all, "=== goroutines of %s (%s)\n%s\n", srv.name, srv.url, dump)
		t.Logf("goroutines of %s in %s:\n%s", srv.name, srv.keep, keepGoroutines(dump, srv.keep, 400))
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("prom-hbase-e2e-stuck-%s.txt", time.Now().UTC().Format("20060102T150405")))
	if err := os.WriteFile(path, []byte(all.String()), 0o644); err != nil {
		t.Logf("keep the goroutine dumps: %v", err)
		return
	}
	t.Logf("every goroutine of the four servers: %s", path)
}

// goroutineDump fetches every goroutine's stack (debug=2: the form of a
// panic's dump).
func goroutineDump(base string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/goroutine?debug=2", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return string(b), err
}

// keepGoroutines keeps the goroutines of dump whose stack mentions keep,
// at most maxLines lines in all.
func keepGoroutines(dump, keep string, maxLines int) string {
	var out []string
	kept, skipped := 0, 0
	for _, g := range strings.Split(strings.TrimSpace(dump), "\n\n") {
		if !strings.Contains(g, keep) {
			skipped++
			continue
		}
		lines := strings.Split(g, "\n")
		if len(out)+len(lines) > maxLines {
			skipped++
			continue
		}
		out = append(out, lines...)
		out = append(out, "")
		kept++
	}
	out = append(out, fmt.Sprintf("(%d goroutines shown, %d left out)", kept, skipped))
	return strings.Join(out, "\n")
}
