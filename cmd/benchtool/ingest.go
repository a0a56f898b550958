package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// pidFlag collects -pid name=PID flags: processes whose CPU time a
// measurement reports.
type pidFlag []namedPID

type namedPID struct {
	name string
	pid  int
}

func (p *pidFlag) String() string { return fmt.Sprint(*p) }

func (p *pidFlag) Set(s string) error {
	name, v, ok := strings.Cut(s, "=")
	pid, err := strconv.Atoi(v)
	if !ok || err != nil {
		return fmt.Errorf("want name=PID, got %q", s)
	}
	*p = append(*p, namedPID{name, pid})
	return nil
}

// cpuSeconds is a process's user+system CPU time so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from the
	// last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return (u + s) / 100, nil
}

// cpuMeter measures the CPU time of some processes between start and stop.
type cpuMeter struct {
	pids   pidFlag
	before []float64
}

func (m *cpuMeter) start() error {
	m.before = m.before[:0]
	for _, p := range m.pids {
		c, err := cpuSeconds(p.pid)
		if err != nil {
			return err
		}
		m.before = append(m.before, c)
	}
	return nil
}

// stop returns each process's CPU-seconds since start, by name, and their
// sum under "total".
func (m *cpuMeter) stop() (map[string]float64, error) {
	out := map[string]float64{}
	for i, p := range m.pids {
		c, err := cpuSeconds(p.pid)
		if err != nil {
			return nil, err
		}
		out[p.name] = c - m.before[i]
		out["total"] += c - m.before[i]
	}
	return out, nil
}

func formatCPU(cpu map[string]float64, per float64, unit string) string {
	var b strings.Builder
	for _, k := range sortedKeys(cpu) {
		fmt.Fprintf(&b, " cpu_s_%s=%.2f cpu_s_%s_per_%s=%.3f", k, cpu[k], k, unit, cpu[k]/per)
	}
	return b.String()
}

// runIngest writes a load into one target until it is durable: for the
// adapter and Prometheus every answered request is durable; OpenTSDB answers
// /api/put before HBase has acknowledged, so its clock stops when its HBase
// client has no RPC pending or in flight.
func runIngest(args []string) error {
	fs := flag.NewFlagSet("ingest", flag.ExitOnError)
	var d dataFlags
	d.register(fs)
	var m cpuMeter
	fs.Var(&m.pids, "pid", "name=PID of a process whose CPU time to report (repeatable)")
	tgt := fs.String("target", "", "adapter=URL | prometheus=URL | opentsdb=URL")
	rw2 := fs.Bool("rw2", false, "send remote write 2.0 (io.prometheus.write.v2.Request) to an adapter or Prometheus, not 1.0")
	settleTables := fs.String("settle", "", "after the clock stops, wait until no region of these HBase tables (comma-separated) compacts and the process named hbase idles, and report the CPU spent until then")
	sc := settleConfig{quiet: 3, idleCPU: 0.1, poll: time.Second}
	fs.StringVar(&sc.zk, "zk", os.Getenv("PROMHBASE_TEST_ZK"), "ZooKeeper quorum of the HBase (with -settle)")
	fs.DurationVar(&sc.timeout, "settle-timeout", 10*time.Minute, "longest wait of -settle")
	_ = fs.Parse(args)
	t, err := parseTarget(*tgt)
	if err != nil {
		return err
	}
	if *rw2 && t.kind == "opentsdb" {
		return errors.New("-rw2 is for an adapter or Prometheus")
	}
	t.rw2 = *rw2
	if d.start == 0 {
		return errors.New("-start is required")
	}
	set := seriesSet(d.run, d.series, d.metrics)
	shards, total, err := d.shards(set, t.encoder())
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := m.start(); err != nil {
		return err
	}
	begin := time.Now()
	answered, err := sendShards(ctx, newHTTPClient(d.conc, 10*time.Minute), shards)
	if err != nil {
		return fmt.Errorf("%s: %w", t.kind, err)
	}
	if t.kind == "opentsdb" {
		if err := waitOpenTSDBIdle(ctx, t.url, 10*time.Minute); err != nil {
			return err
		}
	}
	elapsed := time.Since(begin)
	cpu, err := m.stop()
	if err != nil {
		return err
	}
	after := ""
	if *settleTables != "" {
		sc.tables = strings.Split(*settleTables, ",")
		s, err := settleHBase(ctx, sc, &m)
		if err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		after = formatSettled(s, float64(total)/1e6, "million")
	}
	fmt.Printf("target=%s samples=%d series=%d strings=%d samples_per_request=%d concurrency=%d answered=%.3fs elapsed=%.3fs samples_per_sec=%.0f%s%s\n",
		t.kind, total, d.series, distinctStrings(set), d.perRequest, d.conc, answered.Seconds(), elapsed.Seconds(), float64(total)/elapsed.Seconds(),
		formatCPU(cpu, float64(total)/1e6, "million"), after)
	return nil
}

// waitOpenTSDBIdle polls /api/stats/region_clients until no region client
// of the TSD has an RPC queued, batched or in flight on two polls in a row:
// then every point it accepted is acknowledged by HBase.
func waitOpenTSDBIdle(ctx context.Context, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	idle := 0
	for {
		busy, err := openTSDBBusyRPCs(ctx, client, base)
		if err != nil {
			return err
		}
		if busy == 0 {
			idle++
			if idle == 2 {
				return nil
			}
		} else {
			idle = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("OpenTSDB still has %d HBase RPCs pending: %w", busy, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func openTSDBBusyRPCs(ctx context.Context, client *http.Client, base string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/stats/region_clients", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("OpenTSDB stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("OpenTSDB stats: HTTP %d", resp.StatusCode)
	}
	var clients []struct {
		RPCsInFlight       int64 `json:"rpcsInFlight"`
		PendingRPCs        int64 `json:"pendingRPCs"`
		PendingBatchedRPCs int64 `json:"pendingBatchedRPCs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&clients); err != nil {
		return 0, fmt.Errorf("OpenTSDB stats: %w", err)
	}
	var busy int64
	for _, c := range clients {
		busy += c.RPCsInFlight + c.PendingRPCs + c.PendingBatchedRPCs
	}
	return busy, nil
}
