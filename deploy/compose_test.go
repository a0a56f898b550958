package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The Compose tests run inside scripts/compose-test.sh, which starts the stack
// on a private Docker engine and tells them where it is through these
// variables (with COMPOSE_FILE, COMPOSE_PROJECT_NAME and DOCKER_HOST for the
// docker-compose commands they run themselves). Anywhere else they skip.
const (
	envPrometheusURL = "COMPOSE_TEST_PROMETHEUS_URL"
	envReaderURL     = "COMPOSE_TEST_READER_URL"
	envAdapterURL    = "COMPOSE_TEST_ADAPTER_URL"
)

func composeEnv(t *testing.T, gate string, names ...string) []string {
	t.Helper()
	if os.Getenv(gate) == "" {
		t.Skipf("run by scripts/compose-test.sh (make compose-test), which sets %s", gate)
	}
	vals := make([]string, len(names))
	for i, n := range names {
		if vals[i] = os.Getenv(n); vals[i] == "" {
			t.Fatalf("%s is set but %s is not", gate, n)
		}
	}
	return vals
}

// compose runs docker-compose in the repository root with the caller's
// environment (project, files and engine chosen by the script).
func compose(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker-compose", args...)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestComposeStack checks docker-compose.yml's stack end to end: targets up,
// Prometheus's remote write stored in the HBase container, read back by a
// Prometheus that holds no data of its own, and nothing lost when the adapter
// container is replaced by a new one.
func TestComposeStack(t *testing.T) {
	urls := composeEnv(t, "COMPOSE_TEST_STACK", envPrometheusURL, envReaderURL, envAdapterURL)
	prom, reader := urls[0], urls[1]

	waitTargetsUp(t, prom, map[string]int{"prometheus": 1, "adapter": 1, "node": 1})
	waitWritten(t, prom)

	// The samples are in HBase's files inside the hbase container's volume.
	tables := compose(t, "exec", "-T", "hbase", "ls", "/var/lib/hbase/hbase/data/default")
	for _, want := range []string{"prom-data", "prom-uid"} {
		if !strings.Contains(tables, want) {
			t.Fatalf("HBase's default namespace in the hbase container holds %q, want table %s", tables, want)
		}
	}

	// Everything Prometheus scraped in the last 10 minutes, as its own view
	// (local TSDB merged with remote read) and as the reader's (remote read
	// only). Equal counts: remote write caught up and remote read serves it.
	// t0 after every target's first scrape: Prometheus scrapes them at its
	// start within a second or two of each other, and a t0 before one of
	// them would find no sample of it (a flake seen once).
	var t0 time.Time
	eventually(t, time.Minute, "a sample of every target before t0", func(ctx context.Context) (bool, string) {
		t0 = time.Now().Add(-time.Second).Truncate(time.Second)
		v, ok, err := scalarOf(ctx, prom, `count(count_over_time(up[10m]))`, t0)
		return err == nil && ok && v == 3, fmt.Sprintf("%v series of up at %v (ok %v, err %v), want 3", v, t0, ok, err)
	})
	const before = `sum(count_over_time(up[10m]))`
	n0 := waitSameCount(t, prom, reader, before, t0)
	t.Logf("before the restart: %v samples of up in HBase, read back through the reader", n0)

	res, err := promQuery(context.Background(), reader, `up{job="adapter"}`, t0)
	if err != nil || len(res) != 1 || res[0].Value != 1 {
		t.Fatalf(`reader: up{job="adapter"} at %v = %v (err %v), want one series of value 1`, t0, res, err)
	}

	// A new adapter container: the adapter keeps nothing but caches.
	compose(t, "rm", "--stop", "--force", "adapter")
	compose(t, "up", "-d", "--no-deps", "adapter")
	restarted := time.Now()
	waitServiceHealthy(t, "adapter", 2*time.Minute)
	t.Logf("adapter container replaced and healthy after %v", time.Since(restarted).Round(time.Second))

	// Samples from before the restart are all still there ...
	eventually(t, time.Minute, "reader count before the restart", func(ctx context.Context) (bool, string) {
		v, ok, err := scalarOf(ctx, reader, before, t0)
		return err == nil && ok && v == n0, fmt.Sprintf("%v (ok %v, err %v), want %v", v, ok, err, n0)
	})
	// ... and those Prometheus sent while the adapter was away arrive too
	// (its remote write retries), up to 30s after the new adapter is healthy.
	time.Sleep(30 * time.Second)
	t1 := time.Now().Add(-time.Second).Truncate(time.Second)
	window := t1.Sub(t0) + 10*time.Minute
	across := fmt.Sprintf(`sum(count_over_time(up[%ds]))`, int(window.Seconds()))
	n1 := waitSameCount(t, prom, reader, across, t1)
	if n1 <= n0 {
		t.Fatalf("after the restart the reader sees %v samples, not more than the %v before it", n1, n0)
	}
	t.Logf("across the restart: %v samples, Prometheus's own view and the reader's agree", n1)

	v, ok, err := scalarOf(context.Background(), prom, `sum(prometheus_remote_storage_samples_failed_total)`, time.Time{})
	if err != nil || !ok || v != 0 {
		t.Fatalf("Prometheus remote write: samples failed (not retried) = %v (ok %v, err %v), want 0", v, ok, err)
	}
	retried, _, _ := scalarOf(context.Background(), prom, `sum(prometheus_remote_storage_samples_retried_total)`, time.Time{})
	t.Logf("Prometheus retried %v samples while the adapter was replaced; none failed", retried)
}

// TestComposeEmbedded checks docker-compose.embedded.yml: the adapter on its
// embedded store takes Prometheus's remote write and serves its reads.
func TestComposeEmbedded(t *testing.T) {
	urls := composeEnv(t, "COMPOSE_TEST_EMBEDDED", envPrometheusURL, envAdapterURL)
	prom := urls[0]
	waitTargetsUp(t, prom, map[string]int{"prometheus": 1, "adapter": 1})
	waitWritten(t, prom)
	eventually(t, 2*time.Minute, "remote read served", func(ctx context.Context) (bool, string) {
		v, ok, err := scalarOf(ctx, prom, `sum(increase(promhbase_remote_read_samples_total{job="adapter"}[5m]))`, time.Time{})
		return err == nil && ok && v > 0, fmt.Sprintf("samples read = %v (ok %v, err %v)", v, ok, err)
	})
}

// waitTargetsUp waits until Prometheus has scraped every job's targets
// successfully.
func waitTargetsUp(t *testing.T, prom string, want map[string]int) {
	t.Helper()
	eventually(t, 3*time.Minute, "all targets up", func(ctx context.Context) (bool, string) {
		res, err := promQuery(ctx, prom, `up`, time.Time{})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]int{}
		for _, s := range res {
			if s.Value == 1 {
				got[s.Labels["job"]]++
			}
		}
		for job, n := range want {
			if got[job] != n {
				return false, fmt.Sprintf("targets up by job %v, want %v", got, want)
			}
		}
		return true, ""
	})
}

// waitWritten waits until the adapter reports samples stored.
func waitWritten(t *testing.T, prom string) {
	t.Helper()
	eventually(t, 2*time.Minute, "remote write stored", func(ctx context.Context) (bool, string) {
		v, ok, err := scalarOf(ctx, prom, `sum(promhbase_remote_write_samples_written_total{job="adapter"})`, time.Time{})
		return err == nil && ok && v > 0, fmt.Sprintf("samples written = %v (ok %v, err %v)", v, ok, err)
	})
}

// waitSameCount waits until expr at t gives the same positive value in
// Prometheus and in the reader, and returns it.
func waitSameCount(t *testing.T, prom, reader, expr string, at time.Time) float64 {
	t.Helper()
	var n float64
	eventually(t, 3*time.Minute, "reader agrees with Prometheus on "+expr, func(ctx context.Context) (bool, string) {
		want, ok1, err1 := scalarOf(ctx, prom, expr, at)
		got, ok2, err2 := scalarOf(ctx, reader, expr, at)
		n = got
		return err1 == nil && err2 == nil && ok1 && ok2 && want > 0 && got == want,
			fmt.Sprintf("prometheus %v (err %v), reader %v (err %v)", want, err1, got, err2)
	})
	return n
}

// waitServiceHealthy waits for the Docker health check of a service's
// container.
func waitServiceHealthy(t *testing.T, service string, timeout time.Duration) {
	t.Helper()
	id := strings.TrimSpace(compose(t, "ps", "-q", service))
	eventually(t, timeout, service+" healthy", func(ctx context.Context) (bool, string) {
		out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Health.Status}}", id).CombinedOutput()
		state := strings.TrimSpace(string(out))
		return err == nil && state == "healthy", fmt.Sprintf("%s (err %v)", state, err)
	})
}
