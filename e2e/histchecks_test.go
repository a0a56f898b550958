package e2e

import "github.com/prom-hbase/prom-hbase/internal/scrape"

// checkNative is the part of a round that PromQL cannot see: the
// native-histogram history read back from the adapter as the SAMPLES
// answer carries it (reset hints and integer or float kind included), and
// A's remote-write queues having sent histograms with none failed (a 4xx
// from the adapter, or a 2.0 answer counting fewer histograms written than
// sent, would show there).
func (s *suite) checkNative(round string) {
	t := s.t
	if d := s.native.checkStored(s.ctx, s.adapterURLs[1]+"/api/v1/read"); d != "" {
		t.Errorf("round %s: native-histogram history read back (SAMPLES) differs from what was written:\n%s", round, d)
	}
	m, err := scrape.Get(s.ctx, s.a.base+"/metrics")
	if err != nil {
		t.Fatalf("metrics of A: %v", err)
	}
	for _, q := range []string{"rw1", "rw2"} {
		sent := m.Sum("prometheus_remote_storage_histograms_total", "remote_name", q)
		failed := m.Sum("prometheus_remote_storage_histograms_failed_total", "remote_name", q)
		if sent <= 0 || failed != 0 {
			t.Errorf("round %s: A's queue %s sent %.0f histograms, %.0f of them failed; want some sent and none failed", round, q, sent, failed)
		}
	}
}
